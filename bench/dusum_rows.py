#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-du and arf-sum beside GNU du and sha256sum (issue 17's rows):

  * `du -s` of a tree of --files small files (default 100,000; 100 to a
    directory, 1-4 KiB each);
  * `sha256sum` of --mib MiB (default 1024) across --sum-files files
    (default 1,000);

each as: ARF's tool on the mount's path (the walk or the digests on arfd),
ARF's tool by arf:// URL, GNU's through the arf-fuse mount with a cold
client cache (the mount remounted before each round), GNU's on a copy in
tmpfs (the local limit).  For each row: the median of --rounds wall times
(and each round's), the client's rounds, executions and bytes crossed
(ARF's tools: their --stats; GNU through the mount: arfd's counters, as
arf-fuse is its only client then), and arfd's CPU time.  Outputs are
checked against GNU's on tmpfs (paths mapped).  Writes dusum.json and
dusum.md into --out.

  bench/dusum_rows.py --build build-bench --work DIR --out DIR
                      [--files N] [--mib M] [--sum-files N] [--rounds R]

`bench/run --walk` runs it.  Every process it starts is stopped by pid,
and the mount unmounted, even on failure."""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Group, bench_arfd, bench_mount, cpu_seconds, log, server_counters  # noqa: E402

ENV = dict(os.environ, LC_ALL="C")
for k in ("DU_BLOCK_SIZE", "BLOCK_SIZE", "BLOCKSIZE", "POSIXLY_CORRECT"):
    ENV.pop(k, None)


def make_du_tree(top, files):
    """files small files, 100 to a directory, 100 directories to a group."""
    for g, dname, fname, data in du_layout(files):
        d = os.path.join(top, g, dname)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data)


class ArfWriter:
    """Makes the trees on the server by arf:// URL with libarf (ctypes):
    one arf_create_write per file, many times faster than create, write
    and close through FUSE.  None when libarf is not in the build."""

    def __init__(self, build, url):
        import ctypes
        self.ct = ctypes
        lib = os.path.join(build, "arfclient", "libarf.so")
        self.lib = ctypes.CDLL(lib)
        self.c = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        r = self.lib.arf_connect(url.encode(), None, ctypes.byref(self.c), err, 512)
        if r < 0:
            raise RuntimeError("arf_connect %s: %s" % (url, err.value.decode()))
        self.lib.arf_create_write.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                              ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p,
                                              ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
        self.lib.arf_mkdir.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                       ctypes.c_char_p, ctypes.c_uint32, ctypes.c_void_p]
        self.lib.arf_root.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.arf_write.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                       ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.arf_write.restype = ctypes.c_ssize_t
        self.lib.arf_create.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                        ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int,
                                        ctypes.c_void_p]
        self.lib.arf_fsync.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32]
        self.lib.arf_close.argtypes = [ctypes.c_void_p]
        st = ctypes.create_string_buffer(128)
        self.check(self.lib.arf_root(self.c, st), "arf_root")
        self.root = self.handle(st)

    def check(self, r, what):
        if r < 0:
            raise RuntimeError("%s: %d" % (what, r))

    def handle(self, st):
        import struct
        return struct.unpack_from("<QI", st.raw)

    def mkdir(self, parent, name):
        st = self.ct.create_string_buffer(128)
        self.check(self.lib.arf_mkdir(self.c, parent[0], parent[1], name.encode(), 0o755, st),
                   "mkdir " + name)
        return self.handle(st)

    def put(self, parent, name, data):
        if len(data) <= (1 << 20):
            self.check(self.lib.arf_create_write(self.c, parent[0], parent[1], name.encode(), 0o644,
                                                 data, len(data), None, None), "create " + name)
            return
        st = self.ct.create_string_buffer(128)
        self.check(self.lib.arf_create(self.c, parent[0], parent[1], name.encode(), 0o644, 1, st),
                   "create " + name)
        h = self.handle(st)
        for off in range(0, len(data), 1 << 20):
            piece = data[off:off + (1 << 20)]
            if self.lib.arf_write(self.c, h[0], h[1], off, piece, len(piece)) != len(piece):
                raise RuntimeError("write " + name)

    def close(self):
        self.lib.arf_fsync(self.c, 0, 0)
        self.lib.arf_close(self.c)


def du_layout(files):
    """(group, directory, file name, bytes) of the du tree's files."""
    for i in range(files):
        yield ("g%03d" % (i // 10000), "d%04d" % (i // 100), "f%06d" % i,
               b"x" * (1024 + (i * 37) % 3072))


def make_du_tree_arf(wr, files):
    top = wr.mkdir(wr.root, "tree")
    groups, dirs = {}, {}
    for g, dname, fname, data in du_layout(files):
        if g not in groups:
            groups[g] = wr.mkdir(top, g)
        if (g, dname) not in dirs:
            dirs[(g, dname)] = wr.mkdir(groups[g], dname)
        wr.put(dirs[(g, dname)], fname, data)


def sum_layout(mib, n):
    each = (mib << 20) // n
    block = random.Random(17).randbytes(1 << 20)  # the same in the mount and in tmpfs
    for i in range(n):
        head = b"%08d" % i        # no two files alike
        body = (block * (each // len(block) + 1))[:max(0, each - len(head))]
        yield "s%04d" % i, (head + body)[:each]


def make_sum_files_arf(wr, mib, n):
    top = wr.mkdir(wr.root, "sums")
    for name, data in sum_layout(mib, n):
        wr.put(top, name, data)


def make_sum_files(top, mib, n):
    os.makedirs(top, exist_ok=True)
    for name, data in sum_layout(mib, n):
        with open(os.path.join(top, name), "wb") as f:
            f.write(data)


def stats_of(stderr):
    got = {"execs": 0, "rounds": 0, "requests": 0, "bytes_sent": 0, "bytes_received": 0}
    for m in re.finditer(rb"stats .*", stderr):
        for k in got:
            v = re.search(rb" " + k.encode() + rb" (\d+)", m.group(0))
            if v:
                got[k] += int(v.group(1))
    return got


def control(d, cmd):
    """arfd's answer to a control-socket command, as JSON (None on failure)."""
    import socket
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(d.control)
            s.sendall(cmd.encode() + b"\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)
    except (OSError, ValueError):
        return None


def clients_bytes(d):
    """Bytes arfd sent and received (its connections' counters), summed over its
    clients now connected (arf-fuse alone, in the GNU rows)."""
    total = 0

    def walk(o):
        nonlocal total
        if isinstance(o, dict):
            for k, v in o.items():
                if isinstance(v, (dict, list)):
                    walk(v)
                elif k in ("bytes_sent", "bytes_received") and isinstance(v, int):
                    total += v
        elif isinstance(o, list):
            for x in o:
                walk(x)
    walk(control(d, "clients"))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--sum-files", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    work = os.path.join(a.work, "dusum")
    os.makedirs(work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    arf_du = os.path.join(a.build, "tools", "arf-du", "arf-du")
    arf_sum = os.path.join(a.build, "tools", "arf-sum", "arf-sum")
    procs = Group(log=log)
    rows = []
    tmpfs = os.path.join("/dev/shm", "arf-dusum-%d" % os.getpid())
    try:
        blocks = (a.mib << 8) + 2 * a.files + (a.mib << 6) + 65536
        inodes = a.files + a.files // 100 + a.sum_files + 4096
        d = procs.add(bench_arfd(a.build, os.path.join(work, "arfd"), extra={
            "regions.data_blocks": str(blocks), "regions.inodes": str(inodes),
            "regions.dir_entries": str(inodes), "regions.dir_buckets": str(inodes),
            "regions.pages": str(max(4096, inodes // 8)), "export.sync": "false"}))
        m = procs.add(bench_mount(a.build, d, work))
        t0 = time.monotonic()
        log("dusum: %d files for du, %d MiB in %d files for sha256sum, in the mount and in tmpfs"
            % (a.files, a.mib, a.sum_files))
        try:
            wr = ArfWriter(a.build, d.url("/"))
        except (OSError, RuntimeError) as e:
            log("dusum: libarf by ctypes: %s; making the trees through the mount" % e)
            wr = None
        if wr:
            make_du_tree_arf(wr, a.files)
            make_sum_files_arf(wr, a.mib, a.sum_files)
            wr.close()
            m.remount()
        else:
            make_du_tree(os.path.join(m.path, "tree"), a.files)
            make_sum_files(os.path.join(m.path, "sums"), a.mib, a.sum_files)
        make_du_tree(os.path.join(tmpfs, "tree"), a.files)
        make_sum_files(os.path.join(tmpfs, "sums"), a.mib, a.sum_files)
        os.sync()
        log("dusum: made in %.0f s" % (time.monotonic() - t0))
        sum_names = ["sums/s%04d" % i for i in range(a.sum_files)]

        def measure(test, system, argv, cwd, want, cold=False, url_prefix=None, shipped=False):
            secs, crossed, rounds, execs, cpu = [], [], [], [], []
            for _ in range(a.rounds):
                if cold:
                    m.remount()
                st0 = d.stats()
                b0 = clients_bytes(d)
                c0 = cpu_seconds(d.pid)
                t = time.monotonic()
                p = subprocess.run(argv, cwd=cwd, capture_output=True, env=ENV, timeout=7200)
                secs.append(time.monotonic() - t)
                cpu.append(cpu_seconds(d.pid) - c0)
                out = p.stdout.replace(url_prefix.encode(), b"") if url_prefix else p.stdout
                if p.returncode != 0 or (want is not None and out != want):
                    raise RuntimeError("%s / %s: exit %d, output %r...: %s" % (
                        test, system, p.returncode, out[:200], p.stderr.decode()[-500:]))
                if shipped:
                    s = stats_of(p.stderr)
                    crossed.append(s["bytes_sent"] + s["bytes_received"])
                    rounds.append(s["rounds"] + s["requests"] + s["execs"])
                    execs.append(s["execs"])
                elif cwd.startswith(m.path):
                    st1 = d.stats()
                    c = [x1 - x0 for x0, x1 in zip(server_counters(st0 or {}),
                                                   server_counters(st1 or {}))]
                    crossed.append(clients_bytes(d) - b0)
                    rounds.append(c[1] + c[2] + c[3])
                    execs.append(c[2])
            r = {"test": test, "system": system, "seconds": statistics.median(secs),
                 "rounds_s": secs, "client_rounds": rounds[-1] if rounds else "",
                 "execs": execs[-1] if execs else "", "bytes_crossed": crossed[-1] if crossed else "",
                 "server_cpu_s": statistics.median(cpu) if cwd.startswith(m.path) or shipped else ""}
            rows.append(r)
            log("dusum: %-22s %-40s %8.3f s  rounds %8s  bytes %12s  execs %6s" % (
                test, system, r["seconds"], r["client_rounds"], r["bytes_crossed"], r["execs"]))
            return r

        want_du = subprocess.run(["du", "-s", "tree"], cwd=tmpfs, capture_output=True,
                                 env=ENV).stdout
        test = "du -s (%d files)" % a.files
        # tmpfs and ARF count blocks alike only if both give 4 KiB a small
        # file; the rows check ARF's tool against GNU's on the same mount
        want_du_arf = subprocess.run(["du", "-s", "tree"], cwd=m.path, capture_output=True,
                                     env=ENV).stdout
        measure(test, "arf-du on the mount", [arf_du, "--stats", "-s", "tree"], m.path,
                want_du_arf, shipped=True)
        measure(test, "arf-du by URL", [arf_du, "--stats", "-s", d.url("/tree")], m.path,
                want_du_arf, url_prefix=d.url("/"), shipped=True)
        measure(test, "GNU du, mount, cold cache", ["du", "-s", "tree"], m.path, want_du_arf,
                cold=True)
        measure(test, "GNU du on tmpfs", ["du", "-s", "tree"], tmpfs, want_du)
        want_sum = subprocess.run(["sha256sum"] + sum_names, cwd=tmpfs, capture_output=True,
                                  env=ENV).stdout
        test = "sha256sum (%d MiB, %d files)" % (a.mib, a.sum_files)
        measure(test, "arf-sum on the mount", [arf_sum, "--stats"] + sum_names, m.path, want_sum,
                shipped=True)
        measure(test, "arf-sum by URL", [arf_sum, "--stats"] + [d.url("/" + x) for x in sum_names],
                m.path, want_sum, url_prefix=d.url("/"), shipped=True)
        measure(test, "GNU sha256sum, mount, cold", ["sha256sum"] + sum_names, m.path, want_sum,
                cold=True)
        measure(test, "GNU sha256sum on tmpfs", ["sha256sum"] + sum_names, tmpfs, want_sum)
    finally:
        procs.stop_all()
        shutil.rmtree(tmpfs, ignore_errors=True)
    with open(os.path.join(a.out, "dusum.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(a.out, "dusum.md"), "w") as f:
        f.write("| test | system | seconds (median) | rounds | bytes crossed | runs | arfd CPU s |\n")
        f.write("|---|---|---:|---:|---:|---:|---:|\n")
        for r in rows:
            f.write("| %s | %s | %.3f | %s | %s | %s | %s |\n" % (
                r["test"], r["system"], r["seconds"], r["client_rounds"], r["bytes_crossed"],
                r["execs"], "%.2f" % r["server_cpu_s"] if r["server_cpu_s"] != "" else ""))
    log("dusum: wrote %s" % os.path.join(a.out, "dusum.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
