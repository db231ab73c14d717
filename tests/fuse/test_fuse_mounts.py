#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mounts: two arf-fuse processes on one export (close-to-open, noac,
EXDEV between mounts), the shm transport, arf-fuse's own command line
(daemonizing, --help, bad options, an unreachable server), and mount.arf
through mount(8) and an fstab line, then umount(8)."""
import errno
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import (ARF_FUSE, MOUNT_ARF, FuseTestCase, find_daemon, fstype,  # noqa: E402
                      kill_pid, mounted, run, unmount, wait_gone)


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


class TwoMounts(FuseTestCase):
    def test_close_to_open(self):
        a, b = self.mnt, self.mount()  # default caching on both
        write_file(a.p("f"), b"first version")
        self.assertEqual(read_file(b.p("f")), b"first version")  # b caches it
        for i in range(5):
            data = (b"version %d " % i) * (1000 * (i + 1))
            write_file(a.p("f"), data)     # written and closed on a
            self.assertEqual(read_file(b.p("f")), data)  # opened on b: whole
            # and the other way round, shrinking
            small = b"small %d" % i
            write_file(b.p("f"), small)
            self.assertEqual(read_file(a.p("f")), small)

    def test_appends_from_two_mounts(self):
        a, b = self.mnt, self.mount()
        write_file(a.p("log"), b"A" * 100)
        self.assertEqual(os.stat(b.p("log")).st_size, 100)   # b caches the size
        with open(a.p("log"), "ab") as f:
            f.write(b"a" * 50)
        with open(b.p("log"), "ab") as f:                    # b appends after a's
            f.write(b"B")
        with open(a.p("log"), "ab") as f:
            f.write(b"C")
        self.assertEqual(read_file(b.p("log")), b"A" * 100 + b"a" * 50 + b"BC")

    def test_new_names_and_listings(self):
        a, b = self.mnt, self.mount()
        os.mkdir(a.p("d"))
        self.assertEqual(os.listdir(b.p("d")), [])
        write_file(a.p("d", "x"), b"x")
        # opendir revalidates: the listing shows the new name
        self.assertEqual(os.listdir(b.p("d")), ["x"])
        self.assertEqual(read_file(b.p("d", "x")), b"x")

    def test_noac_sees_changes_at_once(self):
        a, b = self.mnt, self.mount("noac")
        write_file(a.p("g"), b"1")
        self.assertEqual(os.stat(b.p("g")).st_size, 1)
        with open(a.p("g"), "ab") as f:
            f.write(b"234")
        self.assertEqual(os.stat(b.p("g")).st_size, 4)
        os.chmod(a.p("g"), 0o600)
        self.assertEqual(os.stat(b.p("g")).st_mode & 0o777, 0o600)
        os.unlink(a.p("g"))
        self.assertFalse(os.path.exists(b.p("g")))

    def test_exdev_between_mounts(self):
        other = self.mount()
        write_file(self.mnt.p("f"), b"1")
        with self.assertRaises(OSError) as cm:
            os.rename(self.mnt.p("f"), other.p("g"))
        self.assertEqual(cm.exception.errno, errno.EXDEV)
        with self.assertRaises(OSError) as cm:
            os.link(self.mnt.p("f"), other.p("g"))
        self.assertEqual(cm.exception.errno, errno.EXDEV)

    def test_shm_transport(self):
        shm = self.mount(url=self.arfd.url("/", "shm"))
        write_file(self.mnt.p("s"), b"over tcp")
        self.assertEqual(read_file(shm.p("s")), b"over tcp")
        write_file(shm.p("t"), b"over shm" * 100000)
        self.assertEqual(read_file(self.mnt.p("t")), b"over shm" * 100000)
        self.assertTrue(os.getxattr(shm.p("t"), "user.arf.server").startswith(b"arf+shm://"))

    def test_subdirectory_export_path(self):
        os.makedirs(self.mnt.p("exp", "inner"))
        write_file(self.mnt.p("exp", "inner", "f"), b"deep")
        sub = self.mount(url=self.arfd.url("/exp"))
        self.assertEqual(os.listdir(sub.p()), ["inner"])
        self.assertEqual(read_file(sub.p("inner", "f")), b"deep")


class CommandLine(FuseTestCase):
    def setUp(self):
        FuseTestCase.setUp(self)
        self.dir = tempfile.mkdtemp(prefix="arf-mnt-")
        self.addCleanup(self._cleanup_dir)

    def _cleanup_dir(self):
        pid = find_daemon(self.dir) if os.path.isdir(self.dir) else None
        unmount(self.dir)
        if pid:
            kill_pid(pid)
        try:
            os.rmdir(self.dir)
        except OSError:
            pass

    def test_help_lists_every_option(self):
        out = run([ARF_FUSE, "--help"]).stdout.decode()
        for name in ("port=", "transport=", "socket=", "noac", "ac ", "actimeo=", "acregmin=",
                     "acregmax=", "acdirmin=", "acdirmax=", "secret=", "writeback", "spin_us=",
                     "debug", "_netdev", "nofail", "x-", "comment=", "ro ", "nosuid",
                     "lookupcache="):
            self.assertIn(name, out)

    def test_bad_options_and_unreachable_server(self):
        url = self.arfd.url("/")
        p = run([ARF_FUSE, url, self.dir, "-o", "nosuchoption"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"unknown option 'nosuchoption'", p.stderr)
        p = run([ARF_FUSE, url, self.dir, "-o", "acregmin=abc"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"acregmin", p.stderr)
        p = run([ARF_FUSE, "arf://127.0.0.1:1/", self.dir], check=False, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"arf-fuse:", p.stderr)
        self.assertFalse(mounted(self.dir))

    def test_daemonizes_once_mounted(self):
        url = self.arfd.url("/")
        # a secret file the server does not ask for is read and not used
        secret = os.path.join(self.arfd.workdir, "secret")
        with open(secret, "w") as f:
            f.write("s3\n")
        os.chmod(secret, 0o600)
        p = run([ARF_FUSE, url, self.dir, "-o", "actimeo=1,secret=%s,spin_us=0" % secret])
        self.assertEqual(p.returncode, 0)
        self.assertTrue(mounted(self.dir))  # up when the command returned
        self.assertEqual(fstype(self.dir), "fuse.arf")
        write_file(os.path.join(self.dir, "d"), b"daemon")
        self.assertEqual(read_file(os.path.join(self.dir, "d")), b"daemon")
        pid = find_daemon(self.dir)
        self.assertIsNotNone(pid)
        run(["umount", self.dir])
        self.assertTrue(wait_gone(pid), "arf-fuse still running")


class MountHelper(FuseTestCase):
    """mount(8) runs /sbin/mount.arf; the test links the built helper there
    for its duration (and skips if another mount.arf is installed)."""
    LINK = "/sbin/mount.arf"

    def setUp(self):
        if not os.path.exists(MOUNT_ARF):
            self.skipTest("mount.arf was not built")
        if os.path.lexists(self.LINK):
            if os.path.realpath(self.LINK) != os.path.realpath(MOUNT_ARF):
                self.skipTest("%s exists and is not this build's" % self.LINK)
        else:
            os.symlink(os.path.realpath(MOUNT_ARF), self.LINK)
            self.addCleanup(os.unlink, self.LINK)
        FuseTestCase.setUp(self)
        self.dir = tempfile.mkdtemp(prefix="arf-mnt-")
        self.addCleanup(self._cleanup_dir)

    def _cleanup_dir(self):
        pid = find_daemon(self.dir)
        unmount(self.dir)
        if pid:
            kill_pid(pid)
        try:
            os.rmdir(self.dir)
        except OSError:
            pass

    def check_mount(self):
        self.assertTrue(mounted(self.dir))
        self.assertEqual(fstype(self.dir), "fuse.arf")
        write_file(os.path.join(self.dir, "via-mount"), b"mount.arf")
        self.assertEqual(read_file(self.mnt.p("via-mount")), b"mount.arf")
        pid = find_daemon(self.dir)
        self.assertIsNotNone(pid)
        run(["umount", self.dir])
        self.assertFalse(mounted(self.dir))
        self.assertTrue(wait_gone(pid), "arf-fuse still running")

    def test_mount_t_arf(self):
        port = self.arfd.port
        spec = "127.0.0.1:%d:/" % port
        run(["mount", "-t", "arf", spec, self.dir, "-o",
             "port=%d,actimeo=2,_netdev,nofail,x-systemd.automount,comment=test,noatime,"
             "nosuid,nodev" % port])
        with open("/proc/self/mountinfo") as f:
            line = [l for l in f if l.split()[4] == os.path.realpath(self.dir)][0]
        self.assertIn(spec, line)  # the source shown is the SPEC
        self.check_mount()

    def test_fstab_line(self):
        fstab = os.path.join(self.arfd.workdir, "fstab")
        with open(fstab, "w") as f:
            f.write("127.0.0.1:/ %s arf _netdev,port=%d,noac 0 0\n" % (self.dir, self.arfd.port))
        run(["mount", "-T", fstab, self.dir])
        self.check_mount()

    def test_shm_through_mount(self):
        run(["mount", "-t", "arf", "localhost:/", self.dir, "-o",
             "transport=shm,socket=%s" % self.arfd.socket])
        self.check_mount()

    def test_errors_are_clear(self):
        p = run(["mount", "-t", "arf", "127.0.0.1:/", self.dir, "-o",
                 "port=%d,bogus" % self.arfd.port], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"unknown option 'bogus'", p.stderr)
        p = run(["mount", "-t", "arf", "no-port-spec", self.dir], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"HOST:/PATH", p.stderr)
        p = run(["mount", "-t", "arf", "127.0.0.1:/", self.dir, "-o", "port=1"], check=False,
                timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertFalse(mounted(self.dir))
        # sloppy: unknown options are dropped with a warning
        p = run([MOUNT_ARF, "127.0.0.1:%d:/" % self.arfd.port, self.dir, "-s", "-f", "-o",
                 "bogus,noac"])
        self.assertIn(b"ignoring", p.stderr)
        self.assertFalse(mounted(self.dir))  # -f: nothing mounted


if __name__ == "__main__":
    fusetest.main()
