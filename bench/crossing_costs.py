#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What crossing a mount point costs a lookup (issue 18, "lookups across a
mount point against within one volume"): a real etcd and two arfd on
loopback ports (one cell); server a's root volume holds d1/d2/f, a mount
point near (a volume on a) and a mount point far (a volume on b), each
holding d1/d2/f too.  For each of /d1/d2/f, /near/d1/d2/f and /far/d1/d2/f,
`arfctl --json --stats stat arf://a/PATH` is run N times (a new client each
time, as a new process meets a path): the median wall time, and from the
last run the client's rounds of one-sided reads, its requests (LOCATE is
one) and the bytes it received, and from both servers' counters the
connections each lookup opened (a volume crossed into is a connection of
its own: a handshake).

  bench/crossing_costs.py [--runs N] [--build DIR] [--out FILE.md]

Not in CI."""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import arfproc  # noqa: E402


def accepted(arfctl, d):
    st = json.loads(arfproc.run([arfctl, "--json", "--control", d.control, "stats"]).stdout)
    return st["connections"]["accepted"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--build", default=os.environ.get("ARF_BUILD", os.path.join(HERE, "..",
                                                                                 "build")))
    ap.add_argument("--out")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    arfctl = os.path.join(build, "tools", "arfctl", "arfctl")
    rows = []
    with tempfile.TemporaryDirectory(prefix="arf-cross-bench-") as tmp:
        os.makedirs(os.path.join(tmp, "etcd"))
        etcd = arfproc.Etcd(os.path.join(tmp, "etcd"))
        etcd.start()
        servers = []
        try:
            for sid in ("a", "b"):
                conf = os.path.join(tmp, sid + ".conf")
                with open(conf, "w") as f:
                    f.write(arfproc.Arfd.CONFIG)
                extra = {"cell.etcd": etcd.url, "cell.name": "bench", "cell.server_id": sid,
                         "cell.lease_ttl_s": "5"}
                if sid == "a":
                    extra["cell.root_volume"] = "root"
                servers.append(arfproc.Arfd(workdir=os.path.join(tmp, sid), config=conf,
                                            build=build, name="arfd-" + sid,
                                            extra=extra).start())
            a, b = servers
            arfproc.run([arfctl, "--control", a.control, "vol", "create", "near"])
            arfproc.run([arfctl, "--control", b.control, "vol", "create", "far"])
            for _ in range(150):  # recorded, and in a's copy of the cell
                if arfproc.run([arfctl, "vol", "locate", "far", a.url("/")],
                               check=False).returncode == 0:
                    break
                time.sleep(0.1)
            arfproc.run([arfctl, "vol", "mkmount", a.url("/near"), "near"])
            arfproc.run([arfctl, "vol", "mkmount", a.url("/far"), "far"])
            src = os.path.join(tmp, "f")
            with open(src, "w") as f:
                f.write("a file\n")
            for top in ("", "/near", "/far"):
                arfproc.run([arfctl, "mkdir", a.url(top + "/d1")])
                arfproc.run([arfctl, "mkdir", a.url(top + "/d1/d2")])
                arfproc.run([arfctl, "put", src, a.url(top + "/d1/d2/f")])
            for label, path in (("within a's root volume", "/d1/d2/f"),
                                ("across a mount point, same server", "/near/d1/d2/f"),
                                ("across a mount point, another server", "/far/d1/d2/f")):
                c0 = accepted(arfctl, a) + accepted(arfctl, b)
                times, last = [], None
                for _ in range(args.runs):
                    t = time.monotonic()
                    p = arfproc.run([arfctl, "--json", "--stats", "stat", a.url(path)])
                    times.append(time.monotonic() - t)
                    last = json.loads(p.stdout)["stats"]
                c1 = accepted(arfctl, a) + accepted(arfctl, b)  # (the control socket's
                # calls are not data connections)
                rows.append((label, path, statistics.median(times) * 1000, last["rounds"],
                             last["requests"], last["bytes_received"],
                             (c1 - c0) / args.runs))
        finally:
            for d in servers:
                d.stop()
            etcd.stop()
    base = rows[0][2]
    lines = ["# Lookups across a mount point\n",
             "bench/crossing_costs.py, build %s, %s; two arfd and etcd on loopback; "
             "`arfctl --json --stats stat arf://a/PATH`, a new client each time, median of %d."
             "\n" % (os.path.basename(build), time.strftime("%Y-%m-%d"), args.runs),
             "| lookup | path | ms (median) | ÷ within | rounds | requests | bytes received "
             "| connections |",
             "|---|---|---|---|---|---|---|---|"]
    for label, path, ms, rounds, reqs, rx, conns in rows:
        lines.append("| %s | %s | %.1f | %.2f | %d | %d | %d | %.1f |" % (
            label, path, ms, ms / base, rounds, reqs, rx, conns))
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
