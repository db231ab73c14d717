#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ARF beside NFS (NFS-Ganesha) and the local limit (tmpfs), on loopback, in
one run.  Called by bench/run, which installs the packages and builds the
tools; see bench/README.md for what each row means.

    bench.py --build DIR --tools DIR --out DIR [--quick]

Every process this starts (rpcbind unless one already serves port 111,
ganesha.nfsd, arfd, arf-fuse) is stopped by its pid, and every mount made
is unmounted, also on failure or Ctrl-C.  Exits 1 when a row is missing or
has a non-finite or non-positive number, or an ARF row lacks its counters.
"""
import argparse
import csv
import json
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------- settings

FULL = dict(size="256m", runtime=5, ramp=1, files=10000, big=10000, secs=2.0,
            mc_kernel_secs=1.0, mc_chain_secs=0.9, mc_list_secs=0.45,
            list_sizes=[4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096])
QUICK = dict(size="32m", runtime=1, ramp=0, files=1000, big=10000, secs=0.4,
             mc_kernel_secs=0.1, mc_chain_secs=0.03, mc_list_secs=0.03,
             list_sizes=[4, 64, 1024])

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

META_TESTS = ["create", "stat cold", "stat warm", "lookup depth 10", "readdir 10k", "unlink"]

SPIN_US = 50  # arfd --spin-us and the clients' spin_us (libarf's default)
ARF_WAIT = "polling: arfd and client spin %d us before sleeping" % SPIN_US
NFS_WAIT = "sleeping: ganesha (epoll threads) and libnfs (poll) block"
LOCAL_WAIT = "in-kernel (no round trip)"


class Fail(Exception):
    pass


def log(msg):
    print("bench: " + msg, flush=True)


# ---------------------------------------------------------------- processes

class Procs:
    """Everything started, stopped in reverse order by pid."""

    def __init__(self):
        self.items = []  # (kind, obj)

    def add_proc(self, name, proc):
        self.items.append(("proc", (name, proc)))
        return proc

    def add_mount(self, path, fuse_proc=None):
        self.items.append(("mount", (path, fuse_proc)))

    def remove(self, kind, key):
        self.items = [it for it in self.items if not (it[0] == kind and it[1][0] == key)]

    def stop_proc(self, name, proc, sig=signal.SIGTERM):
        if proc.poll() is None:
            try:
                proc.send_signal(sig)
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
        self.remove("proc", name)

    def stop_all(self):
        for kind, obj in reversed(list(self.items)):
            try:
                if kind == "mount":
                    unmount(obj[0], obj[1])
                else:
                    name, proc = obj
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
                        try:
                            proc.wait(timeout=20)
                        except subprocess.TimeoutExpired:
                            proc.kill()
                            proc.wait(timeout=20)
            except Exception as e:  # keep stopping the rest
                log("cleanup of %s: %s" % (obj[0], e))
        self.items = []


def mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def unmount(path, fuse_proc=None):
    if mounted(path):
        r = subprocess.run(["fusermount3", "-u", path], capture_output=True, timeout=60)
        if r.returncode != 0:
            subprocess.run(["umount", "-l", path], capture_output=True, timeout=60)
    if fuse_proc is not None:
        try:
            fuse_proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            fuse_proc.terminate()
            try:
                fuse_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                fuse_proc.kill()
                fuse_proc.wait()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def port_open(port):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_for(cond, timeout, what, proc=None, logfile=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise Fail("%s exited with %s%s" % (what, proc.returncode, tail(logfile)))
        if cond():
            return
        time.sleep(0.05)
    raise Fail("%s did not come up in %ds%s" % (what, timeout, tail(logfile)))


def tail(path, n=2000):
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            return ":\n" + f.read().decode(errors="replace")[-n:]
    except OSError:
        return ""


def cpu_seconds(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


# ---------------------------------------------------------------- servers

class Arfd:
    def __init__(self, build, work, procs, extra=None, name="arfd"):
        self.bin = os.path.join(build, "arfd", "arfd")
        self.extra = extra or {}
        self.name = name  # Procs key: distinct per arfd
        os.makedirs(work, exist_ok=True)
        self.work = work
        self.procs = procs
        self.sock = os.path.join(work, "arfd.sock")
        self.control = os.path.join(work, "arfd.ctl")
        self.data = os.path.join(work, "arfd-data")
        self.port_file = os.path.join(work, "arfd.port")
        self.log = os.path.join(work, "arfd.log")

    def start(self):
        if os.path.exists(self.port_file):  # a restart: wait for the new port, not the old
            os.unlink(self.port_file)
        args = [self.bin, "--foreground", "--listen", "127.0.0.1:0", "--socket", self.sock,
                "--data-dir", self.data, "--spin-us", str(SPIN_US),
                "--set", "server.port_file=" + self.port_file,
                "--set", "server.control=" + self.control,
                "--set", "regions.data_blocks=262144",  # 1 GiB of data blocks
                "--set", "regions.inodes=131072",
                "--set", "regions.dir_buckets=131072",
                "--set", "regions.dir_entries=131072"]
        for k, v in self.extra.items():
            args += ["--set", "%s=%s" % (k, v)]
        self.proc = self.procs.add_proc(self.name, subprocess.Popen(
            args, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT))
        wait_for(lambda: os.path.exists(self.port_file) and open(self.port_file).read().strip(),
                 60, "arfd", self.proc, self.log)
        self.port = int(open(self.port_file).read().strip())
        self.pid = self.proc.pid
        log("arfd pid %d on 127.0.0.1:%d and %s (spin %d us)" % (self.pid, self.port, self.sock,
                                                                    SPIN_US))

    def url(self, transport, path="/"):
        if transport == "tcp":
            return "arf://127.0.0.1:%d%s" % (self.port, path)
        return "arf+shm://%s?socket=%s" % (path, self.sock)

    def stats(self):
        """The server's counters from its control socket, or None."""
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(self.control)
            s.sendall(b"stats\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            return json.loads(data)
        except (OSError, ValueError):
            return None


def server_counters(st):
    """(one-sided reads, requests, execs, one-sided rounds) from arfd's stats
    JSON; requests leave the executions out, as libarf's counters do, and
    rounds are the one-sided frames the tcp soft-NIC served."""
    reqs = st.get("requests", {})
    execs = sum(v for k, v in reqs.items() if "exec" in k.lower())
    one = st.get("one_sided", {})
    return (one.get("reads", 0), sum(reqs.values()) - execs, execs, one.get("rounds", 0))


class ArfMount:
    def __init__(self, build, arfd, work, procs, transport="tcp", opts=""):
        self.bin = os.path.join(build, "fuse", "arf-fuse")
        self.arfd = arfd
        self.path = os.path.join(work, "mnt")
        self.log = os.path.join(work, "arf-fuse.log")
        self.procs = procs
        self.transport = transport
        self.opts = opts
        os.makedirs(self.path, exist_ok=True)

    def start(self):
        args = [self.bin, self.arfd.url(self.transport), self.path, "-f",
                "-o", "spin_us=%d" % SPIN_US + ("," + self.opts if self.opts else "")]
        self.proc = subprocess.Popen(args, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        self.procs.add_proc("arf-fuse", self.proc)
        self.procs.add_mount(self.path, self.proc)
        wait_for(lambda: mounted(self.path), 30, "arf-fuse", self.proc, self.log)
        os.stat(self.path)

    def stop(self):
        unmount(self.path, self.proc)
        self.procs.remove("mount", self.path)
        self.procs.stop_proc("arf-fuse", self.proc)

    def remount(self):
        self.stop()
        self.start()


class Ganesha:
    """rpcbind (unless one serves 127.0.0.1:111 already) and ganesha.nfsd on
    127.0.0.1 with fixed NFS and MOUNT ports: a MEM export (/mem) for
    metadata and a VFS export (/vfs) of a tmpfs directory for data."""

    def __init__(self, work, procs, vfs_dir):
        self.work = work
        self.procs = procs
        self.vfs_dir = vfs_dir
        self.conf = os.path.join(work, "ganesha.conf")
        self.log = os.path.join(work, "ganesha.log")
        self.pidfile = os.path.join(work, "ganesha.pid")

    def start(self):
        if port_open(111):
            log("rpcbind: one already serves port 111; using it (not ours to stop)")
        else:
            rp = subprocess.Popen(["rpcbind", "-f"], stdout=subprocess.DEVNULL,
                                  stderr=open(os.path.join(self.work, "rpcbind.log"), "ab"))
            self.procs.add_proc("rpcbind", rp)
            wait_for(lambda: port_open(111), 20, "rpcbind", rp)
            log("rpcbind pid %d (-f; port 111 is the one fixed port)" % rp.pid)
        self.nfs_port = free_port()
        self.mnt_port = free_port()
        while self.mnt_port == self.nfs_port:
            self.mnt_port = free_port()
        recov = os.path.join(self.work, "ganesha-recovery")
        os.makedirs(recov, exist_ok=True)
        with open(self.conf, "w") as f:
            f.write("""NFS_CORE_PARAM {
  Bind_addr = 127.0.0.1;
  NFS_Port = %d;
  MNT_Port = %d;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  Protocols = 3, 4;
  mount_path_pseudo = true;
}
NFSV4 {
  Graceless = true;
  RecoveryBackend = fs;
  RecoveryRoot = "%s";
}
NFS_KRB5 { Active_krb5 = false; }
MEM { Inode_Size = 0; }
EXPORT_DEFAULTS { Access_Type = RW; Squash = No_Root_Squash; SecType = sys; }
EXPORT {
  Export_Id = 1; Path = /mem; Pseudo = /mem; Protocols = 3, 4; Transports = TCP;
  FSAL { Name = MEM; }
}
EXPORT {
  Export_Id = 2; Path = "%s"; Pseudo = /vfs; Protocols = 3, 4; Transports = TCP;
  FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
""" % (self.nfs_port, self.mnt_port, recov, self.vfs_dir))
        args = ["ganesha.nfsd", "-F", "-L", self.log, "-f", self.conf, "-p", self.pidfile,
                "-N", "NIV_EVENT"]
        self.proc = self.procs.add_proc("ganesha", subprocess.Popen(
            args, stdout=open(self.log + ".out", "ab"), stderr=subprocess.STDOUT))
        wait_for(lambda: port_open(self.nfs_port) and port_open(self.mnt_port), 60,
                 "ganesha.nfsd", self.proc, self.log)
        self.pid = self.proc.pid
        log("ganesha.nfsd pid %d: NFS 127.0.0.1:%d, MOUNT %d (Graceless)" % (
            self.pid, self.nfs_port, self.mnt_port))

    def url(self, export, version=3, extra=""):
        u = "nfs://127.0.0.1/%s?version=%d&nfsport=%d" % (export, version, self.nfs_port)
        if version == 3:
            u += "&mountport=%d" % self.mnt_port
        return u + extra


# ---------------------------------------------------------------- fio

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


# ---------------------------------------------------------------- the run

class Bench:
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
        self.procs = Procs()
        self.strategies = ["onesided", "requests", "hybrid"]
        if a.shipped:
            self.strategies.insert(2, "shipped")

    # -- rows
    def expect(self, section, test, system):
        self.expected.append((section, test, system))

    def add(self, **r):
        self.rows.append(r)

    def attempt(self, what, fn, *args):
        try:
            return fn(*args)
        except (Fail, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
            msg = "%s: %s" % (what, e)
            log("FAILED " + msg)
            self.errors.append(msg)
            return None

    # -- data
    def fio_common(self, rw, bs, qd):
        c = self.cfg
        return ["--rw=" + rw, "--bs=" + bs, "--iodepth=%d" % qd, "--size=" + c["size"],
                "--time_based", "--runtime=%d" % c["runtime"], "--ramp_time=%d" % c["ramp"],
                "--randrepeat=0", "--norandommap", "--numjobs=1", "--group_reporting"]

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
        fio = self.fio
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
            url = self.arfd.url(tr)
            eng = "--ioengine=external:" + self.engine
            self.data_system(
                "ARF libarf-fio " + tr,
                dict(client="fio external engine (libarf)", transport=tr, wait=ARF_WAIT),
                lambda rw, qd, sf, url=url, eng=eng: [
                    eng, "--arf_url=" + url, "--arf_spin_us=%d" % SPIN_US,
                    "--arf_stats_file=" + sf, "--filename=bench-lib.dat"],
                [eng, "--arf_url=" + url, "--filename=bench-lib.dat"],
                server=self.arfd, counters="client")

    # -- metadata
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
            "unlink": ("unlink", ()),
        }
        for t in tests:
            phase, ex = plan[t]
            if t == "stat cold" and remount:
                self.attempt(system + " remount", remount)
            untimed = {"stat warm": lambda r: r["ops"], "lookup depth 10": lambda r: 1,
                       "readdir 10k": lambda r: 1}.get(t, lambda r: 0)
            self.attempt("%s %s" % (system, t), one, t, phase, ex, untimed)

    def run_meta(self):
        c = self.cfg
        # ARF over libarf: tcp and shm, default (hybrid) policy
        for tr in ("tcp", "shm"):
            self.meta_system("ARF libarf " + tr,
                             dict(client="metabench (libarf)", transport=tr, wait=ARF_WAIT,
                                  caching="libarf caches (lookup row: off)"),
                             "arf", self.arfd.url(tr), self.arfd.pid, "client",
                             setup=(tr == "tcp"), nocache_lookup=True)
        # cached lookup: what an application with a warm libarf sees
        for tr in ("tcp", "shm"):
            sysname = "ARF libarf %s (cache on)" % tr
            self.expect("metadata", "lookup depth 10", sysname)
            res = self.attempt(sysname, self.mb, "arf", self.arfd.url(tr), "lookup", (),
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
                                       self.arfd.url(tr), phase, ex + ["--strategy", strat],
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
                             self.ganesha.pid, setup=(v == 3))
        # local limit: tmpfs
        local = os.path.join(self.shm, "local-meta")
        os.makedirs(local, exist_ok=True)
        self.meta_system("local tmpfs", dict(client="metabench (syscalls)", transport="-",
                                             wait=LOCAL_WAIT, caching="kernel dcache"),
                         "posix", local)

    # -- mobile code (mcbench)
    def mcb(self, args, timeout=600):
        p = subprocess.run([self.mcbench] + args, capture_output=True, timeout=timeout)
        if p.returncode != 0:
            raise Fail("mcbench %s: %s" % (args[0], (p.stderr + p.stdout).decode(
                errors="replace")[-1500:]))
        out = []
        for line in p.stdout.decode().splitlines():
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def mc_kernels(self):
        res = self.mcb(["kernels", os.path.join(self.tools, "mckernels.bpf.o"),
                        "--secs", str(self.cfg["mc_kernel_secs"])])
        notes = [r for r in res if r["kind"] == "note"]
        for n in notes:
            self.mc_notes.append("%s: %s" % (n["what"], n["why"]))
            log("mcbench note: %s: %s" % (n["what"], n["why"]))
        dpdk = not any(n["what"] == "dpdk" for n in notes)
        jit = not any(n["what"] == "dpdk jit" for n in notes)
        for r in res:
            if r["kind"] != "kernel":
                continue
            engines = ["native C (cc -O2)", "ARF interpreter", "ARF JIT"]
            if r["loop_free"] and dpdk:
                engines.append("DPDK rte_bpf interpreter")
                if jit:
                    engines.append("DPDK rte_bpf JIT")
            if r["engine"] == engines[0]:
                for e in engines:
                    self.expect("interp", r["what"], e)
            ns = r["ns_op"]
            self.add(section="interp", test=r["what"], system=r["engine"], strategy="-",
                     client="mcbench", transport="-", wait="-", caching="-",
                     ops_s=1e9 / ns, mean_us=ns / 1000.0, ns_op=ns,
                     ratio_native=r["ratio_native"], insns=r["insns"] or "")
            log("%-34s %-26s %12.1f ns/op  %6.2fx native%s" % (
                r["engine"], r["what"], ns, r["ratio_native"],
                "  %d insns" % r["insns"] if r["insns"] else ""))

    def mc_chain(self):
        for tr in ("tcp", "shm"):
            for st in MC_STRATEGIES:
                for h in MC_HOPS:
                    self.expect("chain", "lookup at chain position %d" % h,
                                "ARF libarf %s [%s]" % (tr, st))
        arfd = Arfd(self.build, os.path.join(self.work, "mc-arfd"), self.procs, MC_ARFD,
                    name="arfd-chain")
        arfd.start()
        try:
            res = self.mcb(["chain", "--secs", str(self.cfg["mc_chain_secs"]),
                            "--files", str(MC_FILES), "--hops", ",".join(map(str, MC_HOPS)),
                            arfd.url("tcp"), arfd.url("shm")])
        finally:
            self.procs.stop_proc("arfd-chain", arfd.proc)
        by = {}
        for r in res:
            if r["kind"] != "chain":
                continue
            sysname = "ARF libarf %s [%s]" % (r["transport"], r["strategy"])
            self.add(section="chain", test="lookup at chain position %d" % r["hops"],
                     system=sysname, strategy=r["strategy"], client="mcbench (libarf)",
                     transport=r["transport"], wait=ARF_WAIT, caching="off",
                     ops_s=r["ops_per_s"], mean_us=r["mean_us"], hops=r["hops"],
                     one_sided_op=r["one_sided_reads"], rounds_op=r["rounds"],
                     requests_op=r["requests"], execs_op=r["execs"],
                     counter_source="client (libarf), one lookup")
            by[(r["transport"], r["strategy"], r["hops"])] = r["mean_us"]
            log("%-34s chain position %-3d %10.1f us  reads %d rounds %d req %d exec %d" % (
                sysname, r["hops"], r["mean_us"], r["one_sided_reads"], r["rounds"],
                r["requests"], r["execs"]))
        for tr in ("tcp", "shm"):
            self.crossover[tr] = crossover(by, tr)
            c = self.crossover[tr]
            self.add(section="crossover", test="shipped beats one-sided", system="ARF libarf " + tr,
                     strategy="-", transport=tr, hops=c["first"], counter_source=c["text"])
            log("CROSSOVER %s: %s" % (tr, c["text"]))

    def mc_listing(self):
        sizes = self.cfg["list_sizes"]
        for tr in ("tcp", "shm"):
            for call in ("readdir", "readdirplus"):
                for st in LIST_STRATEGIES:
                    for n in sizes:
                        self.expect("listing", "%s of %d entries" % (call, n),
                                    "ARF libarf %s [%s]" % (tr, st))
        res = self.mcb(["listing", "--secs", str(self.cfg["mc_list_secs"]),
                        "--sizes", ",".join(map(str, sizes)),
                        self.arfd.url("tcp"), self.arfd.url("shm")], timeout=1800)
        by = {}
        for r in res:
            if r["kind"] != "listing":
                continue
            sysname = "ARF libarf %s [%s]" % (r["transport"], r["strategy"])
            self.add(section="listing", test="%s of %d entries" % (r["call"], r["entries"]),
                     system=sysname, strategy=r["strategy"], client="mcbench (libarf)",
                     transport=r["transport"], wait=ARF_WAIT, caching="off",
                     ops_s=1e6 / r["mean_us"] if r["mean_us"] > 0 else float("nan"),
                     mean_us=r["mean_us"], one_sided_op=r["one_sided_reads"],
                     rounds_op=r["rounds"], requests_op=r["requests"], execs_op=r["execs"],
                     counter_source="client (libarf), one listing")
            by[(r["transport"], r["call"], r["strategy"], r["entries"])] = r["mean_us"]
            log("%-32s %-11s %5d entries %10.1f us  rounds %d req %d exec %d" % (
                sysname, r["call"], r["entries"], r["mean_us"], r["rounds"], r["requests"],
                r["execs"]))
        for tr in ("tcp", "shm"):
            for call in ("readdir", "readdirplus"):
                for st in ("request", "shipped"):
                    c = list_crossover(by, tr, call, st, sizes)
                    self.list_crossover[(tr, call, st)] = c
                    self.add(section="crossover", test="%s %s beats one-sided" % (call, st),
                             system="ARF libarf " + tr, strategy=st, transport=tr,
                             hops=c["first"], counter_source=c["text"])
                    log("LISTING %s %s %s: %s" % (tr, call, st, c["text"]))

    def run_mc(self):
        self.attempt("mcbench kernels", self.mc_kernels)
        self.attempt("mcbench chain", self.mc_chain)
        self.attempt("mcbench listing", self.mc_listing)

    # -- whole run
    def run(self):
        t_start = time.time()
        self.work = tempfile.mkdtemp(prefix="arf-bench-", dir="/dev/shm")
        self.shm = self.work
        try:
            self.arfd = Arfd(self.build, self.work, self.procs)
            self.arfd.start()
            self.mount = ArfMount(self.build, self.arfd, self.work, self.procs)
            self.mount.start()
            vfs = os.path.join(self.work, "nfs-vfs-export")
            os.makedirs(vfs)
            self.ganesha = Ganesha(self.work, self.procs, vfs)
            self.ganesha.start()
            if not self.a.skip_data:
                self.run_data()
            if not self.a.skip_meta:
                self.run_meta()
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
            else:
                log("work directory kept: " + self.work)
        self.elapsed = time.time() - t_start
        self.write()
        return self.check()

    # -- output
    COLS = ["section", "test", "system", "strategy", "client", "transport", "wait", "caching",
            "ops_s", "mib_s", "p50_us", "p99_us", "mean_us", "ratio_nfs", "ratio_local",
            "one_sided_op", "rounds_op", "requests_op", "execs_op", "server_cpu_us_op",
            "counter_source", "ns_op", "ratio_native", "insns", "hops"]

    def ratios(self):
        ref = {}
        for r in self.rows:
            if r["section"] in ("data", "metadata"):
                if r["system"] in ("NFSv3 ganesha VFS", "NFSv3 ganesha MEM"):
                    ref[("nfs", r["test"])] = r["ops_s"]
                if r["system"] == "local tmpfs":
                    ref[("local", r["test"])] = r["ops_s"]
        for r in self.rows:
            if r["system"].startswith("ARF"):
                for k in ("nfs", "local"):
                    v = ref.get((k, r["test"]))
                    r["ratio_" + k] = r["ops_s"] / v if v else "n/a"

    def write(self):
        self.ratios()
        out = self.a.out
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "results.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.COLS, extrasaction="ignore")
            w.writeheader()
            for r in self.rows:
                w.writerow({k: fmt(r.get(k, "")) for k in self.COLS})
        self.write_md(out)
        self.plots(out)

    def machine(self):
        mem = "?"
        try:
            with open("/proc/meminfo") as f:
                kb = int(f.readline().split()[1])
            mem = "%.1f GiB" % (kb / 1048576)
        except (OSError, ValueError):
            pass
        model = "?"
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        model = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        fio_v = subprocess.run([self.fio, "--version"], capture_output=True).stdout.decode().strip()
        gan = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "nfs-ganesha"],
                             capture_output=True).stdout.decode().strip()
        lnfs = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libnfs-dev"],
                              capture_output=True).stdout.decode().strip()
        return [("cores", str(os.cpu_count())), ("cpu", model), ("memory", mem),
                ("kernel", platform.release()), ("fio", fio_v), ("nfs-ganesha", gan),
                ("libnfs", lnfs), ("mode", "quick" if self.a.quick else "full"),
                ("date", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
                ("run time", "%.0f s" % self.elapsed)]

    def write_md(self, out):
        c = self.cfg
        L = ["# ARF benchmark results", "",
             "Generated by `bench/run%s`; see bench/README.md for what the rows mean." % (
                 " --quick" if self.a.quick else ""), "",
             "| machine | |", "|---|---|"]
        L += ["| %s | %s |" % kv for kv in self.machine()]
        L += ["", "Everything on loopback (127.0.0.1 / UNIX socket) on this one machine. "
              "Wait mode: ARF %s; NFS %s." % (ARF_WAIT, NFS_WAIT),
              "Ratios are ARF throughput / NFSv3 (or tmpfs) throughput for the same test: "
              "above 1, ARF is faster. Counters are per operation.", "",
              "**AFS** is not measured: its client (OpenAFS's `afs.ko` or the in-kernel "
              "kAFS) is a kernel module, which cannot be loaded on this machine.", ""]
        if self.errors:
            L += ["**Failures in this run:**", ""] + ["- " + e for e in self.errors] + [""]
        L += ["## Data (fio)", "",
              "%s file, %d s per job after %d s ramp, 1 job; latency = fio's total latency "
              "(submit to completion)." % (c["size"], c["runtime"], c["ramp"]), ""]
        L += table([r for r in self.rows if r["section"] == "data"],
                   [("test", "test"), ("system", "system"), ("client", "client"),
                    ("IOPS", "ops_s"), ("MiB/s", "mib_s"), ("p50 us", "p50_us"),
                    ("p99 us", "p99_us"), ("ARF/NFS", "ratio_nfs"), ("ARF/local", "ratio_local"),
                    ("reads/op", "one_sided_op"), ("rounds/op", "rounds_op"),
                    ("requests/op", "requests_op"), ("execs/op", "execs_op"),
                    ("server CPU us/op", "server_cpu_us_op")], sort_by_test=DATA_TESTS)
        L += ["", "## Metadata (metabench)", "",
              "%d files for create/stat/unlink; a path of depth 10; a directory of %d "
              "entries; lookup and readdir repeated for %.1f s." % (c["files"], c["big"],
                                                                    c["secs"]), ""]
        L += table([r for r in self.rows if r["section"] == "metadata"],
                   [("test", "test"), ("system", "system"), ("caching", "caching"),
                    ("ops/s", "ops_s"), ("mean us", "mean_us"), ("ARF/NFS", "ratio_nfs"),
                    ("ARF/local", "ratio_local"), ("reads/op", "one_sided_op"),
                    ("rounds/op", "rounds_op"), ("requests/op", "requests_op"),
                    ("execs/op", "execs_op"), ("server CPU us/op", "server_cpu_us_op")],
                   sort_by_test=[(t,) for t in META_TESTS])
        L += ["", "## Strategies (libarf, client caches off)", "",
              "onesided: one-sided reads only (no hop limit, no programs); requests: plain "
              "requests only; " + ("shipped: shipped programs wherever libarf has one; "
                                   if "shipped" in self.strategies else "") +
              "hybrid: libarf's defaults.", ""]
        L += table([r for r in self.rows if r["section"] == "strategy"],
                   [("test", "test"), ("system [strategy]", "system"), ("ops/s", "ops_s"),
                    ("mean us", "mean_us"), ("reads/op", "one_sided_op"),
                    ("rounds/op", "rounds_op"), ("requests/op", "requests_op"),
                    ("execs/op", "execs_op"), ("server CPU us/op", "server_cpu_us_op")],
                   sort_by_test=[("lookup depth 10",), ("readdir 10k",)])
        L += self.md_mc()
        L += ["", "Counter sources: libarf rows from the client's `arf_stats()`; arf-fuse rows "
              "from arfd's control socket (`stats`: one-sided reads and rounds -- frames -- seen by "
              "the tcp soft-NIC, requests and executions by kind). Server CPU: utime+stime of arfd "
              "(or ganesha.nfsd) from /proc/PID/stat over the measured part; arfd's includes "
              "its polling (up to 50 us after each message).", "",
              "Plots: data_iops.png, data_latency.png, meta_ops.png, strategies.png, "
              "mc_kernels.png, mc_chain.png.", ""]
        with open(os.path.join(out, "results.md"), "w") as f:
            f.write("\n".join(L))

    def md_mc(self):
        interp = [r for r in self.rows if r["section"] == "interp"]
        chain = [r for r in self.rows if r["section"] == "chain"]
        if not interp and not chain:
            return []
        L = ["", "## Mobile code: interpreter and JIT vs native vs DPDK librte_bpf (mcbench)", "",
             "The kernels of bench/mckernels.c, one C source: compiled natively (cc -O2) and "
             "for eBPF (clang -O2 -target bpf -mcpu=v2), run in ARF's interpreter "
             "(arf_mc_run_interp) and as ARF's JIT's native code (arf_mc_prog_jit, then "
             "arf_mc_run: every load and store still checked, the budget still counted), "
             "each run a full arf_mc_run with fresh vm state (the stack cleared, the regions "
             "set), and, for the loop-free kernels (the only ones its validator accepts), "
             "DPDK's librte_bpf interpreter (rte_bpf_exec) and JIT (rte_bpf_get_jit), which "
             "are called directly and check no access. Best of 5 batches; ratio = ns/op over "
             "native's.", ""]
        for n in self.mc_notes:
            L.append("- not measured: " + n)
        if self.mc_notes:
            L.append("")
        L += table(interp, [("kernel", "test"), ("engine", "system"), ("ns/op", "ns_op"),
                            ("x native", "ratio_native"), ("eBPF insns", "insns")],
                   sort_by_test=[])
        L += ["", "## Chain lookups: one-sided walk vs shipped program vs plain request", "",
              "arfd with `regions.dir_hash_mask=3` (4 buckets' worth of hash bits; %d names, "
              "chains of about 50); `arf_lookup` of a name at each chain position, client "
              "caches off; onesided: no hop limit, no programs; shipped: `max_hops=0` (read "
              "the bucket, then one execution of the chain-lookup program); request: LOOKUP "
              "requests only; hybrid: libarf's defaults. Counters are those of one lookup "
              "(each lookup also reads the child's inode one-sided, except request)." % MC_FILES,
              ""]
        for tr in ("tcp", "shm"):
            c = self.crossover.get(tr)
            if c:
                L.append("- **crossover %s**: %s" % (tr, c["text"]))
        L.append("")
        L += table(chain, [("test", "test"), ("system [strategy]", "system"),
                           ("mean us", "mean_us"), ("reads", "one_sided_op"),
                           ("rounds", "rounds_op"), ("requests", "requests_op"),
                           ("execs", "execs_op")],
                   sort_by_test=[("lookup at chain position %d" % h,) for h in MC_HOPS])
        listing = [r for r in self.rows if r["section"] == "listing"]
        if listing:
            sizes = self.cfg["list_sizes"]
            L += ["", "## Listings: one-sided vs READDIR requests vs the readdir program", "",
                  "mcbench listing on the main arfd: `/mclist/dN` holds N files; each row "
                  "lists a whole directory (1024 entries a call), client caches off, with "
                  "`arf_readdir` (names) or `arf_readdirplus` (names and attributes). "
                  "onesided: the listing pages read one-sided, and for readdirplus each "
                  "child's inode; request: READDIR requests (the children's inodes still "
                  "one-sided); shipped: the readdir program, one execution per batch, "
                  "attributes included; auto: libarf's defaults for the transport "
                  "(`readdir_exec_min`, `readdir_req_min`). Counters are those of one "
                  "listing.", ""]
            for tr in ("tcp", "shm"):
                for call in ("readdir", "readdirplus"):
                    for st in ("request", "shipped"):
                        c = self.list_crossover.get((tr, call, st))
                        if c:
                            L.append("- **%s %s, %s**: %s" % (call, tr, st, c["text"]))
            L.append("")
            L += table(listing, [("test", "test"), ("system [strategy]", "system"),
                                 ("mean us", "mean_us"), ("reads", "one_sided_op"),
                                 ("rounds", "rounds_op"), ("requests", "requests_op"),
                                 ("execs", "execs_op")],
                       sort_by_test=[("%s of %d entries" % (c, n),)
                                     for c in ("readdir", "readdirplus") for n in sizes])
        return L

    def plots(self, out):
        if not shutil.which("gnuplot"):
            self.errors.append("gnuplot is not installed: no plots")
            return

        def cluster(rows, tests, systems, key):
            lines = ["test " + " ".join('"%s"' % s for s in systems)]
            for t in tests:
                vals = []
                for s in systems:
                    v = next((r.get(key) for r in rows if r["test"] == t and r["system"] == s), None)
                    vals.append("%g" % v if isinstance(v, (int, float)) and math.isfinite(v)
                                and v > 0 else "NaN")
                lines.append('"%s" %s' % (t, " ".join(vals)))
            return "\n".join(lines) + "\n"

        def systems_of(rows):
            seen = []
            for r in rows:
                if r["system"] not in seen:
                    seen.append(r["system"])
            return seen

        specs = []
        data = [r for r in self.rows if r["section"] == "data"]
        meta = [r for r in self.rows if r["section"] == "metadata"]
        strat = [r for r in self.rows if r["section"] == "strategy"]
        for name, rows, tests, key, ylabel in (
                ("data_iops", data, [t[0] for t in DATA_TESTS], "ops_s", "IOPS (log)"),
                ("data_latency", data, [t[0] for t in DATA_TESTS], "p50_us",
                 "p50 latency, us (log)"),
                ("meta_ops", meta, META_TESTS, "ops_s", "operations/s (log)"),
                ("strategies", strat, ["lookup depth 10", "readdir 10k"], "mean_us",
                 "mean latency, us (log)")):
            if not rows:
                continue
            systems = systems_of(rows)
            dat = os.path.join(out, name + ".dat")
            with open(dat, "w") as f:
                f.write(cluster(rows, tests, systems, key))
            specs.append((name, dat, len(systems), ylabel))
        interp = [r for r in self.rows if r["section"] == "interp"]
        if interp:
            tests = []
            for r in interp:
                if r["test"] not in tests:
                    tests.append(r["test"])
            systems = systems_of(interp)
            dat = os.path.join(out, "mc_kernels.dat")
            with open(dat, "w") as f:
                f.write(cluster(interp, tests, systems, "ns_op"))
            specs.append(("mc_kernels", dat, len(systems), "ns per run (log)"))
        chain = [r for r in self.rows if r["section"] == "chain"]
        line_spec = None
        if chain:
            systems = systems_of(chain)
            with open(os.path.join(out, "mc_chain.dat"), "w") as f:
                f.write("hops " + " ".join('"%s"' % s for s in systems) + "\n")
                for h in MC_HOPS:
                    vals = []
                    for s in systems:
                        v = next((r["mean_us"] for r in chain if r["hops"] == h and
                                  r["system"] == s), None)
                        vals.append("%g" % v if isinstance(v, (int, float)) and
                                    math.isfinite(v) and v > 0 else "NaN")
                    f.write("%d %s\n" % (h, " ".join(vals)))
            line_spec = len(systems)
        gp = os.path.join(out, "plots.gp")
        with open(gp, "w") as f:
            f.write("# regenerated by bench/run: gnuplot plots.gp (in this directory)\n")
            f.write("set terminal png size 1400,700 noenhanced\n")
            f.write("set style data histogram\nset style histogram cluster gap 1\n"
                    "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset logscale y\n"
                    "set grid ytics\nset key outside right top\nset xtics rotate by -20\n")
            for name, dat, n, ylabel in specs:
                f.write('set output "%s.png"\nset title "%s"\nset ylabel "%s"\n' % (
                    name, name.replace("_", " "), ylabel))
                f.write('plot for [i=2:%d] "%s.dat" using i:xtic(1) title columnheader(i)\n' % (
                    n + 1, name))
            if line_spec:
                f.write('set output "mc_chain.png"\nset title "lookup latency vs chain position"\n'
                        'set ylabel "mean latency, us (log)"\nset xlabel "chain position (hops)"\n'
                        'set style data linespoints\nset xtics norotate\nset logscale x 2\n'
                        'set xtics (1, 2, 4, 8, 16, 32)\n')
                f.write('plot for [i=2:%d] "mc_chain.dat" using 1:i title columnheader(i) '
                        'with linespoints\n' % (line_spec + 1))
        p = subprocess.run(["gnuplot", "plots.gp"], cwd=out, capture_output=True)
        if p.returncode != 0:
            self.errors.append("gnuplot: " + p.stderr.decode(errors="replace")[-500:])

    def check(self):
        bad = list(self.errors)
        have = {(r["section"], r["test"], r["system"]): r for r in self.rows}
        for key in self.expected:
            r = have.get(key)
            if r is None:
                bad.append("missing row: %s / %s / %s" % key)
                continue
            nums = ["ops_s", "mean_us"] + (["mib_s", "p50_us", "p99_us"]
                                           if key[0] == "data" else [])
            if key[0] == "interp":
                nums += ["ns_op", "ratio_native"]
            elif r["system"].startswith("ARF") and key[0] not in ("chain", "listing"):
                nums.append("server_cpu_us_op")  # (mcbench's rows have no server CPU)
            for k in nums:
                v = r.get(k)
                if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                    # server CPU can be 0 ticks in a very short quick run; allow >= 0
                    if k == "server_cpu_us_op" and isinstance(v, (int, float)) and \
                            math.isfinite(v) and v >= 0:
                        continue
                    bad.append("%s / %s / %s: %s = %r" % (key + (k, v)))
            if r["system"].startswith("ARF") and key[0] != "interp":
                for k in ("one_sided_op", "rounds_op", "requests_op", "execs_op"):
                    v = r.get(k)
                    ok = isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
                    if not ok:
                        bad.append("%s / %s / %s: counter %s = %r" % (key + (k, v)))
        if not self.a.skip_mc:
            for tr in ("tcp", "shm"):
                if tr not in self.crossover:
                    bad.append("no crossover computed for %s" % tr)
        log("%d rows, %d expected, %.0f s" % (len(self.rows), len(self.expected), self.elapsed))
        if bad:
            for b in bad:
                log("CHECK FAILED: " + b)
            return 1
        log("check passed: every row present, finite and positive, counters filled")
        return 0


def crossover(by, tr):
    """Where shipping the chain lookup starts to beat the one-sided walk over
    transport tr: the first measured chain position from which the shipped
    row stays faster, and the break-even from a straight-line fit of the
    one-sided rows (cost per round) against the shipped rows' mean (cost of
    the execution)."""
    os_pts = [(h, by[(tr, "onesided", h)]) for h in MC_HOPS if (tr, "onesided", h) in by]
    sh = [by[(tr, "shipped", h)] for h in MC_HOPS if h >= 2 and (tr, "shipped", h) in by]
    first = "n/a"
    for i, h in enumerate(MC_HOPS):
        if all((tr, s, g) in by for s in ("onesided", "shipped") for g in MC_HOPS[i:]) and \
                all(by[(tr, "shipped", g)] < by[(tr, "onesided", g)] for g in MC_HOPS[i:]):
            first = h
            break
    if len(os_pts) < 2 or not sh:
        return dict(first=first, fit=float("nan"), round_us=float("nan"),
                    exec_us=float("nan"), text="not enough rows")
    n = len(os_pts)
    mx = sum(h for h, _ in os_pts) / n
    my = sum(v for _, v in os_pts) / n
    sxx = sum((h - mx) ** 2 for h, _ in os_pts)
    slope = sum((h - mx) * (v - my) for h, v in os_pts) / sxx
    icpt = my - slope * mx
    sh_us = sorted(sh)[len(sh) // 2]  # median: robust to a noisy point
    fit = (sh_us - icpt) / slope if slope > 0 else float("inf")
    if first == "n/a":
        text = ("one-sided stays faster up to %d hops (%.2f us per hop; shipped lookup "
                "%.1f us; straight-line break-even at %.0f hops)" % (
                    MC_HOPS[-1], slope, sh_us, fit))
    else:
        text = ("shipping wins from chain position %s on (one-sided %.2f us per hop + %.1f us; "
                "shipped lookup %.1f us; straight-line break-even at %.1f hops)" % (
                    first, slope, icpt, sh_us, fit))
    return dict(first=first, fit=fit, round_us=slope, exec_us=sh_us, text=text)


def list_crossover(by, tr, call, st, sizes):
    """Where listing by strategy st (READDIR requests, or the readdir
    program) starts to beat the one-sided listing over transport tr: the
    first measured size from which st stays faster, with the times there."""
    have = [n for n in sizes if (tr, call, st, n) in by and (tr, call, "onesided", n) in by]
    first = "n/a"
    for i, n in enumerate(have):
        if all(by[(tr, call, st, m)] < by[(tr, call, "onesided", m)] for m in have[i:]):
            first = n
            break
    if not have:
        return dict(first=first, text="not enough rows")
    if first == "n/a":
        n = have[-1]
        text = "one-sided stays faster up to %d entries (%d: %.0f against %.0f us)" % (
            n, n, by[(tr, call, "onesided", n)], by[(tr, call, st, n)])
    else:
        text = "%s wins from %d entries on (%d: %.0f against %.0f us one-sided)" % (
            st, first, first, by[(tr, call, st, first)], by[(tr, call, "onesided", first)])
    return dict(first=first, text=text)


def fmt(v):
    if isinstance(v, float):
        if not math.isfinite(v):
            return "nan"
        return "%.4g" % v if abs(v) < 1e6 else "%.0f" % v
    return str(v)


def nice(v):
    if isinstance(v, float):
        if not math.isfinite(v):
            return "nan"
        if v >= 100:
            return "%.0f" % v
        if v >= 10:
            return "%.1f" % v
        return "%.2f" % v
    return str(v) if v != "" else ""


def table(rows, cols, sort_by_test):
    order = {t[0]: i for i, t in enumerate(sort_by_test)}
    rows = sorted(rows, key=lambda r: order.get(r["test"], 99))
    L = ["| " + " | ".join(c[0] for c in cols) + " |",
         "|" + "|".join("---" if i < 3 else "---:" for i in range(len(cols))) + "|"]
    for r in rows:
        L.append("| " + " | ".join(nice(r.get(c[1], "")) for c in cols) + " |")
    return L


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
    ap.add_argument("--keep-work", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: run as root (FUSE mount, ganesha, rpcbind)")
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
