#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 15's server-side scaling figure: requests per second arfd serves
with 1, 2 and 4 request workers ([server] workers), driven by
bench/scalebench.c (THREADS connections, requests only, no client
caches), for requests that share the filesystem lock (GETATTR, LOOKUP,
4 KiB READ), 4 KiB WRITEs (exclusive) and a mix of readers and writers.
One arfd per worker count, over tcp and shm, on this machine; each cell
is the best of --runs runs, with the server's CPU seconds per 1,000
requests.  Writes results/scale.{csv,md}.

    bench/scalebench.py --scalebench BIN --arfd BIN [--secs S] [--threads N]
                        [--runs N] [--out DIR] [--quick]
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
from arfproc import Arfd  # noqa: E402

KINDS = [("getattr", []), ("lookup", []), ("read", []), ("write", []),
         ("mixed", ["--writers", "2"])]
WORKERS = (1, 2, 4)


def one(bin_, url, threads, secs, kind, extra, pid):
    p = subprocess.run([bin_, url, str(threads), str(secs), kind, "--file", "/scale-" + kind,
                        "--server-pid", str(pid)] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=secs * 10 + 60)
    if not p.stdout.strip():
        raise RuntimeError("scalebench %s: %s" % (kind, p.stderr.decode().strip()))
    r = json.loads(p.stdout)
    if r["errors"] or r["torn"]:
        raise RuntimeError("scalebench %s failed: %s" % (kind, r))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scalebench", required=True)
    ap.add_argument("--arfd", required=True)
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true", help="1 s, 1 run, tcp only")
    a = ap.parse_args()
    if a.quick:
        a.secs, a.runs = 1, 1
    transports = ("tcp",) if a.quick else ("tcp", "shm")
    rows = []
    for w in WORKERS:
        d = Arfd(extra={"server.workers": str(w)}, bin=a.arfd)
        d.start()
        try:
            for t in transports:
                for kind, extra in KINDS:
                    best = None
                    for _ in range(a.runs):
                        r = one(a.scalebench, d.url("/", t), a.threads, a.secs, kind, extra,
                                d.pid)
                        if best is None or r["ops_per_s"] > best["ops_per_s"]:
                            best = r
                    rows.append(dict(transport=t, kind=kind, workers=w,
                                     ops_per_s=round(best["ops_per_s"]),
                                     cpu_ms_per_kop=round(1e6 * best["server_cpu_s"] /
                                                          max(best["ops"], 1), 2)))
                    print("%s %-8s workers %d: %8.0f requests/s" %
                          (t, kind, w, best["ops_per_s"]), flush=True)
        finally:
            d.stop()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "scale.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    base = {(r["transport"], r["kind"]): r["ops_per_s"] for r in rows if r["workers"] == 1}
    nproc = os.cpu_count()
    with open(os.path.join(a.out, "scale.md"), "w") as f:
        f.write("# arfd's request workers: requests/s with 1, 2, 4 workers\n\n")
        f.write("`bench/run --scale`: bench/scalebench.c, %d connections, requests only, "
                "%d s, best of %d; this machine has %d CPUs (arfd, the clients and the "
                "soft-NIC share them). GETATTR, LOOKUP and READ share the filesystem lock; "
                "WRITE takes it alone; mixed = 2 writers, the rest readers (4 KiB blocks "
                "checked whole). In brackets: ÷ 1 worker; server CPU ms per 1,000 "
                "requests.\n\n" % (a.threads, a.secs, a.runs, nproc))
        f.write("| transport | request | 1 worker | 2 workers | 4 workers |\n")
        f.write("|---|---|---|---|---|\n")
        for t in transports:
            for kind, _ in KINDS:
                cells = []
                for w in WORKERS:
                    r = next(r for r in rows if (r["transport"], r["kind"], r["workers"]) ==
                             (t, kind, w))
                    cells.append("%d (%.2f×; %.2f ms)" % (r["ops_per_s"],
                                                          r["ops_per_s"] / base[(t, kind)],
                                                          r["cpu_ms_per_kop"]))
                f.write("| %s | %s | %s |\n" % (t, kind, " | ".join(cells)))
    print("scale: %s" % os.path.join(a.out, "scale.md"))


if __name__ == "__main__":
    main()
