#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The costs that decide replicated volumes with fail-over (issue 18,
point 8; docs/failover.md reads them), measured on this machine:

1. etcd through its JSON gateway over loopback, as cell/etcd.c calls it
   (one kept-alive HTTP connection, JSON bodies): a CAS transaction
   (compare mod_revision, put), a lease grant, a lease keepalive;
   p50/p99.  etcd's data directory is on DIR (a disk: every write is an
   fsync of etcd's WAL).
2. Detection: a lease of TTL 1, 2, 5 s renewed once and then left alone:
   the TTL etcd granted (its minimum is 3/2 election timeouts, rounded up:
   2 s with etcd's defaults) and the time from the last renewal until a
   watcher of the key it carried sees the DELETE; and TTL 1 again on an
   etcd with a 100 ms election timeout (which grants 1 s).
3. The stream: what one transaction of arfd writes (arfd_store_put_txn:
   the RocksDB batch, store.wal_bytes, and the data log's records,
   store.log_appended_bytes) per create, 4 KiB write, 1 MiB write and
   unlink, from arfd's counters (transactions: applied_seq).
4. One more round trip to a backup: a 64 B, 4 KiB and 1 MiB payload sent
   over loopback TCP to another process that answers an 8-byte ack
   (TCP_NODELAY; both ends in C, compiled with cc at run time, and in
   Python); and write + fdatasync of 4 KiB and 1 MiB on DIR and on
   /dev/shm (tmpfs).
5. arfd's start from its data directory: empty, and with FILES 4 KiB
   files and one file of MIB MiB (and with each alone), after a clean stop
   (SIGTERM), the same with the data directory's files dropped from the
   page cache (posix_fadvise), and after SIGKILL; from exec to the port
   file (arfd serving).

  bench/failover_costs.py [--short] [--build DIR] [--dir DIR] [--out FILE.md]

--short: fewer repetitions and a smaller volume (under 60 s); not in CI."""
import argparse
import base64
import ctypes
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)
import arfproc  # noqa: E402
from writecost import Stat, libarf, release_build  # noqa: E402

MIB = 1 << 20


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def us(xs):
    return "%.0f / %.0f" % (pct(xs, 50) * 1e6, pct(xs, 99) * 1e6)


def b64(s):
    return base64.b64encode(s if isinstance(s, bytes) else s.encode()).decode()


# ---------------------------------------------------------------- etcd

class Gateway:
    """One kept-alive connection to etcd's JSON gateway."""

    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, path, body):
        self.c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = self.c.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError("etcd %s: %d %s" % (path, r.status, data[:200]))
        return json.loads(data)


def etcd_ops(port, n):
    g = Gateway(port)
    key = b64("/arf/bench/volume")
    rev = int(g.call("/v3/kv/put", {"key": key, "value": b64("v0")})["header"]["revision"])
    cas, grant, keep = [], [], []
    for i in range(n):
        t = time.perf_counter()
        r = g.call("/v3/kv/txn", {
            "compare": [{"key": key, "target": "MOD", "result": "EQUAL", "mod_revision": rev}],
            "success": [{"request_put": {"key": key, "value": b64("server-%d" % i)}}]})
        cas.append(time.perf_counter() - t)
        if not r.get("succeeded"):
            raise RuntimeError("CAS failed at %d" % i)
        rev = int(r["header"]["revision"])
    ids = []
    for i in range(n):
        t = time.perf_counter()
        r = g.call("/v3/lease/grant", {"TTL": 30})
        grant.append(time.perf_counter() - t)
        ids.append(r["ID"])
    for i in range(n):
        t = time.perf_counter()
        r = g.call("/v3/lease/keepalive", {"ID": ids[0]})
        keep.append(time.perf_counter() - t)
        if int(r["result"]["TTL"]) <= 0:
            raise RuntimeError("keepalive: lease gone")
    for i in ids:
        g.call("/v3/lease/revoke", {"ID": i})
    return {"cas": cas, "grant": grant, "keepalive": keep}


def expiry_one(port, ttl, idx, out):
    """A lease of ttl renewed once, then left to expire; out gets (granted
    TTL, seconds from the last renewal to the watcher's DELETE)."""
    try:
        time.sleep(random.random() * 0.5)  # not in step with etcd's expiry check
        g = Gateway(port)
        key = b64("/arf/bench/holder-%d-%d" % (ttl, idx))
        r = g.call("/v3/lease/grant", {"TTL": ttl})
        lease, granted = r["ID"], int(r["TTL"])
        rev = int(g.call("/v3/kv/put", {"key": key, "value": b64("x"),
                                         "lease": lease})["header"]["revision"])
        w = http.client.HTTPConnection("127.0.0.1", port, timeout=ttl + 30)
        w.request("POST", "/v3/watch", json.dumps(
            {"create_request": {"key": key, "start_revision": rev + 1}}),
            {"Content-Type": "application/json"})
        resp = w.getresponse()
        resp.readline()  # {"result": {"created": true ...}}
        t0 = time.monotonic()
        g.call("/v3/lease/keepalive", {"ID": lease})
        t0 = (t0 + time.monotonic()) / 2
        while True:
            line = resp.readline()
            if not line:
                raise RuntimeError("watch ended")
            try:
                ev = json.loads(line).get("result", {}).get("events", [])
            except ValueError:
                continue
            if any(e.get("type") == "DELETE" for e in ev):
                out.append((granted, time.monotonic() - t0))
                break
        w.close()
    except Exception as e:  # reported, the others go on
        out.append((ttl, "error: %s" % e))


def etcd_expiry(port, ttls, reps):
    res = {t: [] for t in ttls}
    th = [threading.Thread(target=expiry_one, args=(port, t, i, res[t]))
          for t in ttls for i in range(reps)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return res


# ---------------------------------------------------------------- the stream

def stream_sizes(lib, d, n_small, n_big):
    c = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    if lib.arf_connect(d.url("/").encode(), None, ctypes.byref(c), err, 512):
        raise RuntimeError("connect: " + err.value.decode())
    root = Stat()
    lib.arf_root(c, ctypes.byref(root))
    rows = []

    def measure(name, n, fn):
        s0 = d.stats()
        t = time.perf_counter()
        for i in range(n):
            fn(i)
        el = time.perf_counter() - t
        s1 = d.stats()
        txns = s1["applied_seq"] - s0["applied_seq"]
        wal = s1["store"]["wal_bytes"] - s0["store"]["wal_bytes"]
        log = s1["store"]["log_appended_bytes"] - s0["store"]["log_appended_bytes"]
        rows.append(dict(op=name, n=n, txns_per_op=txns / n, wal_per_op=wal / n,
                         log_per_op=log / n, us_per_op=el / n * 1e6))

    f = Stat()
    if lib.arf_create(c, root.ino, root.gen, b"data", 0o644, 0, ctypes.byref(f)):
        raise RuntimeError("create failed")
    lib.arf_fsync(c, f.ino, f.gen)
    st = Stat()

    def create(i):
        if lib.arf_create(c, root.ino, root.gen, b"f%06d" % i, 0o644, 0, ctypes.byref(st)):
            raise RuntimeError("create failed")

    def unlink(i):
        if lib.arf_unlink(c, root.ino, root.gen, b"f%06d" % i):
            raise RuntimeError("unlink failed")
    small, big = os.urandom(4096), os.urandom(MIB)

    def w4k(i):  # the first pass grows the file, the second overwrites it
        if lib.arf_write(c, f.ino, f.gen, i * 4096, small, 4096) != 4096:
            raise RuntimeError("write failed")

    def w1m(i):
        if lib.arf_write(c, f.ino, f.gen, 64 * MIB + i * MIB, big, MIB) != MIB:
            raise RuntimeError("write failed")

    def commit(i):
        if lib.arf_fsync(c, f.ino, f.gen):
            raise RuntimeError("commit failed")
    measure("create", n_small, create)
    measure("4 KiB write (new block)", n_small, w4k)
    commit(0)
    measure("4 KiB write (overwrite)", n_small, w4k)
    commit(0)
    measure("1 MiB write (new blocks)", n_big, w1m)
    measure("COMMIT after them", 1, commit)
    measure("unlink", n_small, unlink)
    lib.arf_close(c)
    return rows


# ---------------------------------------------------------------- round trip and disk

ACK_SERVER = r"""
import socket, struct, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = bytearray(1 << 21); mv = memoryview(buf)
while True:
    h = c.recv(8, socket.MSG_WAITALL)
    if len(h) < 8: break
    n = struct.unpack("<Q", h)[0]; got = 0
    while got < n:
        k = c.recv_into(mv[:n - got])
        if not k: sys.exit(0)
        got += k
    c.sendall(h)
"""


HOP_C = r"""
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static int full(int fd, void *b, size_t n, int rd)
{
	for (size_t d = 0; d < n;) {
		ssize_t k = rd ? read(fd, (char *)b + d, n - d) : write(fd, (char *)b + d, n - d);
		if (k <= 0)
			return -1;
		d += (size_t)k;
	}
	return 0;
}
int main(int argc, char **argv)
{
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), n = argc - 2;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t al = sizeof(a);
	static char buf[1 << 21];
	bind(ls, (void *)&a, sizeof(a));
	listen(ls, 1);
	getsockname(ls, (void *)&a, &al);
	if (!fork()) {
		int c = accept(ls, NULL, NULL);
		uint64_t h;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (!full(c, &h, 8, 1) && !full(c, buf, h, 1) && !full(c, &h, 8, 0))
			;
		_exit(0);
	}
	int s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(s, (void *)&a, sizeof(a)))
		return 1;
	int reps = atoi(argv[1]);
	for (int i = 0; i < n; i++) {
		uint64_t size = strtoull(argv[2 + i], NULL, 0), h;
		for (int r = 0; r < reps + 5; r++) {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			memcpy(buf, &size, 8);
			if (full(s, buf, 8 + size, 0) || full(s, &h, 8, 1))
				return 1;
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (r >= 5)
				printf("%llu %.9f\n", (unsigned long long)size,
				       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		}
	}
	close(s);
	wait(NULL);
	return 0;
}
"""


def round_trips_c(sizes):
    """round_trips in C (cc -O2, both ends), or None without a compiler."""
    tmp = tempfile.mkdtemp(prefix="arf-hop-")
    try:
        with open(os.path.join(tmp, "hop.c"), "w") as f:
            f.write(HOP_C)
        if subprocess.run(["cc", "-O2", "-o", os.path.join(tmp, "hop"),
                           os.path.join(tmp, "hop.c")], capture_output=True).returncode:
            return None
        res = {}
        for size, n in sizes:
            p = subprocess.run([os.path.join(tmp, "hop"), str(n), str(size)],
                               capture_output=True, text=True, timeout=120)
            res[size] = [float(line.split()[1]) for line in p.stdout.split("\n") if line]
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def round_trips(sizes):
    p = subprocess.Popen([sys.executable, "-c", ACK_SERVER], stdout=subprocess.PIPE)
    try:
        port = int(p.stdout.readline())
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        res = {}
        for size, n in sizes:
            payload = (size).to_bytes(8, "little") + os.urandom(size)
            xs = []
            for i in range(n + 5):
                t = time.perf_counter()
                s.sendall(payload)
                if len(s.recv(8, socket.MSG_WAITALL)) != 8:
                    raise RuntimeError("ack server went away")
                if i >= 5:
                    xs.append(time.perf_counter() - t)
            res[size] = xs
        s.close()
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return res


def fsyncs(dirs, sizes):
    res = {}
    for d in dirs:
        path = os.path.join(tempfile.mkdtemp(prefix="arf-fsync-", dir=d), "log")
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
        try:
            for size, n in sizes:
                buf = os.urandom(size)
                xs = []
                for i in range(n):
                    t = time.perf_counter()
                    os.write(fd, buf)
                    os.fdatasync(fd)
                    xs.append(time.perf_counter() - t)
                res[(d, size)] = xs
        finally:
            os.close(fd)
            shutil.rmtree(os.path.dirname(path))
    return res


# ---------------------------------------------------------------- restart

def timed_start(d):
    t = time.monotonic()
    d.start(timeout=300)
    return time.monotonic() - t


def drop_cache(path):
    """Our own files out of the page cache (their pages written back, then
    dropped): a start that reads them from the disk, as a standby would."""
    for base, _, names in os.walk(path):
        for n in names:
            try:
                fd = os.open(os.path.join(base, n), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
            finally:
                os.close(fd)


def restarts(lib, args, files, mib, reps, empty=True, size=None):
    """Start times of an arfd whose regions hold size = (files, MiB) (default
    files, mib), filled with files 4 KiB files and a file of mib MiB."""
    rf, rm = size or (files, mib)
    regions = {"regions.inodes": str(max(4096, rf * 3 // 2)),
               "regions.dir_buckets": str(max(4096, rf)),
               "regions.dir_entries": str(max(4096, rf * 3 // 2)),
               "regions.pages": "4096",
               "regions.data_blocks": str(rm * 256 + rf + 4096)}
    out = {}
    work = tempfile.mkdtemp(prefix="arf-failover-", dir=args.dir)
    d = arfproc.Arfd(workdir=work, sync=False, regions=regions,
                     bin=os.path.join(args.build, "arfd", "arfd"))
    try:
        if empty:
            out["first start (format)"] = [timed_start(d)]
            d.stop()
            out["empty, after SIGTERM"] = []
            for i in range(reps):
                out["empty, after SIGTERM"].append(timed_start(d))
                d.stop()
        d.start(timeout=300)
        c = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        if lib.arf_connect(d.url("/").encode(), None, ctypes.byref(c), err, 512):
            raise RuntimeError("connect: " + err.value.decode())
        root, st = Stat(), Stat()
        lib.arf_root(c, ctypes.byref(root))
        small, big = os.urandom(4096), os.urandom(MIB)
        t = time.monotonic()
        for i in range(files):
            if lib.arf_create_write(c, root.ino, root.gen, b"f%06d" % i, 0o644, small, 4096,
                                    None, ctypes.byref(st)):
                raise RuntimeError("create_write failed")
        if lib.arf_create(c, root.ino, root.gen, b"big", 0o644, 0, ctypes.byref(st)):
            raise RuntimeError("create failed")
        for i in range(mib):
            if lib.arf_write(c, st.ino, st.gen, i * MIB, big, MIB) != MIB:
                raise RuntimeError("write failed")
        if lib.arf_fsync(c, st.ino, st.gen):
            raise RuntimeError("commit failed")
        out["fill"] = time.monotonic() - t
        lib.arf_close(c)
        d.stop()
        key = "%d files + %d MiB, after SIGTERM" % (files, mib)
        out[key] = []
        for i in range(reps):
            out[key].append(timed_start(d))
            d.stop()
        key = "%d files + %d MiB, after SIGTERM, its files out of the page cache" % (files, mib)
        out[key] = []
        for i in range(reps):
            drop_cache(d.data_dir)
            out[key].append(timed_start(d))
            d.stop()
        key = "%d files + %d MiB, after SIGKILL" % (files, mib)
        out[key] = []
        for i in range(reps):
            out[key].append(timed_start(d))
            d.kill()
    finally:
        d.stop()
        shutil.rmtree(work, ignore_errors=True)
    return out


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--short", action="store_true")
    p.add_argument("--build", default=None)
    p.add_argument("--dir", default="/var/tmp")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.build = release_build(args.build)
    if arfproc.etcd_skip_reason():
        sys.exit(arfproc.etcd_skip_reason())
    lib = libarf(args.build)
    lib.arf_unlink.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_char_p]
    lib.arf_create_write.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                     ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p,
                                     ctypes.c_size_t, ctypes.c_void_p, ctypes.POINTER(Stat)]
    short = args.short
    n_etcd = 200 if short else 500
    reps = 2 if short else 5
    files, mib = (1000, 32) if short else (10000, 256)
    md = ["bench/failover_costs.py%s, %s, data directories in %s, %s, %s; a 2-core machine "
          "shared with other builds" % (" --short" if short else "",
                                        os.path.basename(args.build), args.dir,
                                        subprocess.run(["etcd", "--version"], capture_output=True,
                                                       text=True).stdout.split("\n")[0],
                                        time.strftime("%Y-%m-%d")), ""]
    T0 = time.monotonic()

    work = tempfile.mkdtemp(prefix="arf-failover-etcd-", dir=args.dir)
    e = arfproc.Etcd(work)
    try:
        e.start()
        ops = etcd_ops(e.port, n_etcd)
        exp = etcd_expiry(e.port, [1, 2, 5], reps)
    finally:
        e.stop()
        shutil.rmtree(work, ignore_errors=True)
    # the floor: an election timeout short enough that etcd grants 1 s
    work = tempfile.mkdtemp(prefix="arf-failover-etcd-", dir=args.dir)
    e = arfproc.Etcd(work, args=["--heartbeat-interval", "10", "--election-timeout", "100"])
    try:
        e.start()
        fast = etcd_expiry(e.port, [1], reps)
    finally:
        e.stop()
        shutil.rmtree(work, ignore_errors=True)
    md += ["| etcd call (JSON gateway, loopback, %d each) | p50 / p99 us |" % n_etcd, "|---|---|"]
    for k, name in (("cas", "CAS txn (compare mod_revision, put)"), ("grant", "lease grant"),
                    ("keepalive", "lease keepalive")):
        md.append("| %s | %s |" % (name, us(ops[k])))
    md += ["", "| lease TTL asked | granted | last renewal -> watcher sees DELETE, s "
           "(median, min-max of %d) |" % reps, "|---|---|---|"]
    for t, xs in list(exp.items()) + [("1 (election 100 ms)", fast[1])]:
        ok = [x for x in xs if not isinstance(x[1], str)]
        bad = [x[1] for x in xs if isinstance(x[1], str)]
        if ok:
            ds = [x[1] for x in ok]
            md.append("| %s s | %d s | %.2f (%.2f-%.2f)%s |" % (
                t, ok[0][0], statistics.median(ds), min(ds), max(ds),
                (" " + "; ".join(bad)) if bad else ""))
        else:
            md.append("| %s s | - | %s |" % (t, "; ".join(bad)))
    print("\n".join(md), flush=True)

    # the stream
    work = tempfile.mkdtemp(prefix="arf-failover-stream-", dir=args.dir)
    d = arfproc.Arfd(workdir=work, sync=False, bin=os.path.join(args.build, "arfd", "arfd"))
    try:
        d.start(timeout=120)
        rows = stream_sizes(lib, d, 200 if short else 1000, 16 if short else 64)
    finally:
        d.stop()
        shutil.rmtree(work, ignore_errors=True)
    part = ["", "| operation (unstable export) | n | transactions/op | RocksDB batch B/op | "
            "data log B/op | stream B/op | us/op (libarf, tcp) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        part.append("| %s | %d | %.2f | %.0f | %.0f | %.0f | %.0f |" % (
            r["op"], r["n"], r["txns_per_op"], r["wal_per_op"], r["log_per_op"],
            r["wal_per_op"] + r["log_per_op"], r["us_per_op"]))
    print("\n".join(part), flush=True)
    md += part

    sizes = [(64, 1000 if not short else 300), (4096, 1000 if not short else 300),
             (MIB, 200 if not short else 50)]
    rt = round_trips(sizes)
    rtc = round_trips_c(sizes)
    fs = fsyncs([args.dir, "/dev/shm"], [(4096, 200 if not short else 50),
                                         (MIB, 50 if not short else 15)])
    part = ["", "| one more hop | p50 / p99 us |", "|---|---|"]
    for lang, res in (("C", rtc), ("Python", rt)):
        for size, xs in (res or {}).items():
            part.append("| loopback TCP ship + 8-byte ack, %s (%s, 2 processes) | %s |" % (
                "%d B" % size if size < 4096 else ("4 KiB" if size == 4096 else "1 MiB"), lang,
                us(xs)))
    for (dd, size), xs in fs.items():
        part.append("| write %s + fdatasync, %s | %s |" % (
            "4 KiB" if size == 4096 else "1 MiB",
            "%s (tmpfs)" % dd if dd == "/dev/shm" else "%s (disk)" % dd, us(xs)))
    print("\n".join(part), flush=True)
    md += part

    rs = restarts(lib, args, files, mib, reps)
    fill = rs["fill"]
    for k, v in restarts(lib, args, files, 0, reps, False, (files, mib)).items():
        rs.setdefault(k, v)
    for k, v in restarts(lib, args, 0, mib, reps, False, (files, mib)).items():
        rs.setdefault(k, v)
    rs["fill"] = fill
    part = ["", "| arfd start from its data directory (regions for %d files, %d MiB) | "
            "exec -> serving, s (median, min-max) |" % (files, mib), "|---|---|"]
    for k, v in rs.items():
        if k == "fill":
            continue
        part.append("| %s | %.2f (%.2f-%.2f) |" % (k, statistics.median(v), min(v), max(v)))
    part.append("")
    part.append("(filling the volume through libarf took %.1f s; the whole run %.0f s)" % (
        rs["fill"], time.monotonic() - T0))
    print("\n".join(part), flush=True)
    md += part
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
