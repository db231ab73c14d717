#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ARF beside NFS (NFS-Ganesha) and the local limit (tmpfs), on loopback, in
one run.  Called by bench/run, which installs the packages and builds the
tools; see bench/README.md for what each row means.

    bench.py --build DIR --tools DIR --out DIR [--quick]

Every process this starts (rpcbind unless one already serves port 111,
ganesha.nfsd, arfd, arf-fuse; tests/lib/arfproc.py starts them) is stopped
by its pid, and every mount made is unmounted, also on failure or Ctrl-C.
The rows are measured by fio_rows.py, meta_rows.py, tool_rows.py and
mc_rows.py and written and checked by report.py; common.py holds the
settings.  Exits 1 when a row is missing or has a non-finite or
non-positive number, or an ARF row lacks its counters.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import FULL, QUICK, CpuSteal, Fail, Ganesha, Group, bench_arfd, bench_mount, log  # noqa: E402
from disk_rows import DiskRows  # noqa: E402
from fio_rows import FioRows  # noqa: E402
from mc_rows import McRows  # noqa: E402
from meta_rows import MetaRows  # noqa: E402
from report import Report  # noqa: E402
from tool_rows import ToolRows  # noqa: E402


class Bench(FioRows, MetaRows, ToolRows, DiskRows, McRows, Report):
    """One run: the rows of each family (fio_rows.py, meta_rows.py,
    tool_rows.py, disk_rows.py, mc_rows.py) against the servers started here, then the
    outputs and the check (report.py)."""

    def __init__(self, a):
        self.a = a
        self.cfg = QUICK if a.quick else FULL
        self.build = os.path.abspath(a.build)
        self.tools = os.path.abspath(a.tools)
        self.fio = os.path.join(self.tools, "fio", "fio")
        self.engine = os.path.join(self.tools, "libarf-fio.so")
        self.metabench = os.path.join(self.tools, "metabench")
        self.mcbench = os.path.join(self.tools, "mcbench")
        self.mc_notes = []
        self.crossover = {}
        self.list_crossover = {}
        self.rows = []
        self.errors = []
        self.expected = []
        self.procs = Group(log=log)
        self.steal = CpuSteal()
        self.strategies = ["onesided", "requests", "hybrid"]
        if a.shipped:
            self.strategies.insert(2, "shipped")

    # -- rows
    def expect(self, section, test, system):
        self.expected.append((section, test, system))

    def add(self, **r):
        # the hypervisor's share of CPU time since the row before (this
        # row's measurement and its setup)
        r.setdefault("steal_pct", self.steal.since_last())
        self.rows.append(r)

    def attempt(self, what, fn, *args):
        try:
            return fn(*args)
        except (Fail, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
            msg = "%s: %s" % (what, e)
            log("FAILED " + msg)
            self.errors.append(msg)
            return None

    # -- whole run
    def run(self):
        t_start = time.time()
        self.steal = CpuSteal()
        self.work = tempfile.mkdtemp(prefix="arf-bench-", dir="/dev/shm")
        self.shm = self.work
        # the durability rows' directory: on a disk, not tmpfs
        self.disk = tempfile.mkdtemp(prefix="arf-bench-disk-", dir=self.a.disk_dir)
        try:
            self.arfd = self.procs.add(bench_arfd(self.build, os.path.join(self.work, "arfd")))
            self.mount = self.procs.add(bench_mount(self.build, self.arfd, self.work))
            vfs = os.path.join(self.work, "nfs-vfs-export")
            os.makedirs(vfs)
            os.makedirs(os.path.join(self.disk, "nfs"))
            self.ganesha = self.procs.add(Ganesha(self.work, vfs, log=log,
                                                  disk_dir=os.path.join(self.disk, "nfs"))
                                          .start())
            if not self.a.skip_data:
                self.run_data()
            if not self.a.skip_meta:
                self.run_meta()
            if not self.a.skip_tools:
                self.run_tools()
            if not self.a.skip_disk:
                self.run_disk()
            if not self.a.skip_mc:
                self.run_mc()
        except Fail as e:
            self.errors.append(str(e))
            log("FAILED " + str(e))
        finally:
            self.procs.stop_all()
            keep = self.a.keep_work
            if not keep:
                shutil.rmtree(self.work, ignore_errors=True)
                shutil.rmtree(self.disk, ignore_errors=True)
            else:
                log("work directories kept: %s %s" % (self.work, self.disk))
        self.elapsed = time.time() - t_start
        self.write()
        return self.check()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shipped", action="store_true",
                    help="libarf has shipped-program options: add the 'shipped' strategy")
    ap.add_argument("--skip-data", action="store_true")
    ap.add_argument("--skip-meta", action="store_true")
    ap.add_argument("--skip-mc", action="store_true")
    ap.add_argument("--skip-tools", action="store_true")
    ap.add_argument("--skip-disk", action="store_true")
    ap.add_argument("--disk-dir", default="/var/tmp",
                    help="a directory on a disk (not tmpfs) for the durability rows")
    ap.add_argument("--keep-work", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: run as root (FUSE mount, ganesha, rpcbind)")
    # every server's files live in /dev/shm, that is in memory: a full run
    # left 3 GiB there by the metadata rows, and a /dev/shm that others
    # had filled got its arfd killed by the OOM killer half-way (a mount
    # hung on a dead server, the rows before it slowed by reclaim)
    need = (1 if a.quick else 6) << 30
    free = shutil.disk_usage("/dev/shm").free
    if free < need:
        sys.exit("bench: /dev/shm has %.1f GiB free, the run needs %d GiB (its servers' files "
                 "live there, in memory): remove what others left there" %
                 (free / (1 << 30), need >> 30))
    b = Bench(a)

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        rc = b.run()
    except KeyboardInterrupt:
        b.procs.stop_all()
        sys.exit(130)
    sys.exit(rc)


if __name__ == "__main__":
    main()
