# SPDX-License-Identifier: MIT
"""The metadata rows (metabench): create, stat cold and warm, a deep
lookup, a large readdir and unlink, for ARF through libarf (tcp, shm;
caches on and off; each lookup strategy) and through the arf-fuse mount,
for NFSv3 and NFSv4 (libnfs, Ganesha's MEM export) and for tmpfs."""
import json
import os
import subprocess

from common import ARF_WAIT, LOCAL_WAIT, META_TESTS, NFS_WAIT, Fail, log, server_counters


class MetaRows:
    """Bench's metadata rows (a part of bench.Bench)."""

    def mb(self, backend, target, phase, extra=(), server_pid=None, timeout=600):
        c = self.cfg
        args = [self.metabench, backend, target, phase, "--files", str(c["files"]),
                "--big", str(c["big"]), "--secs", str(c["secs"])] + list(extra)
        if server_pid:
            args += ["--server-pid", str(server_pid)]
        p = subprocess.run(args, capture_output=True, timeout=timeout)
        if p.returncode != 0:
            raise Fail("metabench %s %s: %s" % (backend, phase,
                                                (p.stderr + p.stdout).decode(errors="replace")[-1500:]))
        return json.loads(p.stdout.decode().strip().splitlines()[-1])

    def meta_row(self, test, system, meta, res, counters=None, server_delta=None, untimed=0,
                 strategy="-"):
        row = dict(section="metadata", test=test, system=system, strategy=strategy, **meta,
                   ops_s=res["ops_per_s"], mean_us=res["mean_us"])
        if "server_cpu_s" in res:
            row["server_cpu_us_op"] = res["server_cpu_s"] * 1e6 / res["ops"]
        if counters == "client":
            n = res["ops"]
            row.update(counter_source="client (libarf)", one_sided_op=res["one_sided_reads"] / n,
                       rounds_op=res["rounds"] / n, requests_op=res["requests"] / n,
                       execs_op=res["execs"] / n)
        elif counters == "server":
            n = res["ops"] + untimed
            if server_delta is None:
                row.update(counter_source="none: arfd control socket unreachable")
            else:
                a, b, e, rd = server_delta
                row.update(counter_source="server (arfd stats)",
                           one_sided_op=a / n, rounds_op=rd / n, requests_op=b / n,
                           execs_op=e / n)
        self.add(**row)
        log("%-34s %-24s %10.0f op/s %10.1f us%s" % (
            system, test + ("" if strategy == "-" else " [%s]" % strategy), res["ops_per_s"],
            res["mean_us"], "" if counters != "client" else
            "  reads %.1f rounds %.1f req %.1f exec %.1f" % (
                row["one_sided_op"], row["rounds_op"], row["requests_op"], row["execs_op"])))

    def meta_system(self, system, meta, backend, target, server_pid=None, counters=None,
                    extra=(), remount=None, setup=True, tests=META_TESTS, nocache_lookup=False):
        for t in tests:
            self.expect("metadata", t, system)
        if setup:
            self.attempt(system + " setup", self.mb, backend, target, "setup", extra)

        def one(test, phase, ex=(), untimed=lambda r: 0):
            sv0 = self.arfd.stats() if counters == "server" else None
            res = self.mb(backend, target, phase, list(extra) + list(ex), server_pid)
            delta = None
            if counters == "server":
                sv1 = self.arfd.stats()
                if sv0 and sv1:
                    delta = tuple(b - a for a, b in zip(server_counters(sv0), server_counters(sv1)))
            self.meta_row(test, system, meta, res, counters, delta, untimed(res))

        plan = {
            "create": ("create", ()),
            "stat cold": ("stat", ()),
            "stat warm": ("stat", ("--warm",)),
            "lookup depth 10": ("lookup", ("--nocache",) if nocache_lookup else ()),
            "readdir 10k": ("readdir", ()),
            "readdir 10k changed": ("readdir", ("--changed",)),
            "unlink": ("unlink", ()),
        }
        for t in tests:
            phase, ex = plan[t]
            if t == "stat cold" and remount:
                self.attempt(system + " remount", remount)
            untimed = {"stat warm": lambda r: r["ops"], "lookup depth 10": lambda r: 1,
                       "readdir 10k": lambda r: 1,
                       "readdir 10k changed": lambda r: 1}.get(t, lambda r: 0)
            self.attempt("%s %s" % (system, t), one, t, phase, ex, untimed)

    def run_meta(self):
        # "readdir 10k changed" where a client could keep a listing: the
        # mount (the kernel's), NFSv3 (none: libnfs), tmpfs; not libarf (it
        # keeps none) nor NFSv4 (libnfs 4.0's utimes of a directory fails
        # there with NFS4ERR_ISDIR)
        unchanged = [t for t in META_TESTS if t != "readdir 10k changed"]
        # ARF over libarf: tcp and shm, default (hybrid) policy
        for tr in ("tcp", "shm"):
            self.meta_system("ARF libarf " + tr,
                             dict(client="metabench (libarf)", transport=tr, wait=ARF_WAIT,
                                  caching="libarf caches (lookup row: off)"),
                             "arf", self.arfd.url("/", tr), self.arfd.pid, "client",
                             setup=(tr == "tcp"), nocache_lookup=True, tests=unchanged)
        # cached lookup: what an application with a warm libarf sees
        for tr in ("tcp", "shm"):
            sysname = "ARF libarf %s (cache on)" % tr
            self.expect("metadata", "lookup depth 10", sysname)
            res = self.attempt(sysname, self.mb, "arf", self.arfd.url("/", tr), "lookup", (),
                               self.arfd.pid)
            if res:
                self.meta_row("lookup depth 10", sysname,
                              dict(client="metabench (libarf)", transport=tr, wait=ARF_WAIT,
                                   caching="libarf entry+attr cache"), res, "client")
        # strategies: lookup (uncached) and readdir
        for tr in ("tcp", "shm"):
            for strat in self.strategies:
                sysname = "ARF libarf %s" % tr
                for test, phase, ex in (("lookup depth 10", "lookup", ["--nocache"]),
                                        ("readdir 10k", "readdir", [])):
                    self.expect("strategy", test, "%s [%s]" % (sysname, strat))
                    res = self.attempt("%s %s %s" % (sysname, test, strat), self.mb, "arf",
                                       self.arfd.url("/", tr), phase, ex + ["--strategy", strat],
                                       self.arfd.pid)
                    if res:
                        self.meta_row(test, sysname,
                                      dict(client="metabench (libarf)", transport=tr,
                                           wait=ARF_WAIT, caching="off"),
                                      res, "client", strategy=strat)
                        self.rows[-1]["section"] = "strategy"
                        self.rows[-1]["system"] = "%s [%s]" % (sysname, strat)
        # ARF through the mount (plain system calls); cold = after a remount
        self.meta_system("ARF arf-fuse mount",
                         dict(client="metabench (syscalls)", transport="tcp", wait=ARF_WAIT,
                              caching="kernel dcache/attr cache (acregmin 3 s, acdirmin 30 s)"),
                         "posix", self.mount.path, self.arfd.pid, "server",
                         remount=self.mount.remount, setup=False)
        # NFS: libnfs, MEM export; v3 and v4
        for v in (3, 4):
            self.meta_system("NFSv%d ganesha MEM" % v,
                             dict(client="metabench (libnfs sync API)", transport="tcp",
                                  wait=NFS_WAIT,
                                  caching="uncached: " + (
                                      "one LOOKUP per path component every call" if v == 3 else
                                      "path walk in one COMPOUND per call")),
                             "nfs", self.ganesha.url("mem", v, "&dircache=0"),
                             self.ganesha.pid, setup=(v == 3),
                             tests=META_TESTS if v == 3 else unchanged)
        # local limit: tmpfs
        local = os.path.join(self.shm, "local-meta")
        os.makedirs(local, exist_ok=True)
        self.meta_system("local tmpfs", dict(client="metabench (syscalls)", transport="-",
                                             wait=LOCAL_WAIT, caching="kernel dcache"),
                         "posix", local)
