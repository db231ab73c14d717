# SPDX-License-Identifier: MIT
"""What every part of the benchmark shares: the settings of a full and a
quick run, the tests and strategies measured, how arfd and the arf-fuse
mount are set up for it (the processes themselves are tests/lib/arfproc.py's,
the one harness tests and benchmarks share), and the counters read from
arfd's stats."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import arfproc  # noqa: E402
from arfproc import Ganesha, Group, cpu_seconds  # noqa: E402,F401

__all__ = ["ARF_WAIT", "CpuSteal", "DATA_TESTS", "FULL", "Fail", "Ganesha", "Group", "LIST_STRATEGIES",
           "LOCAL_WAIT", "MC_ARFD", "MC_FILES", "MC_HOPS", "MC_STRATEGIES", "META_TESTS",
           "NFS_WAIT", "QUICK", "SPIN_US", "bench_arfd", "bench_mount", "cpu_seconds", "log",
           "server_counters"]

# ---------------------------------------------------------------- settings

FULL = dict(size="256m", runtime=5, ramp=1, files=10000, big=10000, secs=2.0,
            mc_kernel_secs=1.0, mc_chain_secs=0.9, mc_list_secs=0.45,
            list_sizes=[4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096],
            tools=dict(tar_src="/usr/include", rsync_src="/usr/share/doc", rsync_max=0,
                       touch=10000, copy_mib=256, git_depth=0))
QUICK = dict(size="32m", runtime=1, ramp=0, files=1000, big=10000, secs=0.4,
             mc_kernel_secs=0.1, mc_chain_secs=0.03, mc_list_secs=0.03,
             list_sizes=[4, 64, 1024],
             # tool rows (tool_rows.py): rsync_max = entries of the source kept (0: all)
             tools=dict(tar_src="/usr/include/linux", rsync_src="/usr/share/doc", rsync_max=300,
                        touch=1000, copy_mib=32, git_depth=0))

# mcbench: chain positions timed, the names made, and the arfd of the chain
# runs (4 buckets' worth of hash bits: 200 names make chains of about 50)
MC_HOPS = [1, 2, 4, 6, 8, 12, 16, 24, 32]
MC_FILES = 200
MC_STRATEGIES = ["onesided", "shipped", "request", "hybrid"]
# mcbench listing: how libarf may list a directory (see mcbench.c)
LIST_STRATEGIES = ["onesided", "request", "shipped", "auto"]
MC_ARFD = {"regions.dir_hash_mask": "3", "regions.inodes": "4096",
           "regions.dir_buckets": "4096", "regions.dir_entries": "4096",
           "regions.data_blocks": "4096"}

DATA_TESTS = [
    # (test, rw, bs, iodepth)
    ("4k randread qd1", "randread", "4k", 1),
    ("4k randread qd16", "randread", "4k", 16),
    ("4k randwrite qd1", "randwrite", "4k", 1),
    ("4k randwrite qd16", "randwrite", "4k", 16),
    ("1m seq read", "read", "1m", 1),
    ("1m seq write", "write", "1m", 1),
]

META_TESTS = ["create", "stat cold", "stat warm", "lookup depth 10", "readdir 10k",
              "readdir 10k changed", "unlink"]

SPIN_US = 50  # arfd --spin-us and the clients' spin_us (libarf's default)
ARF_WAIT = ("polling: arfd and client spin up to %d us before sleeping (adaptive: "
            "halved while spins catch nothing)" % SPIN_US)
NFS_WAIT = "sleeping: ganesha (epoll threads) and libnfs (poll) block"
LOCAL_WAIT = "in-kernel (no round trip)"

# a process that did not come up, a tool that failed: the run records it
# and goes on with the next row
Fail = arfproc.ProcError


def log(msg):
    print("bench: " + msg, flush=True)


class CpuSteal:
    """The share of this machine's CPU time that the hypervisor gave to
    others (steal, the 8th number of /proc/stat's cpu line: top's "st"),
    between two readings.  On a shared virtual machine the rows of one run
    move by 2x with it, so every row carries the steal of its stretch."""

    def __init__(self):
        self.first = self.last = self.read()

    @staticmethod
    def read():
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:9]]
            return v[7], sum(v)
        except (OSError, ValueError, IndexError):
            return 0, 0

    @staticmethod
    def pct(a, b):
        total = b[1] - a[1]
        return 100.0 * (b[0] - a[0]) / total if total > 0 else 0.0

    def since_last(self):
        """Percent stolen since the previous call (or since the start)."""
        now = self.read()
        p = self.pct(self.last, now)
        self.last = now
        return p

    def whole(self):
        return self.pct(self.first, self.read())


# ---------------------------------------------------------------- ARF's processes

# the benchmark's arfd: 1 GiB of data blocks and room for the metadata rows
BENCH_REGIONS = {"regions.data_blocks": "262144", "regions.inodes": "131072",
                 "regions.dir_buckets": "131072", "regions.dir_entries": "131072"}


def bench_arfd(build, work, extra=None, name="arfd"):
    """A started arfd of build's in work (its data, sockets, log and
    configuration file), polling SPIN_US, its export the default one
    (unstable writes until a COMMIT; extra may say export.sync = true);
    stop it with .stop()."""
    d = arfproc.Arfd(workdir=work, build=build, spin_us=SPIN_US, regions=BENCH_REGIONS,
                     sync=False,
                     extra=extra, rdma=False, name=name)
    d.start(timeout=60)
    log("%s pid %d on 127.0.0.1:%d and %s (spin %d us)" % (name, d.pid, d.port, d.socket,
                                                            SPIN_US))
    return d


def bench_mount(build, arfd, work, transport="tcp", opts=""):
    """A started arf-fuse mount of arfd's export on work/mnt, polling
    SPIN_US; .stop() unmounts it, .remount() mounts it afresh."""
    opts = "spin_us=%d" % SPIN_US + ("," + opts if opts else "")
    m = arfproc.Mount(arfd.url("/", transport), opts, mountpoint=os.path.join(work, "mnt"), build=build,
                      log_path=os.path.join(work, "arf-fuse.log"))
    return m.start()


def server_counters(st):
    """(one-sided reads, requests, execs, one-sided rounds) from arfd's stats
    JSON; requests leave the executions out, as libarf's counters do, and
    rounds are the one-sided frames the tcp soft-NIC served."""
    reqs = st.get("requests", {})
    execs = sum(v for k, v in reqs.items() if "exec" in k.lower())
    one = st.get("one_sided", {})
    return (one.get("reads", 0), sum(reqs.values()) - execs, execs, one.get("rounds", 0))
