# SPDX-License-Identifier: MIT
"""The durability rows: ARF and NFS-Ganesha with their data on the same
disk-backed directory (not tmpfs, where fsync is free), each row saying
what its side has made durable when it counts an operation done.

  writes, unstable: fio's 4k randwrite qd1 and 1m seq write with
    end_fsync=1 (the final fsync is timed).  NFS: Ganesha's VFS export of a
    directory on the disk, fio's nfs engine (libnfs): UNSTABLE WRITEs, one
    COMMIT at the end (bench/fio-nfs-sync.patch gives the engine its fsync).
    ARF: an arfd whose data directory is on the disk, the default export
    (unstable WRITEs; COMMIT = data log + WAL fdatasync), through the
    arf-fuse mount (libaio, O_DIRECT, so the kernel caches nothing).
  writes, stable: the same with every write durable before its reply.
    NFS: sync=1 (the file opened O_SYNC: FILE_SYNC WRITEs).  ARF: an arfd
    with [export] sync = true.
  create: metabench's create phase (open O_CREAT + close per file).  NFS:
    Ganesha's VFS FSAL makes the file and answers without syncing it (NFS
    RFC 1813 asks for a durable CREATE; Ganesha leaves it to the
    filesystem).  ARF: durable before the reply (WAL synced, group commit).

The arfds and mounts are started for these rows and stopped after them."""
import os

from common import (ARF_WAIT, NFS_WAIT, Fail, bench_arfd, bench_mount, cpu_seconds, log,
                    server_counters)
from fio_rows import fio_job, fio_side

DISK_TESTS = [
    # (test, rw, bs, iodepth)
    ("4k randwrite qd1", "randwrite", "4k", 1),
    ("1m seq write", "write", "1m", 1),
]

NFS_UNSTABLE = "UNSTABLE WRITEs; one COMMIT at the end (timed)"
NFS_STABLE = "FILE_SYNC WRITEs (opened O_SYNC); COMMIT at the end"
NFS_CREATE = "CREATE answered before it is durable (VFS FSAL: no sync)"
ARF_UNSTABLE = "unstable WRITEs; one COMMIT at the end (timed): data log + WAL fdatasync"
ARF_STABLE = "every WRITE durable before its reply ([export] sync = true)"
ARF_CREATE = "CREATE durable before its reply (WAL fdatasync, group commit)"


class DiskRows:
    """Bench's durability rows (a part of bench.Bench)."""

    def disk_fio(self, system, durability, pair, fio_args, server, arfd=None):
        for test, rw, bs, qd in DISK_TESTS:
            self.expect("disk", test, system)
        try:  # the file first (fio's nfs engine does not lay it out)
            fio_job(self.fio, "prep", [a for a in fio_args if a != "--sync=1"] + [
                "--rw=write", "--bs=1m", "--size=" + self.cfg["size"], "--end_fsync=1"],
                timeout=600)
        except Fail as e:
            self.errors.append("%s prep (disk): %s" % (system, e))
            log("FAILED %s prep (disk): %s" % (system, e))
            return
        for test, rw, bs, qd in DISK_TESTS:
            self.attempt("%s %s (disk)" % (system, test), self.disk_one, system, durability,
                         pair, test, rw, bs, qd, fio_args, server, arfd)

    def disk_one(self, system, durability, pair, test, rw, bs, qd, fio_args, server, arfd):
        c = self.cfg
        # what earlier rows left dirty in the page cache goes to the disk
        # first, untimed: otherwise its writeback throttles whoever comes next
        os.sync()
        sv0 = arfd.stats() if arfd else None
        cpu0 = cpu_seconds(server.pid)
        args = fio_args + ["--rw=" + rw, "--bs=" + bs, "--iodepth=%d" % qd,
                           "--size=" + c["size"], "--time_based", "--runtime=%d" % c["runtime"],
                           "--randrepeat=0", "--norandommap", "--numjobs=1", "--end_fsync=1"]
        job = fio_job(self.fio, "disk_" + test.replace(" ", "_"), args)
        cpu1 = cpu_seconds(server.pid)
        r = fio_side(job, rw)
        total_ios = max(r["ios"], 1)
        row = dict(section="disk", test=test, system=system, durability=durability, pair=pair,
                   client="fio " + ("nfs engine (libnfs)" if "nfs" in system.lower()
                                    else "libaio O_DIRECT on the mount"),
                   transport="tcp", wait=ARF_WAIT if arfd else NFS_WAIT,
                   ops_s=r["ops_s"], mib_s=r["mib_s"], p50_us=r["p50_us"], p99_us=r["p99_us"],
                   mean_us=r["mean_us"], server_cpu_us_op=(cpu1 - cpu0) * 1e6 / total_ios)
        if arfd:
            sv1 = arfd.stats()
            if sv0 is None or sv1 is None:
                row.update(counter_source="none: arfd control socket unreachable")
            else:
                a0, b0, e0, r0 = server_counters(sv0)
                a1, b1, e1, r1 = server_counters(sv1)
                row.update(counter_source="server (arfd stats)",
                           one_sided_op=(a1 - a0) / total_ios, rounds_op=(r1 - r0) / total_ios,
                           requests_op=(b1 - b0) / total_ios, execs_op=(e1 - e0) / total_ios)
        self.add(**row)
        log("%-34s %-18s %10.0f op/s %8.1f MiB/s p50 %7.1f us p99 %8.1f us  [%s]" % (
            system, test + " (disk)", r["ops_s"], r["mib_s"], r["p50_us"], r["p99_us"], pair))

    def disk_create(self, system, durability, pair, backend, target, files_dir, server, arfd=None):
        self.expect("disk", "create", system)
        n = 200 if self.a.quick else 2000

        def one():
            os.makedirs(files_dir, exist_ok=True)
            os.sync()
            sv0 = arfd.stats() if arfd else None
            res = self.mb(backend, target, "create", ["--files", str(n)], server.pid)
            row = dict(section="disk", test="create", system=system, durability=durability,
                       pair=pair, client="metabench (%s)" % (
                           "libnfs sync API" if backend == "nfs" else "syscalls"),
                       transport="tcp", wait=ARF_WAIT if arfd else NFS_WAIT,
                       ops_s=res["ops_per_s"], mean_us=res["mean_us"])
            if "server_cpu_s" in res:
                row["server_cpu_us_op"] = res["server_cpu_s"] * 1e6 / res["ops"]
            if arfd:
                sv1 = arfd.stats()
                d = tuple(b - a for a, b in zip(server_counters(sv0), server_counters(sv1)))
                row.update(counter_source="server (arfd stats)", one_sided_op=d[0] / n,
                           rounds_op=d[3] / n, requests_op=d[1] / n, execs_op=d[2] / n)
            self.add(**row)
            log("%-34s %-18s %10.0f op/s %10.1f us  [%s]" % (system, "create (disk)",
                                                          res["ops_per_s"], res["mean_us"], pair))
        self.attempt("%s create (disk)" % system, one)

    def run_disk(self):
        """The rows on the disk-backed directory self.disk (bench.py made it,
        and Ganesha exports its nfs/ as /vfsdisk)."""
        arfds = {}
        try:
            for name, extra in (("default", None), ("sync", {"export.sync": "true"})):
                work = os.path.join(self.disk, "arfd-" + name)
                d = self.procs.add(bench_arfd(self.build, work, extra=extra,
                                              name="arfd (disk, %s)" % name))
                m = self.procs.add(bench_mount(self.build, d, work))
                arfds[name] = (d, m)
        except Fail as e:
            self.errors.append("disk rows: %s" % e)
            log("FAILED disk rows: %s" % e)
            return
        nurl = self.ganesha.url("vfsdisk", 3)
        nfs = ["--ioengine=nfs", "--nfs_url=" + nurl, "--filename=bench-disk.dat"]
        self.disk_fio("NFSv3 ganesha VFS", NFS_UNSTABLE, "unstable", nfs, self.ganesha)
        self.disk_fio("NFSv3 ganesha VFS, O_SYNC", NFS_STABLE, "stable", nfs + ["--sync=1"],
                      self.ganesha)
        for name, pair, dur in (("default", "unstable", ARF_UNSTABLE),
                                ("sync", "stable", ARF_STABLE)):
            d, m = arfds[name]
            path = os.path.join(m.path, "bench-disk.dat")
            self.disk_fio("ARF arf-fuse mount" + ("" if name == "default" else ", export sync"),
                          dur, pair, ["--filename=" + path, "--ioengine=libaio", "--direct=1"],
                          d, d)
        self.disk_create("NFSv3 ganesha VFS", NFS_CREATE, "create", "nfs",
                         self.ganesha.url("vfsdisk", 3), os.path.join(self.disk, "nfs", "mb",
                                                                       "files"), self.ganesha)
        d, m = arfds["default"]
        self.disk_create("ARF arf-fuse mount", ARF_CREATE, "create", "posix", m.path,
                         os.path.join(m.path, "mb", "files"), d, d)
        for d, m in arfds.values():
            m.stop()
            d.stop()

    def disk_ratios(self):
        """ARF / NFS within each durability pair (not against the tmpfs rows)."""
        nfs = {(r["test"], r["pair"]): r["ops_s"] for r in self.rows
               if r["section"] == "disk" and r["system"].startswith("NFS")}
        for r in self.rows:
            if r["section"] == "disk" and r["system"].startswith("ARF"):
                v = nfs.get((r["test"], r["pair"]))
                r["ratio_nfs"] = r["ops_s"] / v if v else "n/a"
