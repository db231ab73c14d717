#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a write costs arfd, for each way of storing file data (issue 15,
point 2): the data log (arfd/datalog.c, the default) against RocksDB's
integrated BlobDB ([server] test_blob_store).

For each store, one arfd (a release build; its data directory on a disk,
not tmpfs) and one libarf client (ctypes over libarf.so, tcp): a file is
written whole (SIZE MiB in 1 MiB writes, then a COMMIT), then overwritten
in place twice the same way.  Per pass: arfd's CPU time (utime + stime from
/proc, as getrusage counts it) per MiB, the RocksDB write-batch bytes per
MiB (the WAL's payload: arfd's store.wal_bytes), arfd's write() bytes per
MiB (/proc/PID/io wchar: WAL, data log, flushes and compactions alike).
After the three passes and `arfctl checkpoint` (everything durable, RocksDB
compacted; the data log reclaims after each sync), the data directory's
size against the file's: the space that overwrites left behind.

The first pass also pays for the region's memory: every 4 KiB page of the
data region is touched for the first time (the kernel allocates and
clears it; ~1.2 ms per MiB on the 2-core VM of the committed results,
whatever arfd does), so the overwrite passes are the cost of a write.

  bench/writecost.py [--build DIR] [--mib N] [--dir DIR] [--spin-us N]
                     [--stores log,blob] [--out FILE.md]

--build: a release build (default build-bench, else build-rel); --dir: where
the data directories go (default /var/tmp: a disk here); --spin-us: arfd's
polling before it sleeps (default 0: a spinning arfd counts its wait as
CPU); --out: also write the table as Markdown."""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import arfproc  # noqa: E402

MIB = 1 << 20


class Stat(ctypes.Structure):
    _fields_ = [("ino", ctypes.c_uint64), ("gen", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("nlink", ctypes.c_uint32), ("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32),
                ("size", ctypes.c_uint64), ("blocks", ctypes.c_uint64),
                ("atime_ns", ctypes.c_int64), ("mtime_ns", ctypes.c_int64),
                ("ctime_ns", ctypes.c_int64), ("rdev", ctypes.c_uint64)]


def libarf(build):
    lib = ctypes.CDLL(os.path.join(build, "arfclient", "libarf.so"))
    lib.arf_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                ctypes.c_char_p, ctypes.c_size_t]
    lib.arf_root.argtypes = [ctypes.c_void_p, ctypes.POINTER(Stat)]
    lib.arf_create.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_char_p,
                               ctypes.c_uint32, ctypes.c_int, ctypes.POINTER(Stat)]
    lib.arf_write.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64,
                              ctypes.c_char_p, ctypes.c_size_t]
    lib.arf_write.restype = ctypes.c_ssize_t
    lib.arf_fsync.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32]
    lib.arf_close.argtypes = [ctypes.c_void_p]
    return lib


def wchar(pid):
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def du(path):
    total = 0
    for base, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(base, f)).st_blocks * 512
            except OSError:
                pass
    return total


def measure(store, args, lib):
    work = tempfile.mkdtemp(prefix="arf-writecost-", dir=args.dir)
    blocks = args.mib * 256 * 5 // 4 + 4096
    extra = {"regions.data_blocks": str(blocks), "regions.inodes": "4096",
             "regions.pages": "4096", "export.root_squash": "false"}
    if store == "blob":
        extra["server.test_blob_store"] = "true"
    d = arfproc.Arfd(workdir=work, sync=False, extra=extra, spin_us=args.spin_us,
                     bin=os.path.join(args.build, "arfd", "arfd"))
    rows = []
    try:
        d.start()
        c = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        if lib.arf_connect(d.url("/").encode(), None, ctypes.byref(c), err, 512):
            raise RuntimeError("connect: " + err.value.decode())
        root, f = Stat(), Stat()
        if lib.arf_root(c, ctypes.byref(root)) or \
           lib.arf_create(c, root.ino, root.gen, b"big", 0o644, 0, ctypes.byref(f)):
            raise RuntimeError("create failed")
        chunk = os.urandom(MIB)
        for name in ("first write", "overwrite", "overwrite again"):
            s0, c0, w0, t0 = d.stats(), arfproc.cpu_seconds(d.pid), wchar(d.pid), time.monotonic()
            for i in range(args.mib):
                if lib.arf_write(c, f.ino, f.gen, i * MIB, chunk, MIB) != MIB:
                    raise RuntimeError("write failed")
            if lib.arf_fsync(c, f.ino, f.gen):
                raise RuntimeError("commit failed")
            t1, c1, w1, s1 = time.monotonic(), arfproc.cpu_seconds(d.pid), wchar(d.pid), d.stats()
            rows.append({"store": store, "pass": name, "mib": args.mib,
                         "cpu_ms_per_mib": (c1 - c0) * 1000 / args.mib,
                         "wal_bytes_per_mib": (s1["store"]["wal_bytes"] -
                                               s0["store"]["wal_bytes"]) / args.mib,
                         "written_bytes_per_mib": (w1 - w0) / args.mib,
                         "mib_s": args.mib / (t1 - t0)})
            print("%-5s %-16s %6.3f ms CPU/MiB  WAL %9.0f B/MiB  write() %9.0f B/MiB  %6.0f MiB/s"
                  % (store, name, rows[-1]["cpu_ms_per_mib"], rows[-1]["wal_bytes_per_mib"],
                     rows[-1]["written_bytes_per_mib"], rows[-1]["mib_s"]), flush=True)
        lib.arf_close(c)
        before = du(d.data_dir)
        cp = subprocess.run([os.path.join(args.build, "tools", "arfctl", "arfctl"), "--control",
                             d.control, "checkpoint"], capture_output=True)
        if cp.returncode:
            raise RuntimeError("checkpoint: " + cp.stderr.decode())
        time.sleep(2)  # RocksDB's background work after the compaction
        after = du(d.data_dir)
        st = d.stats()
        space = {"store": store, "pass": "space", "file_mib": args.mib,
                 "written_mib": 3 * args.mib, "dir_mib_before_checkpoint": before / MIB,
                 "dir_mib": after / MIB,
                 "reclaimed_mib": st["store"]["log_reclaimed_bytes"] / MIB}
        rows.append(space)
        print("%-5s space: %d MiB file written 3 times: data directory %.0f MiB (%.0f before "
              "the checkpoint)%s" % (store, args.mib, after / MIB, before / MIB,
                                     ", data log reclaimed %.0f MiB" % space["reclaimed_mib"]
                                     if store == "log" else ""), flush=True)
    finally:
        d.stop()
        subprocess.run(["rm", "-rf", work])
    return rows


def markdown(rows, args):
    out = ["| store | pass | arfd CPU ms/MiB | WAL bytes/MiB | arfd write() bytes/MiB | MiB/s |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        if r["pass"] == "space":
            continue
        out.append("| %s | %s | %.3f | %.0f | %.0f | %.0f |" % (
            "data log" if r["store"] == "log" else "BlobDB", r["pass"], r["cpu_ms_per_mib"],
            r["wal_bytes_per_mib"], r["written_bytes_per_mib"], r["mib_s"]))
    out += ["", "| store | written | file | data directory after checkpoint | reclaimed by the log |",
            "|---|---|---|---|---|"]
    for r in rows:
        if r["pass"] == "space":
            out.append("| %s | %d MiB | %d MiB | %.0f MiB (%.0f before) | %s |" % (
                "data log" if r["store"] == "log" else "BlobDB", r["written_mib"], r["file_mib"],
                r["dir_mib"], r["dir_mib_before_checkpoint"],
                "%.0f MiB" % r["reclaimed_mib"] if r["store"] == "log" else "-"))
    return "\n".join(out) + "\n"


def release_build(given):
    """The release build to measure: given, else build-bench, else build-rel."""
    if given:
        return given
    for b in ("build-bench", "build-rel"):
        if os.path.exists(os.path.join(ROOT, b, "arfd", "arfd")):
            return os.path.join(ROOT, b)
    sys.exit("no release build: meson setup build-rel --buildtype=release -Dtests=false")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=None)
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--dir", default="/var/tmp")
    p.add_argument("--spin-us", type=int, default=0)
    p.add_argument("--stores", default="log,blob")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.build = release_build(args.build)
    lib = libarf(args.build)
    rows = []
    for store in args.stores.split(","):
        rows += measure(store, args, lib)
    md = markdown(rows, args)
    print(md)
    if args.out:
        with open(args.out, "w") as f:
            f.write("%s\n\n%s" % (
                "bench/writecost.py --mib %d --spin-us %d, %s, data directories in %s, %s" % (
                    args.mib, args.spin_us, os.path.basename(args.build), args.dir,
                    time.strftime("%Y-%m-%d")), md))
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
