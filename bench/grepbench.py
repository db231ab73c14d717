#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-grep beside GNU grep, on one file with rare matches, in one run:

  * arf-grep by URL (arf://): the matcher generated for the pattern runs in
    arfd beside the blocks; only the matching lines come back;
  * arf-grep on the file's path in an arf-fuse mount (the same shipped
    path: the mount's extended attributes name the server and the inode);
  * GNU grep reading the file through the arf-fuse mount (remounted first,
    so no page is cached): every byte crosses the transport and FUSE;
  * GNU grep on a copy in tmpfs: the local limit;
  * arf-grep by URL again, with arfd restarted on the same data with
    `programs.jit=false`: the same matcher interpreted instead of compiled;
  * and by URL with two regular expressions matching the same lines: one
    with required bytes (the skip loop for them, then the DFA table on the
    lines holding them) and one without (the DFA table walker alone), for
    the DFA's compiled scan rate in arfd.

For each: wall time, MB/s, the bytes that crossed the transport (libarf's
counters, arf-grep --stats) and, for the shipped rows, arfd's CPU time and
its scan rate in GB/s.  Writes grep.csv and grep.md into --out.

Then arf-grep against GNU grep, both through the same mount (issue 17):
`-c -i` of a literal and `-c -E` of a regex on the file, and `-r` of a
literal over a tree of --tree-files small files (100 to a directory,
about 1-3 KiB each), each with the client's page cache warm (every page of
the file read through the mount just before; for the tree, the previous
run) and cold (a fresh mount before each run), three runs each: median,
min and max.  Writes grep_vs.csv and a second table in grep.md (with
--only-vs, only these rows: grep_vs.md).

With --dfa, only the shipped program's scan rate in arfd for the shapes
the DFA table walker serves (issue 17): a literal, an alternation of two
words (and the same under -i, -v, -n), -v and -n of a literal, and an -i
regex with required bytes, each by URL, three runs: the median of arfd's
CPU seconds (its getrusage times, from /proc), the output checked against
GNU grep's on the local copy.  --baseline names a second arf-grep (an
earlier build) timed beside it on the same arfd, run for run.  Writes grep_dfa.csv and
grep_dfa.md.

  bench/grepbench.py --build build-bench --work DIR --out DIR [--size-mib N] [--check]
  bench/grepbench.py --build build-rel --work DIR --out DIR --dfa [--baseline ARF_GREP]

Started by bench/run (1 GiB; 64 MiB with --quick); every process it starts
is stopped by pid, and the mount unmounted, even on failure."""
import argparse
import csv
import math
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Group, bench_arfd, bench_mount, cpu_seconds, log  # noqa: E402

PATTERN = "xyzzy-needle"
ICASE = "XYZZY-Needle"            # -i literal row
REGEX = "xy+zz[a-z]-ne+dle"       # -E row: no literal GNU grep can lift whole
NOMUST = "x[yz]+[yz][-_]n[de]+[dl][el]e"  # no two plain bytes side by side: the table walker
TREE_PATTERN = "xyzzy-needle"
RUNS = 3
# --dfa: (label, arguments); all but the literal and the -i regex run the
# DFA table walker (-n: the shipped program always does)
DFA_CASES = [
    ("literal (skip loop)", ["-c", PATTERN]),
    ("alternation xyzzy|needle", ["-c", "-E", "xyzzy|needle"]),
    ("alternation foo|bar", ["-c", "-E", "foo|bar"]),
    ("-v of a blank (992 lines selected)", ["-c", "-v", " "]),
    ("-n of a literal", ["-n", PATTERN]),
    ("-n of an alternation", ["-n", "-E", "xyzzy|needle"]),
    ("-i of an alternation", ["-c", "-i", "-E", "xyzzy|needle"]),
    ("-i regex (required bytes, then the DFA)", ["-c", "-i", "-E", REGEX]),
]
MATCH_EVERY_MIB = 32  # one matching line per 32 MiB: rare matches


def make_file(path, size):
    """Text lines of pseudo-random words, 1 MiB at a time; the last line of
    every 32nd MiB holds the pattern."""
    rnd = random.Random(20261124)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
             "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]
    mib, lines, n = 1 << 20, [], 0
    while True:
        line = " ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14)))
        if n + len(line) + 1 > mib - 100:
            break
        lines.append(line)
        n += len(line) + 1
    block = ("\n".join(lines) + "\n").encode()
    last = mib - len(block)  # the last line, newline included
    plain = b"z" * (last - 1) + b"\n"
    match = PATTERN.encode() + b" " + b"z" * (last - 2 - len(PATTERN)) + b"\n"
    with open(path, "wb") as f:
        for i in range(size >> 20):
            f.write(block)
            f.write(match if i % MATCH_EVERY_MIB == MATCH_EVERY_MIB // 2 else plain)


def make_tree(root, nfiles):
    """nfiles files of 1-3 KiB, 100 to a directory; one in 50 matches."""
    rnd = random.Random(20261126)
    words = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf", b"hotel"]
    for i in range(nfiles):
        d = os.path.join(root, "d%03d" % (i // 100))
        if i % 100 == 0:
            os.makedirs(d, exist_ok=True)
        lines = [b" ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14)))
                 for _ in range(rnd.randint(20, 60))]
        if i % 50 == 7:
            lines.insert(rnd.randrange(len(lines)), TREE_PATTERN.encode() + b" in file %d" % i)
        with open(os.path.join(d, "f%03d.txt" % (i % 100)), "wb") as f:
            f.write(b"\n".join(lines) + b"\n")


def timed(args, env=None):
    t = time.monotonic()
    p = subprocess.run(args, capture_output=True, timeout=3600, env=env)
    return time.monotonic() - t, p


def stats_bytes(stderr):
    """bytes_received and exec counts from arf-grep --stats lines."""
    got = {"bytes_received": 0, "bytes_sent": 0, "execs": 0, "exec_insns": 0}
    for m in re.finditer(rb"arf-grep: stats .*", stderr):
        for k in got:
            v = re.search(rb" " + k.encode() + rb" (\d+)", m.group(0))
            if v:
                got[k] += int(v.group(1))
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--tree-files", type=int, default=10000)
    ap.add_argument("--arf-grep", help="the arf-grep to time (default: --build's); "
                    "an earlier one, for a before/after comparison")
    ap.add_argument("--only-vs", action="store_true",
                    help="only the arf-grep against GNU grep rows (grep_vs.*)")
    ap.add_argument("--dfa", action="store_true",
                    help="only the DFA shapes' arfd scan rates (grep_dfa.*)")
    ap.add_argument("--baseline", help="with --dfa: an earlier arf-grep timed beside it, "
                    "run for run (after, before, after, before...)")
    ap.add_argument("--runs", type=int, default=RUNS, help="with --dfa: runs of each case")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every row is there, finite and positive")
    a = ap.parse_args()
    size = a.size_mib << 20
    work = os.path.join(a.work, "grep")
    os.makedirs(work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    arf_grep = a.arf_grep or os.path.join(a.build, "tools", "arf-grep", "arf-grep")
    procs = Group(log=log)
    rows, vs = [], []
    try:
        local = os.path.join(work, "local.txt")
        log("grep: making a %d MiB file with a match every %d MiB" % (a.size_mib,
                                                                      MATCH_EVERY_MIB))
        make_file(local, size)
        want = subprocess.run(["grep", "-c", PATTERN, local], capture_output=True,
                              env=dict(os.environ, LC_ALL="C")).stdout
        blocks = (size >> 12) + (size >> 14) + 4096
        d = procs.add(bench_arfd(a.build, os.path.join(work, "arfd"),
                                 extra={"regions.data_blocks": str(blocks),
                                        "export.sync": "false"}))
        m = procs.add(bench_mount(a.build, d, work))
        shutil.copyfile(local, os.path.join(m.path, "big.txt"))
        os.sync()
        env = dict(os.environ, LC_ALL="C")

        def row(system, secs, p, crossed, server_cpu=None):
            if p.returncode not in (0, 1) or p.stdout != want:
                raise RuntimeError("%s: exit %d, output %r, want %r: %s" % (
                    system, p.returncode, p.stdout, want, p.stderr.decode()[-500:]))
            r = {"system": system, "size_mib": a.size_mib, "seconds": secs,
                 "mb_s": size / 1e6 / secs, "bytes_crossed": crossed,
                 "server_cpu_s": server_cpu if server_cpu is not None else "",
                 "server_gb_s": (size / 1e9 / server_cpu) if server_cpu else ""}
            rows.append(r)
            log("grep: %-34s %7.2f s %8.1f MB/s  %12s bytes crossed%s" % (
                system, secs, r["mb_s"], crossed if crossed != "" else "-",
                "  server scan %.2f GB/s (CPU)" % r["server_gb_s"] if server_cpu else ""))

        def shipped(system, target, args=("-c", PATTERN)):
            c0 = cpu_seconds(d.pid)
            secs, p = timed([arf_grep, "--stats"] + list(args) + [target], env)
            row(system, secs, p, stats_bytes(p.stderr)["bytes_received"], cpu_seconds(d.pid) - c0)

        if a.dfa:
            return dfa_rows(a, arf_grep, d, local, env)
        vs_rows(a, arf_grep, m, env, work, vs)
        if a.only_vs:
            return write_vs(a, vs)
        m.remount()  # the mount row ships: no page of big.txt cached here
        shipped("arf-grep by URL (shipped, JIT)", d.url("/big.txt", "tcp"))
        shipped("arf-grep on the mount (shipped, JIT)", os.path.join(m.path, "big.txt"))
        # the DFA in arfd: behind the skip loop for a regex's required
        # bytes, and the table walker alone (no required bytes)
        shipped("arf-grep by URL, -E regex (required bytes + DFA, JIT)",
                d.url("/big.txt", "tcp"), ("-c", "-E", REGEX))
        shipped("arf-grep by URL, -E regex (DFA table walker, JIT)",
                d.url("/big.txt", "tcp"), ("-c", "-E", NOMUST))
        m.remount()  # no page of big.txt cached in the kernel
        secs, p = timed(["grep", "-c", PATTERN, os.path.join(m.path, "big.txt")], env)
        row("GNU grep through the arf-fuse mount", secs, p, size)
        tmpfs = os.path.join("/dev/shm", "arf-grepbench-%d.txt" % os.getpid())
        shutil.copyfile(local, tmpfs)
        try:
            secs, p = timed(["grep", "-c", PATTERN, tmpfs], env)
            row("GNU grep on tmpfs (local limit)", secs, p, "")
        finally:
            os.unlink(tmpfs)
        # the same scan interpreted: arfd again on the same data, JIT off
        m.stop()
        d.stop()
        d.extra["programs.jit"] = "false"
        d.start(timeout=60)
        shipped("arf-grep by URL (shipped, interpreted)", d.url("/big.txt", "tcp"))
    finally:
        procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)

    cols = ["system", "size_mib", "seconds", "mb_s", "bytes_crossed", "server_cpu_s",
            "server_gb_s"]
    with open(os.path.join(a.out, "grep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    local_s = [r for r in rows if r["system"].startswith("GNU grep on tmpfs")][0]["seconds"]
    with open(os.path.join(a.out, "grep.md"), "w") as f:
        f.write("## arf-grep: %d MiB file, one match per %d MiB (`-c %s`, LC_ALL=C)\n\n" % (
            a.size_mib, MATCH_EVERY_MIB, PATTERN))
        f.write("| system | s | MB/s | bytes crossed | arfd CPU s | arfd scan GB/s | time / tmpfs |\n")
        f.write("|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s | %.2f | %.0f | %s | %s | %s | %.1f |\n" % (
                r["system"], r["seconds"], r["mb_s"], r["bytes_crossed"],
                "%.2f" % r["server_cpu_s"] if r["server_cpu_s"] != "" else "",
                "%.2f" % r["server_gb_s"] if r["server_gb_s"] != "" else "",
                r["seconds"] / local_s))
    write_vs(a, vs)
    if a.check:
        bad = [r["system"] for r in rows if not (math.isfinite(r["seconds"]) and r["seconds"] > 0)]
        if len(rows) != 7 or bad:
            log("grep: check failed: %d rows, bad %s" % (len(rows), bad))
            return 1
        log("grep: check passed: 7 rows, outputs identical to GNU grep's")
    return 0


def dfa_rows(a, arf_grep, d, local, env):
    """--dfa: each case by URL, RUNS runs each of arf_grep (and --baseline):
    the median arfd CPU seconds, the output checked against GNU grep's."""
    size = a.size_mib << 20
    tools = [("after", arf_grep)] + ([("before", a.baseline)] if a.baseline else [])
    rows = []
    for label, args in DFA_CASES:
        want = subprocess.run(["grep"] + args + [local], capture_output=True, env=env)
        r = {"case": label, "args": shlex.join(args)}
        cpus = {tag: [] for tag, _ in tools}
        for _ in range(a.runs):  # interleaved: after, before, after, before...
            for tag, prog in tools:
                c0 = cpu_seconds(d.pid)
                secs, p = timed([prog] + args + [d.url("/big.txt", "tcp")], env)
                cpus[tag].append(cpu_seconds(d.pid) - c0)
                if p.returncode != want.returncode or p.stdout != want.stdout:
                    raise RuntimeError("%s %s: exit %d, output differs from GNU grep's: %s" % (
                        prog, args, p.returncode, p.stderr.decode()[-500:]))
        for tag, _ in tools:
            cpu = sorted(cpus[tag])
            r[tag + "_cpu_s"] = cpu[len(cpu) // 2]
            r[tag + "_cpu_range"] = "%.2f-%.2f" % (cpu[0], cpu[-1])
            r[tag + "_gb_s"] = size / 1e9 / r[tag + "_cpu_s"]
            log("grep --dfa: %-46s %-6s arfd CPU median %.2f s (%s), %.2f GB/s" % (
                label, tag, r[tag + "_cpu_s"], r[tag + "_cpu_range"], r[tag + "_gb_s"]))
        rows.append(r)
    write_dfa(a.out, a.size_mib, rows, [tag for tag, _ in tools], a.runs)
    return 0


def write_dfa(out, size_mib, rows, tags, runs):
    """grep_dfa.csv and grep_dfa.md in out from dfa_rows()'s rows."""
    cols = list(rows[0].keys())
    with open(os.path.join(out, "grep_dfa.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "grep_dfa.md"), "w") as f:
        f.write("## arf-grep by URL, %d MiB file, one match per %d MiB: arfd CPU (median of %d, "
                "min-max) and scan rate (LC_ALL=C, JIT)\n\n" % (size_mib, MATCH_EVERY_MIB, runs))
        if len(tags) > 1:
            f.write("| case | arguments | before: arfd CPU s | before: GB/s | "
                    "after: arfd CPU s | after: GB/s |\n|---|---|---|---|---|---|\n")
        else:
            f.write("| case | arguments | arfd CPU s | GB/s |\n|---|---|---|---|\n")
        for r in rows:
            f.write("| %s | `%s` |" % (r["case"].replace("|", "\\|"),
                                       r["args"].replace("|", "\\|")))
            for tag in reversed(tags):
                f.write(" %.2f (%s) | %.2f |" % (float(r[tag + "_cpu_s"]), r[tag + "_cpu_range"],
                                                 float(r[tag + "_gb_s"])))
            f.write("\n")


def vs_rows(a, arf_grep, m, env, work, vs):
    """arf-grep against GNU grep through the same mount: warm and cold."""
    big = os.path.join(m.path, "big.txt")
    tree = os.path.join(m.path, "tree")
    log("grep: making a tree of %d small files in the mount" % a.tree_files)
    t = time.monotonic()
    make_tree(tree, a.tree_files)
    os.sync()
    log("grep: tree made in %.1f s" % (time.monotonic() - t))
    cases = [("-c -i literal", ["-c", "-i", ICASE], big, a.size_mib << 20),
             ("-c -E regex", ["-c", "-E", REGEX], big, a.size_mib << 20),
             ("-r literal, %d files" % a.tree_files, ["-r", TREE_PATTERN], tree, None)]
    for label, args, target, nbytes in cases:
        for cache in ("warm", "cold"):
            for tool, prog in (("GNU grep", "grep"), ("arf-grep", arf_grep)):
                secs, out = [], None
                if cache == "warm":
                    m.remount()
                    warm = subprocess.run(["grep", "-c", "-r", "-F", "no such text", target],
                                          capture_output=True, env=env)
                    if warm.returncode not in (0, 1):
                        raise RuntimeError("warming %s: %s" % (target, warm.stderr))
                for _ in range(RUNS):
                    if cache == "cold":
                        m.remount()
                    s, p = timed([prog] + args + [target], env)
                    if p.returncode not in (0, 1):
                        raise RuntimeError("%s %s: exit %d: %s" % (prog, args, p.returncode,
                                                                   p.stderr.decode()[-500:]))
                    got = b"".join(sorted(p.stdout.splitlines(True)))
                    if out is not None and got != out:
                        raise RuntimeError("%s %s: output changed between runs" % (prog, args))
                    out = got
                    secs.append(s)
                secs.sort()
                r = {"case": label, "cache": cache, "tool": tool, "median_s": secs[len(secs) // 2],
                     "min_s": secs[0], "max_s": secs[-1], "runs": len(secs),
                     "output": out}
                vs.append(r)
                log("grep: %-28s %-4s %-8s median %.3f s (%.3f-%.3f)" % (
                    label, cache, tool, r["median_s"], r["min_s"], r["max_s"]))
            gnu, arf = vs[-2], vs[-1]
            if gnu["output"] != arf["output"]:
                raise RuntimeError("%s %s: arf-grep's output differs from GNU grep's" % (label,
                                                                                        cache))
    for r in vs:
        del r["output"]


def write_vs(a, vs):
    cols = ["case", "cache", "tool", "median_s", "min_s", "max_s", "runs"]
    with open(os.path.join(a.out, "grep_vs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(vs)
    # alone (--only-vs): a table of its own, grep.md left as it is
    with open(os.path.join(a.out, "grep_vs.md" if a.only_vs else "grep.md"),
              "w" if a.only_vs else "a") as f:
        f.write("\n## arf-grep against GNU grep through the same mount (%d MiB file, "
                "%d-file tree; %d runs: median, min-max)\n\n" % (a.size_mib, a.tree_files, RUNS))
        f.write("| case | client cache | GNU grep s | arf-grep s | arf / GNU | "
                "slower beyond the spread? |\n|---|---|---|---|---|---|\n")
        for i in range(0, len(vs), 2):
            g, r = vs[i], vs[i + 1]
            f.write("| %s | %s | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.2f | %s |\n" % (
                g["case"], g["cache"], g["median_s"], g["min_s"], g["max_s"], r["median_s"],
                r["min_s"], r["max_s"], r["median_s"] / g["median_s"],
                "yes" if r["min_s"] > g["max_s"] else "no"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
