#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Extended attributes and POSIX ACLs on a mount, stored by arfd: user.*
and trusted.* attributes with the errors and limits Linux gives (compared
with a local filesystem where they are the same), kept across an arfd
restart; ACLs enforced by the kernel (chmod and the mask), default ACLs
inherited and the umask applied only without one (compared with a local
filesystem), an ACL set on one mount taking effect on another, and cp -a
and rsync -aAX of a tree with ACLs and attributes giving an identical copy
(getfacl -R and getfattr -R -d compared)."""
import ctypes
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import FuseTestCase, run  # noqa: E402

LIBC = ctypes.CDLL(None, use_errno=True)


def errno_of(fn, *args, **kw):
    try:
        fn(*args, **kw)
        return "OK"
    except OSError as e:
        return errno.errorcode[e.errno]


def getxattr_into(path, name, size):
    """getxattr(2) with a buffer of size bytes: the length, or the errno name."""
    buf = ctypes.create_string_buffer(max(size, 1))
    n = LIBC.getxattr(path.encode(), name.encode(), buf if size else None, ctypes.c_size_t(size))
    return n if n >= 0 else errno.errorcode[ctypes.get_errno()]


def need(*tools):
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        raise unittest.SkipTest("%s not installed (scripts/deps.sh installs them)" %
                                ", ".join(missing))


def sh(script, cwd):
    """Runs a shell script in cwd; its stdout (AssertionError, with stderr,
    if it fails)."""
    p = subprocess.run(["sh", "-ec", script], cwd=cwd, capture_output=True, timeout=300,
                       env=dict(os.environ, LC_ALL="C"))
    if p.returncode:
        raise AssertionError("script failed (%d) in %s:\n%s" % (p.returncode, cwd,
                                                               p.stderr.decode()[-2000:]))
    return p.stdout.decode()


def by_file(text):
    """getfacl -R / getfattr -R output in name order, not directory order:
    its blank-line separated blocks, sorted."""
    return "\n\n".join(sorted(b.strip("\n") for b in text.split("\n\n") if b.strip()))


class Xattrs(FuseTestCase):
    def setUp(self):
        super().setUp()
        self.local = tempfile.mkdtemp(prefix="arf-xattr-local-")
        self.addCleanup(shutil.rmtree, self.local, True)
        os.chmod(self.mnt.p(), 0o777)

    def both(self, name):
        """The same path on the mount and on the local filesystem."""
        return self.mnt.p(name), os.path.join(self.local, name)

    def test_user_and_trusted_attributes(self):
        f, lf = self.both("f")
        for p in (f, lf):
            open(p, "w").close()
            os.setxattr(p, "user.a", b"1")
        # the errors a local filesystem gives, for the same calls
        cases = [
            ("create existing", lambda p: os.setxattr(p, "user.a", b"2", os.XATTR_CREATE)),
            ("replace missing", lambda p: os.setxattr(p, "user.b", b"2", os.XATTR_REPLACE)),
            ("get missing", lambda p: os.getxattr(p, "user.nope")),
            ("remove missing", lambda p: os.removexattr(p, "user.nope")),
            ("name too long", lambda p: os.setxattr(p, "user." + "n" * 251, b"")),
            ("replace existing", lambda p: os.setxattr(p, "user.a", b"3", os.XATTR_REPLACE)),
        ]
        for what, fn in cases:
            self.assertEqual(errno_of(fn, f), errno_of(fn, lf), what)
        self.assertEqual(getxattr_into(f, "user.a", 0), 1)           # size query
        os.setxattr(f, "user.long", b"x" * 100)
        self.assertEqual(getxattr_into(f, "user.long", 10), "ERANGE")  # buffer too small
        self.assertEqual(getxattr_into(lf, "user.a", 0), 1)
        # ARF's own limits: a value of 64 KiB, 256 KiB of names and values a file
        os.setxattr(f, "user.big", b"v" * 65536)
        self.assertEqual(os.getxattr(f, "user.big"), b"v" * 65536)
        self.assertEqual(errno_of(os.setxattr, f, "user.huge", b"v" * 65537), "E2BIG")
        for i in range(2):
            os.setxattr(f, "user.big%d" % i, b"w" * 65536)
        self.assertEqual(errno_of(os.setxattr, f, "user.toomuch", b"w" * 65536), "ENOSPC")
        # user.* only on files and directories; security.* not stored
        os.symlink("f", self.mnt.p("ln"))
        self.assertEqual(errno_of(os.setxattr, self.mnt.p("ln"), "user.x", b"1",
                                  follow_symlinks=False), "EPERM")
        self.assertEqual(errno_of(os.setxattr, f, "security.x", b"1"),
                         errno.errorcode[errno.EOPNOTSUPP])
        # trusted.*: root's alone
        os.setxattr(f, "trusted.t", b"root's")
        self.assertEqual(os.getxattr(f, "trusted.t"), b"root's")
        self.assertEqual(sorted(os.listxattr(f)),
                         ["trusted.t", "user.a", "user.big", "user.big0", "user.big1",
                          "user.long"])  # user.arf.* stay unlisted
        os.chmod(f, 0o644)
        out = self.as_user("p = %r\n"
                           "print(errno_of(os.getxattr, p, 'trusted.t'),\n"
                           "      errno_of(os.setxattr, p, 'user.x', b'1'),\n"
                           "      os.getxattr(p, 'user.a').decode(),\n"
                           "      sorted(os.listxattr(p)))" % f)
        self.assertEqual(out, "ENODATA EACCES 3 ['user.a', 'user.big', 'user.big0', "
                              "'user.big1', 'user.long']")
        # the virtual ones still answer, and cannot be set
        self.assertEqual(int(os.getxattr(f, "user.arf.ino")), os.stat(f).st_ino)
        self.assertEqual(errno_of(os.setxattr, f, "user.arf.ino", b"1"), "ENOTSUP")
        # kept by arfd across a restart; gone with the file
        self.arfd.restart()
        self.assertEqual(os.getxattr(f, "user.big1"), b"w" * 65536)
        self.assertEqual(os.getxattr(f, "trusted.t"), b"root's")
        os.removexattr(f, "user.big")
        self.assertNotIn("user.big", os.listxattr(f))
        print("user.* and trusted.*: Linux's errors (EEXIST, ENODATA, ERANGE, EPERM, EACCES), "
              "64 KiB values, ENOSPC past 256 KiB a file, kept across a restart")

    def test_acl_enforced_and_chmod(self):
        need("setfacl", "getfacl")
        f = self.mnt.p("f")
        with open(f, "w") as fh:
            fh.write("secret")
        os.chmod(f, 0o600)
        read = "print(errno_of(lambda: open(%r).read()))" % f
        self.assertEqual(self.as_user(read), "EACCES")
        run(["setfacl", "-m", "u:nobody:r", f])
        self.assertEqual(os.stat(f).st_mode & 0o777, 0o640)  # group bits = the mask
        self.assertEqual(self.as_user(read), "OK")
        os.chmod(f, 0o600)                                     # the mask follows chmod
        self.assertIn("mask::---", run(["getfacl", f]).stdout.decode())
        self.assertEqual(self.as_user(read), "EACCES")
        os.chmod(f, 0o640)
        self.assertEqual(self.as_user(read), "OK")
        run(["setfacl", "-b", f])
        self.assertEqual(self.as_user(read), "EACCES")
        self.assertEqual(os.listxattr(f), [])
        print("an ACL lets nobody read a 0600 file; chmod sets the mask; setfacl -b takes it "
              "away")

    def test_default_acl_inherited_as_locally(self):
        need("setfacl", "getfacl")
        script = ("mkdir d; setfacl -d -m u:nobody:rwx,g::rx,o::- d\n"
                  "umask 027; touch d/f; mkdir d/s; mkfifo d/p; mkdir d/s/t; touch d/s/t/g\n"
                  "umask 077; touch plain; mkdir plaind\n"
                  "umask 022; touch d/h; chmod 600 d/h\n"
                  "stat -c '%n %A' d/f d/s d/p d/s/t/g plain plaind d/h\n"
                  "getfacl -R -p .\n")
        for top in (self.mnt.p("t"), os.path.join(self.local, "t")):
            os.mkdir(top, 0o755)
        here = by_file(sh(script, self.mnt.p("t")))
        local = by_file(sh(script, os.path.join(self.local, "t")))
        self.maxDiff = None
        self.assertEqual(here, local)
        self.assertIn("# file: ./d/s/t/g", here)
        print("default ACLs inherited by files, directories and fifos (and the umask applied "
              "only without one): getfacl -R equal to a local filesystem's (%d lines)" %
              len(here.splitlines()))

    def test_acl_set_on_one_mount_seen_on_another(self):
        need("setfacl")
        a, b = self.mnt, self.mount()
        with open(a.p("f"), "w") as fh:
            fh.write("x")
        os.chmod(a.p("f"), 0o600)
        read_b = "print(errno_of(lambda: open(%r).read()))" % b.p("f")
        self.assertEqual(self.as_user(read_b), "EACCES")  # B's kernel caches "no ACL"
        for add in (True, False):
            run(["setfacl", "-m" if add else "-x", "u:nobody:r" if add else "u:nobody", a.p("f")])
            want = "OK" if add else "EACCES"
            t = time.time()
            while self.as_user(read_b) != want:
                self.assertLess(time.time() - t, 30, "B still says the old thing")
                time.sleep(0.5)
            print("an ACL %s on mount A took effect on mount B after %.1f s" %
                  ("added" if add else "removed", time.time() - t))

    def test_cp_a_and_rsync_aAX_copy_identically(self):
        need("setfacl", "getfacl", "getfattr", "rsync")
        src = os.path.join(self.local, "src")
        sh("mkdir -p src/d/e src/empty\n"
           "printf 'hello' > src/a; printf 'data' > src/d/b; : > src/d/e/c\n"
           "ln -s ../a src/d/ln; mkfifo src/fifo\n"
           "chmod 640 src/a; chmod 2775 src/d; chmod 700 src/d/e\n"
           "setfacl -m u:nobody:rw,g:daemon:r src/a\n"
           "setfacl -d -m u:nobody:rx,g::rwx src/d; setfacl -m u:daemon:rwx src/d\n"
           "setfacl -m u:nobody:--- src/d/e/c\n"
           "setfattr -n user.k -v v1 src/a; setfattr -n user.bin -v 0x00ff10 src/d/b\n"
           "setfattr -n user.dir -v yes src/d; setfattr -n trusted.t -v 1 src/d/e/c\n"
           # times of their own (a copy made within the second it is
           # taken in would keep the copy's times, rsync seeing them equal)
           "find src -depth -exec touch -h -d '2003-04-05 06:07:08.123456789' {} +\n"
           "touch -h -d '2001-02-03 04:05:06' src/d/ln; touch -d '2002-01-01' src/a\n",
           self.local)

        def describe(top):
            return (by_file(sh("getfacl -R -p .", top)) + "\n" +
                    by_file(sh("getfattr -R -h -d -m '^(user|trusted)\\.' .", top)) + "\n" +
                    sh("find . ! -type d -printf '%p %y %m %s %u %g %T@ %l\\n' | sort ;"
                       "find . -type d -printf '%p %m %u %g %T@\\n' | sort ;"
                       "find . -type f -exec md5sum {} + | sort", top))
        want = describe(src)
        for name, cmd in (("cp -a", ["cp", "-a", src, self.mnt.p("cp")]),
                          ("rsync -aAX", ["rsync", "-aAX", src + "/", self.mnt.p("rs")])):
            p = subprocess.run(cmd, capture_output=True, timeout=300)
            self.assertEqual(p.returncode, 0, "%s: %s" % (name, p.stderr.decode()))
            top = self.mnt.p("cp" if name == "cp -a" else "rs")
            got = describe(top)
            # the top directory itself: cp -a copies src, rsync src/ into rs
            self.maxDiff = None
            self.assertEqual(got, want, name)
            print("%s of a tree with ACLs, default ACLs and user/trusted attributes onto the "
                  "mount: exit 0, getfacl -R, getfattr -R -d, modes, times and contents "
                  "identical (%d lines)" % (name, len(want.splitlines())))


if __name__ == "__main__":
    fusetest.main()
