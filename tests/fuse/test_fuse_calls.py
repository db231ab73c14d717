#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Calls that tools use (issue 16, point 8): fallocate (default mode,
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE; the other modes EOPNOTSUPP),
SEEK_DATA / SEEK_HOLE (a 10 GiB sparse file is not all data, and cp copies
it sparse), and renameat2's RENAME_EXCHANGE and RENAME_NOREPLACE through
the mount, each checked on a second mount too.  And (point 9) the command
forms the README shows: its demo block run as written against a test
arfd and mount (getfattr -n, not -d: the user.arf.* attributes are
deliberately not listed), arfctl's options after the subcommand, and the
hard/soft options in --help, mount.arf and an fstab-style option string."""
import ctypes
import errno
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import ARF_FUSE, BUILD, MOUNT_ARF, FuseTestCase, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARFCTL = os.path.join(BUILD, "tools", "arfctl", "arfctl")

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_ZERO_RANGE = 0x10
FALLOC_FL_COLLAPSE_RANGE = 0x08
SEEK_DATA, SEEK_HOLE = 3, 4
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
AT_FDCWD = -100
BS = 4096
GiB = 1 << 30

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.c_uint]


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def renameat2(a, b, flags):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


class Fallocate(FuseTestCase):
    def requests(self, kind):
        return (self.arfd.stats() or {}).get("requests", {}).get(kind, 0)

    def test_default_mode_preallocates_and_extends(self):
        path = self.mnt.p("pre")
        write_file(path, b"head")
        writes, fallocs = self.requests("write"), self.requests("fallocate")
        fd = os.open(path, os.O_RDWR)
        try:
            t = time.monotonic()
            os.posix_fallocate(fd, 0, 64 << 20)
            took = time.monotonic() - t
            st = os.fstat(fd)
        finally:
            os.close(fd)
        self.assertEqual(st.st_size, 64 << 20)
        self.assertGreaterEqual(st.st_blocks * 512, 64 << 20)
        # glibc's fallback would have written a byte per block: one request each
        self.assertLess(self.requests("write") - writes, 4)
        self.assertGreater(self.requests("fallocate"), fallocs)
        data = read_file(self.mnt.p("pre"))
        self.assertEqual(data[:4], b"head")
        self.assertEqual(data[4:].count(0), len(data) - 4)
        other = self.mount()
        self.assertEqual(os.stat(other.p("pre")).st_size, 64 << 20)
        print("posix_fallocate of 64 MiB: %.2f s, one fallocate request per 64 MiB, no "
              "writes; size and blocks set, bytes read as zeros, the old head kept" % took)

    def test_keep_size_and_punch_hole(self):
        path = self.mnt.p("f")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20)
            st = os.fstat(fd)
            self.assertEqual(st.st_size, 0)
            self.assertGreaterEqual(st.st_blocks * 512, 1 << 20)
            os.write(fd, b"x" * (1 << 20))  # into the preallocated blocks
            blocks = os.fstat(fd).st_blocks
            # a hole from the middle of block 10 to the middle of block 20
            off, length = 10 * BS + 100, 10 * BS
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, length)
            st = os.fstat(fd)
            self.assertEqual(st.st_size, 1 << 20)
            self.assertEqual(st.st_blocks, blocks - 9 * BS // 512)  # blocks 11..19 freed
            data = os.pread(fd, 1 << 20, 0)
            self.assertEqual(data[:off], b"x" * off)
            self.assertEqual(data[off:off + length], bytes(length))
            self.assertEqual(data[off + length:], b"x" * ((1 << 20) - off - length))
            self.assertEqual(os.lseek(fd, 0, SEEK_HOLE), 11 * BS)
            self.assertEqual(os.lseek(fd, 11 * BS, SEEK_DATA), 20 * BS)
            for mode, name in ((FALLOC_FL_PUNCH_HOLE, "PUNCH_HOLE without KEEP_SIZE"),
                               (FALLOC_FL_ZERO_RANGE, "ZERO_RANGE"),
                               (FALLOC_FL_COLLAPSE_RANGE, "COLLAPSE_RANGE")):
                with self.assertRaises(OSError, msg=name) as cm:
                    fallocate(fd, mode, 0, BS)
                self.assertEqual(cm.exception.errno, errno.EOPNOTSUPP, name)
        finally:
            os.close(fd)
        other = self.mount()
        self.assertEqual(read_file(other.p("f"))[off:off + length], bytes(length))
        print("KEEP_SIZE preallocates 1 MiB at size 0; PUNCH_HOLE frees the 9 whole blocks "
              "and zeroes the edges (seen on the other mount); ZERO_RANGE, COLLAPSE_RANGE and "
              "a punch without KEEP_SIZE: EOPNOTSUPP")


class SeekDataHole(FuseTestCase):
    def test_sparse_10_gib_file(self):
        path = self.mnt.p("sparse")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 10 * GiB)
            os.pwrite(fd, b"data" * 1024, 5 * GiB)
            os.pwrite(fd, b"tail", 10 * GiB - 4)
            self.assertEqual(os.lseek(fd, 0, SEEK_DATA), 5 * GiB)
            self.assertEqual(os.lseek(fd, 0, SEEK_HOLE), 0)
            self.assertEqual(os.lseek(fd, 5 * GiB, SEEK_HOLE), 5 * GiB + BS)
            self.assertEqual(os.lseek(fd, 5 * GiB + BS, SEEK_DATA), 10 * GiB - BS)
            self.assertEqual(os.lseek(fd, 10 * GiB - 1, SEEK_HOLE), 10 * GiB)
            with self.assertRaises(OSError) as cm:
                os.lseek(fd, 10 * GiB, SEEK_DATA)
            self.assertEqual(cm.exception.errno, errno.ENXIO)
            self.assertLess(os.fstat(fd).st_blocks * 512, 1 << 20)
        finally:
            os.close(fd)
        cp = shutil.which("cp")
        with tempfile.TemporaryDirectory(prefix="arf-sparse-") as tmp:
            dst = os.path.join(tmp, "copy")
            t = time.monotonic()
            subprocess.run([cp, "--sparse=always", path, dst], check=True, timeout=300)
            took = time.monotonic() - t
            st = os.stat(dst)
            self.assertEqual(st.st_size, 10 * GiB)
            self.assertLess(st.st_blocks * 512, 64 << 20)
            with open(dst, "rb") as f:
                f.seek(5 * GiB)
                self.assertEqual(f.read(4096), b"data" * 1024)
        # cp reads only the data (two blocks), not 10 GiB of zeros
        self.assertLess(took, 60)
        print("10 GiB file with two data blocks: SEEK_DATA/SEEK_HOLE find them (ENXIO past "
              "the end); cp --sparse copied it in %.2f s" % took)


class RenameFlags(FuseTestCase):
    def test_exchange_and_noreplace(self):
        m = self.mnt
        # names the kernel caches stay for acdirmin on another mount while
        # their inodes live (an exchange kills none): that one caches none
        other = self.mount("lookupcache=none")
        write_file(m.p("a"), b"A")
        write_file(m.p("b"), b"B")
        os.mkdir(m.p("d"))
        write_file(m.p("d", "inside"), b"I")
        self.assertEqual(read_file(other.p("a")), b"A")  # the other mount has both open once
        self.assertEqual(read_file(other.p("b")), b"B")
        ino_a, ino_b = os.stat(m.p("a")).st_ino, os.stat(m.p("b")).st_ino
        renameat2(m.p("a"), m.p("b"), RENAME_EXCHANGE)
        self.assertEqual(read_file(m.p("a")), b"B")
        self.assertEqual(read_file(m.p("b")), b"A")
        self.assertEqual((os.stat(m.p("a")).st_ino, os.stat(m.p("b")).st_ino), (ino_b, ino_a))
        self.assertEqual(read_file(other.p("a")), b"B")
        self.assertEqual(read_file(other.p("b")), b"A")
        # a file and a directory swap too
        renameat2(m.p("a"), m.p("d"), RENAME_EXCHANGE)
        self.assertTrue(os.path.isdir(m.p("a")))
        self.assertEqual(read_file(m.p("a", "inside")), b"I")
        self.assertEqual(read_file(m.p("d")), b"B")
        with self.assertRaises(OSError) as cm:
            renameat2(m.p("a"), m.p("missing"), RENAME_EXCHANGE)
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        with self.assertRaises(OSError) as cm:
            renameat2(m.p("b"), m.p("d"), RENAME_NOREPLACE)
        self.assertEqual(cm.exception.errno, errno.EEXIST)
        self.assertEqual(read_file(m.p("d")), b"B")
        renameat2(m.p("b"), m.p("c"), RENAME_NOREPLACE)
        self.assertEqual(read_file(m.p("c")), b"A")
        self.assertFalse(os.path.exists(m.p("b")))
        print("RENAME_EXCHANGE swaps two files and a file with a directory (the other mount "
              "sees it), ENOENT with a missing name; RENAME_NOREPLACE: EEXIST over a name, "
              "a move otherwise")


class DocumentedForms(FuseTestCase):
    def readme_demo(self):
        """The README's block of commands to try while scripts/run serves."""
        with open(os.path.join(ROOT, "README.md")) as f:
            text = f.read()
        block = text.split("While `scripts/run` is serving", 1)[1].split("```sh\n", 1)[1]
        return block.split("```", 1)[0].strip().splitlines()

    def test_readme_demo_runs_as_written(self):
        if not shutil.which("getfattr"):
            self.skipTest("getfattr is not installed (package attr)")
        lines = self.readme_demo()
        self.assertTrue(any(line.startswith("ls -la /mnt/arf") for line in lines))
        tcp = "arf://127.0.0.1:%d/" % self.arfd.port
        script = ["set -e", "B=%s" % BUILD]
        for line in lines:
            if line.startswith("B="):
                continue
            line = line.replace("/mnt/arf", self.mnt.path).replace("arf://127.0.0.1/", tcp)
            # an shm URL names the harness's socket after its path
            line = re.sub(r"(arf\+shm://\S+)", r"\1?socket=" + self.arfd.socket, line)
            script.append(line)
        p = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, timeout=300,
                           env=dict(os.environ, PATH=os.path.dirname(ARFCTL) + ":" +
                                    os.environ["PATH"]))
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, p.stderr.decode() + out)
        self.assertIn('user.arf.server="arf://127.0.0.1:%d/"' % self.arfd.port, out)
        with open("/etc/services", "rb") as f:
            self.assertIn(f.read()[:200].decode(errors="replace").splitlines()[0], out)
        print("README's demo (%d commands): ran as written against a test arfd and mount; "
              "getfattr -n user.arf.server printed the URL" % len(lines))

    def test_arfctl_options_after_the_subcommand(self):
        ctl = ["--control", self.arfd.control]
        before = run([ARFCTL] + ctl + ["--prometheus", "stats"]).stdout.decode()
        after = run([ARFCTL, "stats", "--prometheus"] + ctl).stdout.decode()
        for out in (before, after):
            self.assertIn("arf_requests_total", out)
        url = "arf://127.0.0.1:%d/" % self.arfd.port
        self.assertIn(b'"ino"', run([ARFCTL, "stat", url, "--json"]).stdout)
        print("arfctl --prometheus stats and arfctl stats --prometheus agree; options after "
              "the subcommand work")

    def test_arfctl_man_page_examples_run_as_written(self):
        """arfctl(8)'s EXAMPLES that need no program or hash of their own,
        with server -> the test arfd, the control socket and the shm socket
        given after the arguments."""
        with open(os.path.join(ROOT, "man", "arfctl.8")) as f:
            page = f.read()
        section = page.split(".SH EXAMPLES", 1)[1].split(".SH", 1)[0]
        lines = [line.replace("\\-", "-") for line in section.splitlines()
                 if line.startswith("arfctl ") and "exec" not in line and "progs" not in line]
        self.assertGreaterEqual(len(lines), 8)
        with tempfile.TemporaryDirectory(prefix="arf-man-") as tmp:
            # the cell's example talks to etcd: a real one of the test's own
            etcd = None
            if any("http://etcd1:2379" in line for line in lines):
                why = fusetest.arfproc.etcd_skip_reason()
                if why:
                    lines = [line for line in lines if "http://etcd1:2379" not in line]
                    print("arfctl(8) EXAMPLES: the cell's left out: " + why)
                else:
                    etcd = fusetest.arfproc.Etcd(tmp).start()
                    self.addCleanup(etcd.stop)
            with open(os.path.join(tmp, "report.pdf"), "wb") as f:
                f.write(b"%PDF-1.4 a report\n" * 100)
            run([ARFCTL, "mkdir", "arf://127.0.0.1:%d/archive" % self.arfd.port])
            for line in lines:
                line = line.replace("arf://server/", "arf://127.0.0.1:%d/" % self.arfd.port)
                if etcd:
                    line = line.replace("http://etcd1:2379", etcd.url)
                line = re.sub(r"(arf\+shm://\S+)", r"\1?socket=" + self.arfd.socket, line)
                line += " --control " + self.arfd.control
                p = subprocess.run(["bash", "-c", "set -e; " + line], cwd=tmp, timeout=120,
                                   capture_output=True,
                                   env=dict(os.environ, PATH=os.path.dirname(ARFCTL) + ":" +
                                            os.environ["PATH"]))
                self.assertEqual(p.returncode, 0, "%s: %s" % (line, p.stderr.decode()))
            with open(os.path.join(tmp, "copy.pdf"), "rb") as f:
                self.assertEqual(f.read(), b"%PDF-1.4 a report\n" * 100)
        print("arfctl(8) EXAMPLES: %d commands ran as written (options after the arguments "
              "added for the test's sockets)" % len(lines))

    def test_hard_and_soft_options_are_documented_and_accepted(self):
        out = run([ARF_FUSE, "--help"]).stdout.decode()
        for name in ("hard", "soft", "timeo=N", "retrans=N"):
            self.assertIn("    " + name, out)
        with open(os.path.join(ROOT, "man", "arf-fuse.8")) as f:
            page = f.read()
        for name in ("hard", "soft", "timeo=", "retrans="):
            self.assertIn(".B" + ("I " if name.endswith("=") else " ") + name, page)
        if os.path.exists(MOUNT_ARF):
            spec = "127.0.0.1:%d:/" % self.arfd.port
            run([MOUNT_ARF, spec, self.mnt.path, "-f", "-o",
                 "_netdev,soft,timeo=10,retrans=1,intr"])
            run([MOUNT_ARF, spec, self.mnt.path, "-f", "-o", "hard,timeo=600"])
            p = subprocess.run([MOUNT_ARF, spec, self.mnt.path, "-f", "-o", "timeo=0"],
                               capture_output=True)
            self.assertNotEqual(p.returncode, 0)
        m = self.mount("soft,timeo=50,retrans=3")
        with open(m.p("x"), "wb") as f:
            f.write(b"x")
        print("hard, soft, timeo=, retrans= in --help and arf-fuse(8); mount.arf checks them "
              "(timeo=0 refused); a soft mount with them works")


if __name__ == "__main__":
    fusetest.main()
