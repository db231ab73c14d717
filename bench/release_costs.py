#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `arfctl vol release` costs (issue 18, point 5; docs/volumes.md,
"Built: read-only replicas"): for a volume holding one file of N MiB
(random bytes, written by `arfctl put`), the time the volume's requests
wait while the snapshot is taken (arfd's pause_seconds: everything applied
made durable, a RocksDB checkpoint, the data log's closed segments linked
and its head copied), the whole command (the replica opened: its regions
rebuilt from the store), and the disk the replica adds (du of the volumes
directory, which counts a linked file once), for the first release and a
second one that replaces the replica.

  bench/release_costs.py [--short] [--build DIR] [--out FILE.md]

--short: 64 and 256 MiB (under a minute); else also 1024 MiB.  Not in CI."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import arfproc  # noqa: E402


def du_bytes(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def one(build, mib, tmp):
    work = os.path.join(tmp, "w%d" % mib)
    conf = os.path.join(tmp, "arfd%d.conf" % mib)
    with open(conf, "w") as f:
        f.write(arfproc.Arfd.CONFIG)
    d = arfproc.Arfd(workdir=work, config=conf, build=build)
    arfctl = os.path.join(build, "tools", "arfctl", "arfctl")
    d.start()
    try:
        ctl = [arfctl, "--control", d.control]
        blocks = mib * 256 + 4096
        arfproc.run(ctl + ["vol", "create", "v", "data_blocks=%d" % blocks, "inodes=4096"])
        src = os.path.join(tmp, "src")
        with open(src, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        arfproc.run([arfctl, "put", src, d.url("/f") + "?volume=v"])
        os.unlink(src)
        vols = os.path.join(d.data_dir, "volumes")
        before = du_bytes(vols)
        rows = []
        for which in ("first", "again"):
            t0 = time.monotonic()
            out = json.loads(arfproc.run(ctl + ["--json", "vol", "release", "v"]).stdout)
            rows.append((which, out["pause_seconds"], time.monotonic() - t0,
                         du_bytes(vols) - before))
        return rows
    finally:
        d.stop()
        d.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--build", default=os.environ.get("ARF_BUILD",
                                                       os.path.join(HERE, "..", "build")))
    ap.add_argument("--out")
    a = ap.parse_args()
    sizes = (64, 256) if a.short else (64, 256, 1024)
    lines = ["| volume | release | requests waited (pause) | whole command | disk added |",
             "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="arf-relb-") as tmp:
        for mib in sizes:
            for which, pause, total, disk in one(os.path.abspath(a.build), mib, tmp):
                lines.append("| %d MiB | %s | %.3f s | %.2f s | %.1f MiB |" % (
                    mib, which, pause, total, disk / 1048576.0))
    text = ("# vol release: the pause and the cost\n\n"
            "bench/release_costs.py%s, build %s, %s.\n\n" % (
                " --short" if a.short else "", os.path.basename(os.path.abspath(a.build)),
                time.strftime("%Y-%m-%d")) + "\n".join(lines) + "\n")
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
