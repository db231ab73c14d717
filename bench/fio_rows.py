# SPDX-License-Identifier: MIT
"""The data rows (fio): every test of DATA_TESTS on tmpfs (the local
limit), NFSv3 through fio's nfs engine, ARF through the arf-fuse mount and
ARF through libarf's fio engine over tcp and shm, with fio's latency
percentiles and, for ARF, counters per operation and arfd's CPU time.
Write jobs end with a timed fsync (end_fsync=1): NFS and ARF answer writes
before they are durable, and the COMMIT is part of the cost."""
import json
import os
import subprocess

from common import (ARF_WAIT, DATA_TESTS, LOCAL_WAIT, NFS_WAIT, SPIN_US, Fail, cpu_seconds,
                    log, server_counters)


def fio_job(fio, name, args, timeout=300):
    cmd = [fio, "--name=" + name, "--output-format=json", "--lat_percentiles=1"] + args
    p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise Fail("fio %s failed (%d): %s %s" % (name, p.returncode,
                                                  p.stderr.decode(errors="replace")[-1500:],
                                                  p.stdout.decode(errors="replace")[-500:]))
    out = p.stdout.decode(errors="replace")
    out = out[out.index("{"):]  # engines may print before the JSON
    job = json.loads(out)["jobs"][0]
    if job.get("error"):
        raise Fail("fio %s: error %s" % (name, job["error"]))
    return job


def fio_side(job, rw):
    side = job["write"] if "write" in rw else job["read"]
    lat = side.get("lat_ns", {})
    pct = lat.get("percentile", {})

    def p(key):
        for k, v in pct.items():
            if abs(float(k) - key) < 1e-6:
                return v / 1000.0
        return float("nan")
    return dict(ops_s=side["iops"], mib_s=side["bw_bytes"] / 1048576.0,
                p50_us=p(50.0), p99_us=p(99.0), mean_us=lat.get("mean", float("nan")) / 1000.0,
                ios=side["total_ios"])


class FioRows:
    """Bench's data rows (a part of bench.Bench)."""

    def fio_common(self, rw, bs, qd):
        c = self.cfg
        # a write job ends with an fsync, timed: a COMMIT on NFS and ARF,
        # which answer writes before they are durable
        return ["--rw=" + rw, "--bs=" + bs, "--iodepth=%d" % qd, "--size=" + c["size"],
                "--time_based", "--runtime=%d" % c["runtime"], "--ramp_time=%d" % c["ramp"],
                "--randrepeat=0", "--norandommap", "--numjobs=1", "--group_reporting"] + (
                    ["--end_fsync=1"] if "write" in rw else [])

    def data_system(self, system, meta, engine_args, prep_args, server=None, counters=None):
        """Run every data test on one system. engine_args(rw, qd) -> fio args."""
        for test, _, _, _ in DATA_TESTS:
            self.expect("data", test, system)
        try:
            fio_job(self.fio, "prep", prep_args + ["--rw=write", "--bs=1m",
                                                    "--size=" + self.cfg["size"]], timeout=600)
        except Fail as e:
            self.errors.append("%s prep: %s" % (system, e))
            log("FAILED %s prep: %s" % (system, e))
            return
        for test, rw, bs, qd in DATA_TESTS:
            self.attempt("%s %s" % (system, test), self.data_one, system, meta, test, rw, bs, qd,
                         engine_args, server, counters)

    def data_one(self, system, meta, test, rw, bs, qd, engine_args, server, counters):
        stats_file = os.path.join(self.work, "arf-fio-stats.json")
        if os.path.exists(stats_file):
            os.unlink(stats_file)
        sv0 = self.arfd.stats() if counters == "server" else None
        cpu0 = cpu_seconds(server.pid) if server else float("nan")
        job = fio_job(self.fio, test.replace(" ", "_"),
                      engine_args(rw, qd, stats_file) + self.fio_common(rw, bs, qd))
        cpu1 = cpu_seconds(server.pid) if server else float("nan")
        r = fio_side(job, rw)
        # fio ran ramp + runtime seconds; counters cover both
        total_ios = r["ops_s"] * (self.cfg["runtime"] + self.cfg["ramp"])
        row = dict(section="data", test=test, system=system, **meta, ops_s=r["ops_s"],
                   mib_s=r["mib_s"], p50_us=r["p50_us"], p99_us=r["p99_us"], mean_us=r["mean_us"])
        if server is not None:
            row["server_cpu_us_op"] = (cpu1 - cpu0) * 1e6 / total_ios
        if counters == "client":
            with open(stats_file) as f:
                st = json.loads(f.read().splitlines()[-1])
            # the engine's counters cover the whole job: ramp included, and one
            # resolve at open (a few reads, negligible)
            row.update(counter_source="client (libarf)",
                       one_sided_op=st["one_sided_reads"] / total_ios,
                       rounds_op=st["rounds"] / total_ios,
                       requests_op=st["requests"] / total_ios,
                       execs_op=st["execs"] / total_ios)
        elif counters == "server":
            sv1 = self.arfd.stats()
            if sv0 is None or sv1 is None:
                row.update(counter_source="none: arfd control socket unreachable")
            else:
                a0, b0, c0, r0 = server_counters(sv0)
                a1, b1, c1, r1 = server_counters(sv1)
                row.update(counter_source="server (arfd stats)",
                           one_sided_op=(a1 - a0) / total_ios, rounds_op=(r1 - r0) / total_ios,
                           requests_op=(b1 - b0) / total_ios, execs_op=(c1 - c0) / total_ios)
        self.add(**row)
        log("%-34s %-18s %10.0f op/s %8.1f MiB/s p50 %7.1f us p99 %8.1f us" % (
            system, test, r["ops_s"], r["mib_s"], r["p50_us"], r["p99_us"]))

    def run_data(self):
        # local limit
        local = os.path.join(self.shm, "local-data")
        os.makedirs(local, exist_ok=True)
        lpath = os.path.join(local, "bench.dat")
        self.data_system(
            "local tmpfs", dict(client="fio libaio O_DIRECT", transport="-", wait=LOCAL_WAIT),
            lambda rw, qd, sf: ["--filename=" + lpath, "--ioengine=libaio", "--direct=1"],
            ["--filename=" + lpath, "--ioengine=psync"])
        os.unlink(lpath)
        # NFS: fio's nfs engine (libnfs, NFSv3) to the VFS export of a tmpfs dir
        nurl = self.ganesha.url("vfs", 3)
        self.data_system(
            "NFSv3 ganesha VFS", dict(client="fio nfs engine (libnfs)", transport="tcp",
                                      wait=NFS_WAIT),
            lambda rw, qd, sf: ["--ioengine=nfs", "--nfs_url=" + nurl, "--filename=bench.dat"],
            ["--ioengine=nfs", "--nfs_url=" + nurl, "--filename=bench.dat"],
            server=self.ganesha)
        # ARF through the mount
        mpath = os.path.join(self.mount.path, "bench-mnt.dat")
        self.data_system(
            "ARF arf-fuse mount", dict(client="fio libaio O_DIRECT", transport="tcp",
                                       wait=ARF_WAIT),
            lambda rw, qd, sf: ["--filename=" + mpath, "--ioengine=libaio", "--direct=1"],
            ["--filename=" + mpath, "--ioengine=psync"], server=self.arfd, counters="server")
        # ARF through libarf: the external engine, tcp and shm
        for tr in ("tcp", "shm"):
            url = self.arfd.url("/", tr)
            eng = "--ioengine=external:" + self.engine
            self.data_system(
                "ARF libarf-fio " + tr,
                dict(client="fio external engine (libarf)", transport=tr, wait=ARF_WAIT),
                lambda rw, qd, sf, url=url, eng=eng: [
                    eng, "--arf_url=" + url, "--arf_spin_us=%d" % SPIN_US,
                    "--arf_stats_file=" + sf, "--filename=bench-lib.dat"],
                [eng, "--arf_url=" + url, "--filename=bench-lib.dat"],
                server=self.arfd, counters="client")
