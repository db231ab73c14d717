#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""POSIX through an arf-fuse mount: a table of failing calls each with its
errno, attributes (chmod, chown, truncate, utimens with UTIME_NOW), links,
special files, xattrs, large directories and I/O, the unlinked-but-open
file (silly rename), and locks between processes of one mount and of two."""
import ctypes
import errno
import fcntl
import os
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import FuseTestCase, run  # noqa: E402

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4


def renameat2(a, b, flags):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), a)


def errno_of(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return e.errno
    return 0


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def hidden_names(d, wait_empty=False):
    """.arf-hidden-* names in d; with wait_empty, wait (up to 10 s) for the
    kernel's asynchronous release to remove them."""
    for _ in range(200):
        names = [n for n in os.listdir(d) if n.startswith(".arf-hidden-")]
        if not names or not wait_empty:
            return names
        time.sleep(0.05)
    return names


class Errnos(FuseTestCase):
    def setUp(self):
        super().setUp()
        m = self.mnt
        os.mkdir(m.p("d"))
        write_file(m.p("d", "f"), b"x")
        os.mkdir(m.p("d", "sub"))
        os.mkdir(m.p("e"))
        write_file(m.p("f"), b"hello")

    def test_errno_table(self):
        p = self.mnt.p
        long = "n" * 256
        cases = [
            ("open missing", lambda: os.open(p("nope"), os.O_RDONLY), errno.ENOENT),
            ("stat missing in dir", lambda: os.stat(p("d", "nope")), errno.ENOENT),
            ("unlink missing", lambda: os.unlink(p("nope")), errno.ENOENT),
            ("rmdir missing", lambda: os.rmdir(p("nope")), errno.ENOENT),
            ("rename missing", lambda: os.rename(p("nope"), p("x")), errno.ENOENT),
            ("create in missing dir", lambda: os.open(p("nope", "x"), os.O_CREAT | os.O_WRONLY),
             errno.ENOENT),
            ("mkdir existing", lambda: os.mkdir(p("d")), errno.EEXIST),
            ("O_EXCL existing", lambda: os.open(p("f"), os.O_CREAT | os.O_EXCL | os.O_WRONLY),
             errno.EEXIST),
            ("link onto existing", lambda: os.link(p("f"), p("d", "f")), errno.EEXIST),
            ("symlink onto existing", lambda: os.symlink("t", p("f")), errno.EEXIST),
            ("mknod existing", lambda: os.mkfifo(p("f")), errno.EEXIST),
            ("rename NOREPLACE", lambda: renameat2(p("f"), p("d", "f"), RENAME_NOREPLACE),
             errno.EEXIST),
            ("rmdir non-empty", lambda: os.rmdir(p("d")), errno.ENOTEMPTY),
            ("rename dir over non-empty dir", lambda: os.rename(p("e"), p("d")), errno.ENOTEMPTY),
            ("open under a file", lambda: os.open(p("f", "x"), os.O_RDONLY), errno.ENOTDIR),
            ("mkdir under a file", lambda: os.mkdir(p("f", "x")), errno.ENOTDIR),
            ("rmdir a file", lambda: os.rmdir(p("f")), errno.ENOTDIR),
            ("listdir a file", lambda: os.listdir(p("f")), errno.ENOTDIR),
            ("rename dir over file", lambda: os.rename(p("e"), p("f")), errno.ENOTDIR),
            ("open dir for writing", lambda: os.open(p("d"), os.O_WRONLY), errno.EISDIR),
            ("unlink a dir", lambda: os.unlink(p("d")), errno.EISDIR),
            ("rename file over dir", lambda: os.rename(p("f"), p("e")), errno.EISDIR),
            ("create 256-byte name", lambda: os.open(p(long), os.O_CREAT | os.O_WRONLY),
             errno.ENAMETOOLONG),
            ("mkdir 256-byte name", lambda: os.mkdir(p(long)), errno.ENAMETOOLONG),
            ("stat 256-byte name", lambda: os.stat(p(long)), errno.ENAMETOOLONG),
            ("link to a directory", lambda: os.link(p("d"), p("dlink")), errno.EPERM),
            ("rename dir into its subtree", lambda: os.rename(p("d"), p("d", "sub", "x")),
             errno.EINVAL),
            ("RENAME_EXCHANGE with a missing name",
             lambda: renameat2(p("f"), p("nope"), RENAME_EXCHANGE), errno.ENOENT),
            ("RENAME_WHITEOUT", lambda: renameat2(p("f"), p("x"), RENAME_WHITEOUT), errno.EINVAL),
            ("readlink a file", lambda: os.readlink(p("f")), errno.EINVAL),
            ("setxattr user.arf.*", lambda: os.setxattr(p("f"), "user.arf.x", b"1"),
             errno.ENOTSUP),
            ("setxattr security.*", lambda: os.setxattr(p("f"), "security.x", b"1"),
             errno.ENOTSUP),
            ("getxattr unknown", lambda: os.getxattr(p("f"), "user.nope"), errno.ENODATA),
        ]
        for name, fn, want in cases:
            with self.subTest(case=name):
                got = errno_of(fn)
                self.assertEqual(got, want, "%s: got %s, want %s" % (
                    name, errno.errorcode.get(got, got), errno.errorcode[want]))
        # nothing above changed the tree
        self.assertEqual(sorted(os.listdir(p())), ["d", "e", "f"])
        self.assertEqual(read_file(p("f")), b"hello")

    def test_eacces_and_eperm_as_another_user(self):
        p = self.mnt.p
        os.mkdir(p("private"), 0o700)
        write_file(p("secret"), b"s", 0o600)
        os.chmod(p("d"), 0o755)
        os.mkdir(p("open"), 0o777)
        os.chmod(p("open"), 0o777)
        code = (
            "print(errno_of(os.open, %r, os.O_RDONLY))\n"          # 0600 root file
            "print(errno_of(os.open, %r, os.O_CREAT|os.O_WRONLY))\n"  # 0755 root dir
            "print(errno_of(os.listdir, %r))\n"                     # 0700 root dir
            "print(errno_of(os.stat, %r))\n"                        # search in 0700 dir
            "print(errno_of(os.unlink, %r))\n"                      # in a 0755 dir
            "print(errno_of(os.chmod, %r, 0o777))\n"                # not the owner
            "print(errno_of(os.chown, %r, 65534, 65534))\n"         # not root
            "print(errno_of(os.utime, %r, (1, 1)))\n"               # times, not owner
            "fd = os.open(%r, os.O_CREAT|os.O_WRONLY, 0o600); os.write(fd, b'mine'); "
            "os.close(fd); st = os.stat(%r); print(st.st_uid, st.st_gid)\n"
        ) % (p("secret"), p("d", "new"), p("private"), p("private", "x"), p("d", "f"),
             p("f"), p("f"), p("f"), p("open", "mine"), p("open", "mine"))
        out = self.as_user(code).split("\n")
        self.assertEqual(out[:8], ["EACCES", "EACCES", "EACCES", "EACCES", "EACCES", "EPERM",
                                   "EPERM", "EPERM"])
        # requests carry the caller's credentials: the server made it theirs
        self.assertEqual(out[8], "65534 65534")
        st = os.stat(p("open", "mine"))
        self.assertEqual((st.st_uid, st.st_gid), (65534, 65534))

    def test_group_permission_through_supplementary_groups(self):
        p = self.mnt.p
        os.mkdir(p("team"), 0o770)
        os.chown(p("team"), 0, 4242)
        os.chmod(p("team"), 0o770)
        code = "print(errno_of(os.open, %r, os.O_CREAT|os.O_WRONLY))\n" % p("team", "x")
        # without the group: refused
        self.assertEqual(self.as_user(code), "EACCES")
        # with it as a supplementary group: allowed by the kernel and the server
        self.assertEqual(self.as_user(code, groups=[4242]), "OK")
        # arf-fuse sends a lookup, create, mkdir, unlink or rmdir without the
        # groups first and with them after the server's refusal (cred.c):
        # each is allowed, and a file of another user, opened through a
        # create, keeps them for its writes
        with open(p("team", "shared"), "wb") as f:
            f.write(b"root's\n")
        os.chown(p("team", "shared"), 0, 4242)
        os.chmod(p("team", "shared"), 0o660)
        code = ("print(errno_of(os.mkdir, %r))\n"
                "print(errno_of(os.stat, %r))\n"
                "print(errno_of(lambda f: os.close(os.open(f, os.O_CREAT|os.O_WRONLY)), %r))\n"
                "print(errno_of(os.unlink, %r))\n"
                "print(errno_of(os.rmdir, %r))\n"
                "print(errno_of(os.rename, %r, %r))\n"
                "print(errno_of(os.link, %r, %r))\n"
                "print(errno_of(os.symlink, 'x2', %r))\n"
                "print(errno_of(os.mknod, %r, 0o600))\n"
                "for f in ('x2', 'x3', 'x4', 'x5'):\n"
                "    print(errno_of(os.unlink, os.path.join(%r, f)))\n"
                "fd = os.open(%r, os.O_CREAT|os.O_WRONLY|os.O_APPEND)\n"
                "os.write(fd, b'member\\n'); os.close(fd)\n"
                "print('written')\n") % (
                    p("team", "dd"), p("team", "x"), p("team", "dd", "y"), p("team", "dd", "y"),
                    p("team", "dd"), p("team", "x"), p("team", "x2"), p("team", "x2"),
                    p("team", "x3"), p("team", "x4"), p("team", "x5"), p("team"),
                    p("team", "shared"))
        out = self.as_user(code, groups=[4242]).split("\n")
        self.assertEqual(out, ["OK"] * 13 + ["written"])
        with open(p("team", "shared"), "rb") as f:
            self.assertEqual(f.read(), b"root's\nmember\n")
        self.assertEqual(os.listdir(p("team")), ["shared"])
        # and without the group, each is refused as before
        code = ("print(errno_of(os.stat, %r))\n"
                "print(errno_of(os.unlink, %r))\n") % (p("team", "shared"), p("team", "shared"))
        self.assertEqual(self.as_user(code).split("\n"), ["EACCES", "EACCES"])


class NoSpace(FuseTestCase):
    extra = {"regions.data_blocks": "64"}

    def test_enospc(self):
        fd = os.open(self.mnt.p("big"), os.O_WRONLY | os.O_CREAT, 0o644)
        chunk = b"z" * 65536
        err = 0
        try:
            for _ in range(64):  # 4 MiB into a 256 KiB data region
                os.write(fd, chunk)
        except OSError as e:
            err = e.errno
        finally:
            try:
                os.close(fd)
            except OSError as e:
                err = err or e.errno
        self.assertEqual(err, errno.ENOSPC)
        # the filesystem still works once space is freed
        os.unlink(self.mnt.p("big"))
        write_file(self.mnt.p("small"), b"ok")
        self.assertEqual(read_file(self.mnt.p("small")), b"ok")


    def test_short_write_in_pieces(self):
        """A 1 MiB write goes as two 512 KiB pieces in flight together
        (libarf's arf_write); where the first fills the data region, the
        write is short by what did not fit, the second piece's refusal is
        not an error of the write, and the file holds exactly what was
        counted written."""
        data = os.urandom(1 << 20)
        fd = os.open(self.mnt.p("short"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            n = os.write(fd, data)
            self.assertGreater(n, 0)
            self.assertLessEqual(n, 256 << 10)  # the region holds 64 blocks
            with self.assertRaises(OSError) as cm:
                os.write(fd, data[n:])
            self.assertEqual(cm.exception.errno, errno.ENOSPC)
        finally:
            os.close(fd)
        self.assertEqual(os.stat(self.mnt.p("short")).st_size, n)
        self.assertEqual(read_file(self.mnt.p("short")), data[:n])
        print("a 1 MiB write into 256 KiB of space: %d bytes written, then ENOSPC" % n)
        os.unlink(self.mnt.p("short"))


class Attributes(FuseTestCase):
    def test_chmod_chown_truncate_utimens(self):
        f = self.mnt.p("a")
        write_file(f, b"0123456789")
        os.chmod(f, 0o640)
        self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), 0o640)
        os.chown(f, 1234, 5678)
        st = os.stat(f)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        os.truncate(f, 4)
        self.assertEqual(read_file(f), b"0123")
        os.truncate(f, 8)
        self.assertEqual(read_file(f), b"0123\0\0\0\0")
        with open(f, "r+b") as fh:
            os.ftruncate(fh.fileno(), 2)
        self.assertEqual(os.stat(f).st_size, 2)
        os.utime(f, ns=(1_000_000_123, 2_000_000_456))
        st = os.stat(f)
        self.assertEqual(st.st_mtime_ns, 2_000_000_456)
        self.assertEqual(st.st_atime_ns, 1_000_000_123)
        before = time.time()
        os.utime(f, None)  # UTIME_NOW for both
        st = os.stat(f)
        self.assertGreaterEqual(st.st_mtime, before - 2)
        self.assertLessEqual(st.st_mtime, time.time() + 2)
        # O_TRUNC on open
        write_file(f, b"new")
        self.assertEqual(read_file(f), b"new")

    def test_links_symlinks_special_files(self):
        p = self.mnt.p
        write_file(p("a"), b"data")
        os.link(p("a"), p("b"))
        sa, sb = os.stat(p("a")), os.stat(p("b"))
        self.assertEqual(sa.st_ino, sb.st_ino)
        self.assertEqual(sa.st_nlink, 2)
        os.unlink(p("a"))
        self.assertEqual(os.stat(p("b")).st_nlink, 1)
        self.assertEqual(read_file(p("b")), b"data")
        os.symlink("b", p("s"))
        self.assertEqual(os.readlink(p("s")), "b")
        self.assertTrue(stat.S_ISLNK(os.lstat(p("s")).st_mode))
        self.assertEqual(read_file(p("s")), b"data")
        target = "/" + "t" * 1000
        os.symlink(target, p("long"))
        self.assertEqual(os.readlink(p("long")), target)
        os.mkfifo(p("fifo"), 0o600)
        self.assertTrue(stat.S_ISFIFO(os.stat(p("fifo")).st_mode))
        os.mknod(p("null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        st = os.stat(p("null"))
        self.assertTrue(stat.S_ISCHR(st.st_mode))
        self.assertEqual(st.st_rdev, os.makedev(1, 3))
        os.rename(p("b"), p("c"))
        self.assertEqual(read_file(p("c")), b"data")
        os.mkdir(p("dir"))
        self.assertEqual(os.stat(p("dir")).st_nlink, 2)
        renameat2(p("c"), p("dir", "c"), RENAME_NOREPLACE)
        self.assertEqual(read_file(p("dir", "c")), b"data")
        st = os.statvfs(p())
        self.assertGreater(st.f_blocks, 0)
        self.assertEqual(st.f_namemax, 255)

    def test_xattrs_name_server_and_file(self):
        f = self.mnt.p("x")
        write_file(f, b"1")
        url = self.arfd.url("/")
        self.assertEqual(os.getxattr(f, "user.arf.server").decode(), url)
        st = os.stat(f)
        self.assertEqual(int(os.getxattr(f, "user.arf.ino")), st.st_ino)
        int(os.getxattr(f, "user.arf.gen"))
        self.assertEqual(os.getxattr(self.mnt.p(), "user.arf.server").decode(), url)
        # not listed, so that copies do not carry them away
        self.assertEqual(os.listxattr(f), [])
        self.assertEqual(errno_of(os.removexattr, f, "user.arf.ino"), errno.ENOTSUP)

    def test_noatime(self):
        f = self.mnt.p("t")
        write_file(f, b"abc")
        os.utime(f, ns=(5_000_000_000, 6_000_000_000))
        read_file(f)
        self.assertEqual(os.stat(f).st_atime_ns, 5_000_000_000)
        opts = [line.split()[5] for line in open("/proc/self/mountinfo")
                if line.split()[4] == os.path.realpath(self.mnt.path)][0]
        self.assertIn("noatime", opts.split(","))


class DataAndDirectories(FuseTestCase):
    def test_large_file_io(self):
        data = os.urandom(9 * 1024 * 1024 + 12345)
        f = self.mnt.p("big")
        write_file(f, data)
        self.assertEqual(os.stat(f).st_size, len(data))
        self.assertEqual(read_file(f), data)
        # unaligned ranges
        with open(f, "rb") as fh:
            for off, n in ((1, 10), (4095, 2), (1 << 20, 3 << 20), (len(data) - 5, 100)):
                fh.seek(off)
                self.assertEqual(fh.read(n), data[off:off + n])
        # overwrite in the middle and append
        with open(f, "r+b") as fh:
            fh.seek(5000)
            fh.write(b"Q" * 70000)
        with open(f, "ab") as fh:
            fh.write(b"tail")
        want = data[:5000] + b"Q" * 70000 + data[75000:] + b"tail"
        self.assertEqual(read_file(f), want)

    def test_big_directory_listing(self):
        d = self.mnt.p("many")
        os.mkdir(d)
        names = set("file-%05d-%s" % (i, "x" * (i % 50)) for i in range(3000))
        for n in names:
            os.close(os.open(os.path.join(d, n), os.O_CREAT | os.O_WRONLY, 0o644))
        self.assertEqual(set(os.listdir(d)), names)
        # ls -l style: readdirplus gives attributes, every entry stats
        with os.scandir(d) as it:
            count = sum(1 for e in it if e.is_file() and e.stat().st_size == 0)
        self.assertEqual(count, len(names))
        # . and .. are listed, as on a local filesystem
        out = run(["ls", "-a", d]).stdout.decode().split()
        self.assertTrue("." in out and ".." in out, "no . or .. in ls -a")
        # remove half while listing resumes
        for n in sorted(names)[::2]:
            os.unlink(os.path.join(d, n))
        self.assertEqual(len(os.listdir(d)), len(names) - len(sorted(names)[::2]))
        run(["rm", "-rf", d])
        self.assertFalse(os.path.exists(d))


class UnlinkedOpen(FuseTestCase):
    def test_unlinked_file_stays_readable_and_writable(self):
        p = self.mnt.p
        write_file(p("u"), b"before")
        other = self.mount()
        fd = os.open(p("u"), os.O_RDWR)
        try:
            os.unlink(p("u"))
            self.assertFalse(os.path.exists(p("u")))
            self.assertEqual(os.pread(fd, 100, 0), b"before")
            os.pwrite(fd, b" and after", 6)
            self.assertEqual(os.pread(fd, 100, 0), b"before and after")
            self.assertEqual(os.fstat(fd).st_nlink, 0)
            self.assertEqual(len(hidden_names(p())), 1)
            # the other mount: the name is gone
            self.assertEqual(errno_of(os.stat, other.p("u")), errno.ENOENT)
            # a new file of the same name is another file
            write_file(p("u"), b"new file")
            self.assertEqual(os.pread(fd, 100, 0), b"before and after")
            self.assertEqual(read_file(other.p("u")), b"new file")
        finally:
            os.close(fd)
        # last close removed the hidden name
        self.assertEqual(hidden_names(p(), wait_empty=True), [])
        self.assertEqual(read_file(p("u")), b"new file")

    def test_rename_over_open_file(self):
        p = self.mnt.p
        write_file(p("target"), b"old contents")
        write_file(p("src"), b"replacement")
        with open(p("target"), "rb") as fh:
            os.rename(p("src"), p("target"))
            self.assertEqual(fh.read(), b"old contents")
        self.assertEqual(read_file(p("target")), b"replacement")
        self.assertEqual(hidden_names(p(), wait_empty=True), [])

    def test_other_mount_never_sees_another_files_data(self):
        p = self.mnt.p
        other = self.mount()
        write_file(p("victim"), b"V" * 8192)
        fd = os.open(other.p("victim"), os.O_RDONLY)  # open there, nothing read yet
        try:
            os.unlink(p("victim"))  # not open on this mount: really removed
            for i in range(20):      # reuse slots and blocks
                write_file(p("n%d" % i), b"N" * 8192)
            try:
                data = os.pread(fd, 8192, 0)
            except OSError as e:
                self.assertIn(e.errno, (errno.ESTALE, errno.ENOENT, errno.EIO))
            else:
                self.assertNotIn(b"N", data)
        finally:
            os.close(fd)


class Locks(FuseTestCase):
    CHILD = ("import fcntl, os, sys\n"
             "fd = os.open(sys.argv[1], os.O_RDWR)\n"
             "kind = sys.argv[2]\n"
             "try:\n"
             "    if kind == 'flock':\n"
             "        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "    else:\n"
             "        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "    print('locked')\n"
             "except OSError:\n"
             "    print('busy')\n")

    def try_lock(self, path, kind):
        return run([sys.executable, "-c", self.CHILD, path, kind]).stdout.decode().strip()

    def test_locks_exclude_processes_of_one_mount_and_others(self):
        f = self.mnt.p("lockme")
        write_file(f, b"l")
        other = self.mount()
        for kind in ("flock", "posix"):
            with self.subTest(kind=kind):
                fd = os.open(f, os.O_RDWR)
                try:
                    if kind == "flock":
                        fcntl.flock(fd, fcntl.LOCK_EX)
                    else:
                        fcntl.lockf(fd, fcntl.LOCK_EX)
                    self.assertEqual(self.try_lock(f, kind), "busy")
                    # held by arfd: another mount is excluded too (test_locks.py)
                    self.assertEqual(self.try_lock(other.p("lockme"), kind), "busy")
                finally:
                    os.close(fd)
                self.assertEqual(self.try_lock(f, kind), "locked")


class ReadOnly(FuseTestCase):
    mount_opts = "ro"

    def test_ro_mount_refuses_writes(self):
        self.assertEqual(errno_of(os.mkdir, self.mnt.p("x")), errno.EROFS)
        self.assertEqual(errno_of(os.open, self.mnt.p("y"), os.O_CREAT | os.O_WRONLY),
                         errno.EROFS)
        self.assertEqual(os.listdir(self.mnt.p()), [])


if __name__ == "__main__":
    fusetest.main()
