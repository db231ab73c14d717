#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fio on an arf-fuse mount beside the same jobs on a tmpfs directory, in
one run: 4 KiB random read and write, 1 MiB sequential read and write, one
job at queue depth 1, O_DIRECT (so the page cache is not what is measured;
tmpfs takes O_DIRECT since Linux 6.6).  Not a test: a number to report.

    sudo ARF_BUILD=build-fuse python3 tests/fuse/fio_bench.py [--transport tcp|shm]
        [--size 256m] [--runtime 10] [--opts MOUNT_OPTS] [--buffered]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fusetest import Arfd, Mount, skip_reason  # noqa: E402

JOBS = [
    ("4k randread", "randread", "4k"),
    ("4k randwrite", "randwrite", "4k"),
    ("1m read", "read", "1m"),
    ("1m write", "write", "1m"),
]


def fio(path, rw, bs, size, runtime, direct):
    args = ["fio", "--name=b", "--filename=" + path, "--size=" + size, "--rw=" + rw,
            "--bs=" + bs, "--ioengine=psync", "--iodepth=1", "--numjobs=1",
            "--direct=%d" % direct, "--time_based", "--runtime=%d" % runtime,
            "--randrepeat=0", "--output-format=json"]
    p = subprocess.run(args, capture_output=True, check=True)
    job = json.loads(p.stdout)["jobs"][0]
    side = job["read"] if "read" in rw else job["write"]
    return side["iops"], side["bw"] / 1024.0, side["clat_ns"]["mean"] / 1000.0


def prepare(path, size):
    # lay the file out once so the read jobs read data, not holes
    subprocess.run(["fio", "--name=prep", "--filename=" + path, "--size=" + size,
                    "--rw=write", "--bs=1m", "--ioengine=psync", "--direct=0"],
                   capture_output=True, check=True)


def run_all(label, directory, size, runtime, direct):
    path = os.path.join(directory, "bench.dat")
    prepare(path, size)
    rows = []
    for name, rw, bs in JOBS:
        iops, mib, lat = fio(path, rw, bs, size, runtime, direct)
        rows.append((label, name, iops, mib, lat))
    os.unlink(path)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", default="tcp")
    ap.add_argument("--size", default="256m")
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--opts", default="")
    ap.add_argument("--buffered", action="store_true")
    a = ap.parse_args()
    why = skip_reason()
    if why or not shutil.which("fio"):
        sys.exit("cannot run: %s" % (why or "fio is not installed"))
    direct = 0 if a.buffered else 1
    arfd = Arfd(extra={"regions.data_blocks": "262144"})  # 1 GiB of data blocks
    arfd.start()
    mnt = None
    tmp = tempfile.mkdtemp(prefix="arf-bench-tmpfs-")
    rows = []
    try:
        mnt = Mount(arfd.url("/", a.transport), a.opts).start()
        rows += run_all("arf-fuse (%s)" % a.transport, mnt.path, a.size, a.runtime, direct)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", tmp], check=True)
        rows += run_all("tmpfs", tmp, a.size, a.runtime, direct)
    finally:
        subprocess.run(["umount", tmp], capture_output=True)
        os.rmdir(tmp)
        if mnt:
            mnt.stop()
        arfd.cleanup()
    print("fio: 1 job, psync, iodepth 1, %s, %s file, %ds per job" % (
        "O_DIRECT" if direct else "buffered", a.size, a.runtime))
    print("| where | job | IOPS | MiB/s | mean latency (us) |")
    print("|---|---|---:|---:|---:|")
    for label, name, iops, mib, lat in rows:
        print("| %s | %s | %.0f | %.1f | %.1f |" % (label, name, iops, mib, lat))


if __name__ == "__main__":
    main()
