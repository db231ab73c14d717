#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `arfctl vol move` costs (issue 18, point 4; docs/volumes.md,
"Built: vol move"): a real etcd and two arfd on loopback ports (one cell,
one move secret); a volume holding one file of N MiB (random bytes,
written by `arfctl put`) moves from a to b while a FUSE mount of it keeps
writing: 4 KiB at a time, each followed by fsync, so every write waits for
the volume's server.  Reported per size: arfd's pause_seconds (from the
freeze to the flip: the time requests wait), the longest write+fsync the
mount saw during the move (the pause as a client feels it: its
reconnection and redirection included), the whole command, the bytes sent
in all and during the freeze, and the mount's writes that completed.

  bench/move_costs.py [--short] [--build DIR] [--out FILE.md]

--short: 64 and 256 MiB (about a minute); else also 1024 MiB.  Not in CI."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import arfproc  # noqa: E402


def one(build, mib, tmp):
    os.makedirs(os.path.join(tmp, "etcd%d" % mib))
    etcd = arfproc.Etcd(os.path.join(tmp, "etcd%d" % mib))
    etcd.start()
    sec = os.path.join(tmp, "move.secret")
    with open(sec, "w") as f:
        f.write("bench\n")
    os.chmod(sec, 0o600)
    arfctl = os.path.join(build, "tools", "arfctl", "arfctl")
    servers = []
    try:
        for sid in ("a", "b"):
            conf = os.path.join(tmp, "%s%d.conf" % (sid, mib))
            with open(conf, "w") as f:
                f.write(arfproc.Arfd.CONFIG)
            d = arfproc.Arfd(workdir=os.path.join(tmp, "%s%d" % (sid, mib)), config=conf,
                             build=build, name="arfd-" + sid,
                             extra={"cell.etcd": etcd.url, "cell.name": "bench",
                                    "cell.server_id": sid, "cell.lease_ttl_s": "5",
                                    "cell.move_secret_file": sec})
            servers.append(d.start())
        a, b = servers
        ctl = [arfctl, "--control", a.control]
        blocks = mib * 256 + 16384
        arfproc.run(ctl + ["vol", "create", "v", "data_blocks=%d" % blocks, "inodes=4096"])
        for _ in range(100):  # recorded in the cell, and b live
            st = json.loads(arfproc.run([arfctl, "--json", "cell", "status", "--etcd", etcd.url,
                                         "--cell", "bench"]).stdout)
            if ({"v"} <= {x["name"] for x in st["volumes"]} and
                    {"a", "b"} <= {x["id"] for x in st["servers"]}):
                break
            time.sleep(0.1)
        src = os.path.join(tmp, "src")
        with open(src, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        arfproc.run([arfctl, "put", src, a.url("/f") + "?volume=v"])
        os.unlink(src)
        m = arfproc.Mount(a.url("/"), opts="volume=v", workdir=tmp, build=build)
        m.start()
        stop = threading.Event()
        waits = []

        def writer():
            fd = os.open(m.p("w"), os.O_WRONLY | os.O_CREAT, 0o644)
            block = os.urandom(4096)
            i = 0
            while not stop.is_set():
                t = time.monotonic()
                os.pwrite(fd, block, (i % 1024) * 4096)
                os.fsync(fd)
                waits.append(time.monotonic() - t)
                i += 1
            os.close(fd)
        t = threading.Thread(target=writer)
        t.start()
        time.sleep(1)
        n0 = len(waits)
        t0 = time.monotonic()
        out = json.loads(arfproc.run(ctl + ["--json", "vol", "move", "v", "b"]).stdout)
        took = time.monotonic() - t0
        time.sleep(1)
        stop.set()
        t.join()
        m.stop()
        during = waits[n0:]
        print("  %d MiB: %s" % (mib, out), flush=True)
        return (out["pause_seconds"], max(during) if during else 0.0, took, out["bytes_sent"],
                out["bytes_in_freeze"], len(during))
    finally:
        for d in servers:
            d.stop()
        etcd.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--build", default=os.environ.get("ARF_BUILD", os.path.join(HERE, "..",
                                                                                 "build")))
    ap.add_argument("--out")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    sizes = (64, 256) if args.short else (64, 256, 1024)
    lines = ["| volume | arfd's pause (s) | longest write+fsync on the mount (s) | command (s) "
             "| sent (MiB) | sent in the freeze (MiB) | mount writes during |",
             "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="arf-move-bench-") as tmp:
        for mib in sizes:
            p, w, c, sent, frz, n = one(build, mib, tmp)
            lines.append("| %d MiB | %.3f | %.3f | %.2f | %.1f | %.1f | %d |" % (
                mib, p, w, c, sent / 2**20, frz / 2**20, n))
            print(lines[-1], flush=True)
    text = ("# vol move: the pause and the time\n\nbench/move_costs.py, build %s, %s; two arfd "
            "and etcd on loopback, a FUSE mount writing 4 KiB + fsync in a loop throughout.\n\n"
            % (os.path.basename(build), time.strftime("%Y-%m-%d")) + "\n".join(lines) + "\n")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
