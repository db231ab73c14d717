#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-find beside GNU find, on one tree of N files (issue 17):

  * arf-find on the tree's path in an arf-fuse mount: the walker runs in
    arfd beside the directories and sends back only the matching entries
    and the directories to descend into;
  * arf-find by URL (arf://), the same walk without the mount;
  * GNU find through the arf-fuse mount, remounted first (a cold client
    cache: every directory is listed and every entry looked up through
    FUSE);
  * GNU find on a copy in tmpfs: the local limit.

Each row runs `-name '*.h'` (one file in ten matches) and reports wall
time, the matches, the rounds to the server (arf-find: its program runs and
requests, from --stats; GNU find through the mount: arfd's counters of
one-sided rounds, requests and runs, arf-fuse being its only client) and
the bytes that crossed the transport (arf-find: its --stats; the mount:
the tcp_info byte counts of arf-fuse's connection, from `ss -ti`, since the
mount was made).  Writes find.csv and find.md into --out.

  bench/find_rows.py --build BUILD --work DIR --out DIR [--files N] [--rounds 3]

`bench/run --walk` runs it.  Every process it starts is stopped by pid,
and the mount unmounted, even on failure."""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Group, bench_arfd, bench_mount, log, server_counters  # noqa: E402

PER_DIR = 100  # files per leaf directory; 10 leaves per middle directory


def make_tree(top, n):
    """n files, PER_DIR to a directory, directories ten to a parent; every
    tenth file ends in .h."""
    made = 0
    i = 0
    while made < n:
        d = os.path.join(top, "m%03d" % (i // 10), "l%04d" % i)
        os.makedirs(d, exist_ok=True)
        for k in range(min(PER_DIR, n - made)):
            name = "f%06d.%s" % (made, "h" if made % 10 == 0 else "c")
            with open(os.path.join(d, name), "wb") as f:
                f.write(b"x" * (made % 200))
            made += 1
        i += 1


def stats_of(stderr):
    """rounds (program runs + requests + one-sided rounds) and bytes crossed
    from arf-find --stats."""
    rounds = crossed = 0
    for m in re.finditer(rb"arf-find: stats .*", stderr):
        kv = dict((k.decode(), int(v)) for k, v in re.findall(rb"(\w+) (\d+)", m.group(0)))
        rounds += kv.get("execs", 0) + kv.get("prog_loads", 0) + kv.get("requests", 0) + \
            kv.get("rounds", 0)
        crossed += kv.get("bytes_sent", 0) + kv.get("bytes_received", 0)
    return rounds, crossed


def conn_bytes(port):
    """bytes sent + received on the client side of every tcp connection to port."""
    p = subprocess.run(["ss", "-tinH", "state", "established", "dport", "= :%d" % port],
                       capture_output=True, text=True)
    total = 0
    for k in ("bytes_sent", "bytes_received"):
        total += sum(int(x) for x in re.findall(k + r":(\d+)", p.stdout))
    return total


def timed(args, cwd=None):
    t = time.monotonic()
    p = subprocess.run(args, cwd=cwd, capture_output=True, env=dict(os.environ, LC_ALL="C"))
    return time.monotonic() - t, p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each row (median kept)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    arf_find = os.path.join(build, "tools", "arf-find", "arf-find")
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    procs = Group(log=log)
    rows = []
    try:
        d = procs.add(bench_arfd(build, os.path.join(a.work, "arfd")))
        m = procs.add(bench_mount(build, d, a.work))
        local = os.path.join(a.work, "tmpfs-tree")
        shutil.rmtree(local, ignore_errors=True)
        log("making %d files in the mount and in %s" % (a.files, local))
        make_tree(os.path.join(m.path, "tree"), a.files)
        make_tree(local, a.files)
        expr = ["-name", "*.h"]
        want = None

        def row(system, secs, p, rounds, crossed):
            nonlocal want
            n = p.stdout.count(b"\n")
            if p.returncode != 0:
                raise RuntimeError("%s: exit %d: %s" % (system, p.returncode, p.stderr[-400:]))
            if want is None:
                want = n
            elif n != want:
                raise RuntimeError("%s: %d matches, expected %d" % (system, n, want))
            rows.append(dict(system=system, files=a.files, seconds=round(secs, 4), matches=n,
                             rounds=rounds, bytes_crossed=crossed))
            log("%-34s %8.3f s %7d matches %8s rounds %10s bytes" % (system, secs, n, rounds,
                                                                   crossed))

        def median(runs):
            runs.sort(key=lambda r: r[0])
            return runs[len(runs) // 2]

        runs = [timed(["find", os.path.basename(local)] + expr, cwd=os.path.dirname(local))
                for _ in range(a.rounds)]
        secs, p = median(runs)
        row("GNU find, tmpfs", secs, p, 0, 0)

        runs = []
        for _ in range(a.rounds):
            m.remount()  # a cold client cache
            b0, c0 = conn_bytes(d.port), server_counters(d.stats() or {})
            secs, p = timed(["find", "tree"] + expr, cwd=m.path)
            b1, c1 = conn_bytes(d.port), server_counters(d.stats() or {})
            rounds = (c1[1] - c0[1]) + (c1[2] - c0[2]) + (c1[3] - c0[3])
            runs.append((secs, p, rounds, b1 - b0))
        secs, p, rounds, crossed = median(runs)
        row("GNU find, arf-fuse (cold)", secs, p, rounds, crossed)

        for system, target, cwd in (("arf-find, mount path", "tree", m.path),
                                    ("arf-find, arf:// URL", d.url("/tree"), a.work)):
            runs = []
            for _ in range(a.rounds):
                secs, p = timed([arf_find, "--stats", target] + expr, cwd=cwd)
                p.stdout = p.stdout.replace(d.url("/tree").encode(), b"tree")
                runs.append((secs, p) + stats_of(p.stderr))
            secs, p, rounds, crossed = median(runs)
            row(system, secs, p, rounds, crossed)
    finally:
        procs.stop_all()
    cols = ["system", "files", "seconds", "matches", "rounds", "bytes_crossed"]
    with open(os.path.join(a.out, "find.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "find.md"), "w") as f:
        f.write("| %s |\n|%s\n" % (" | ".join(cols), "---|" * len(cols)))
        for r in rows:
            f.write("| %s |\n" % " | ".join(str(r[c]) for c in cols))
    print(open(os.path.join(a.out, "find.md")).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
