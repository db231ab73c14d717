# SPDX-License-Identifier: MIT
"""FUSE test helpers: the mounts themselves (arf-fuse in the foreground,
so the test owns the daemon's pid, always unmounted -- fusermount3 -u -z,
then SIGTERM / SIGKILL by pid -- even when the test fails) come from
tests/lib/arfproc.py, as does arfd; this adds a test case with one arfd
and one mount per test, and running code as another user.  Tests skip,
with the reason, when /dev/fuse, root or the arf-fuse binary is missing."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import harness  # noqa: E402,F401  (sets BUILD from ARF_BUILD)
from harness import Arfd, BUILD, run  # noqa: E402,F401
from arfproc import (Mount, alive, find_daemon, fstype, kill_pid, mounted,  # noqa: E402,F401
                     unmount, wait_gone)
import arfproc  # noqa: E402

# what tests import from here (arfproc's names among them)
__all__ = ["ARF_FUSE", "Arfd", "BUILD", "FuseTestCase", "MOUNT_ARF", "Mount", "alive",
           "find_daemon", "fstype", "kill_pid", "main", "mounted", "run", "skip_reason",
           "unmount", "wait_gone"]

ARF_FUSE = arfproc.arf_fuse_bin()
MOUNT_ARF = os.path.join(BUILD, "fuse", "mount.arf")
main = harness.main


def skip_reason():
    """Why FUSE tests cannot run here, or None."""
    return arfproc.fuse_skip_reason()


class FuseTestCase(unittest.TestCase):
    """One arfd and one mount per test; both stopped even on failure.
    Subclasses set mount_opts / extra (arfd --set) / transport."""
    mount_opts = ""
    extra = None
    transport = "tcp"
    sync = False  # the default export: unstable writes until a COMMIT
    tmpfs = False  # arfd's data directory in /dev/shm (quick syncs), not the system's /tmp

    @classmethod
    def setUpClass(cls):
        why = skip_reason()
        if why:
            raise unittest.SkipTest(why)

    def setUp(self):
        work = None
        if self.tmpfs:
            tmp = tempfile.TemporaryDirectory(prefix="arf-test-", dir="/dev/shm")
            self.addCleanup(tmp.cleanup)
            work = tmp.name
        self.arfd = Arfd(workdir=work, sync=self.sync, extra=self.extra)
        self.addCleanup(self.arfd.cleanup)
        self.arfd.start()
        self.mnt = self.mount()

    def mount(self, opts=None, url=None):
        m = Mount(url or self.arfd.url("/", self.transport),
                  self.mount_opts if opts is None else opts)
        m.start()  # on failure it unmounts and stops its daemon itself
        self.addCleanup(self._stop_mount, m)
        return m

    def _stop_mount(self, m):
        rc = m.stop()
        # a clean unmount ends the daemon with 0 (under ASan: no leaks either)
        if rc not in (0, None):
            raise AssertionError("arf-fuse exited with %s:\n%s" % (rc, m.log()))

    def as_user(self, code, uid=65534, gid=65534, groups=()):
        """Run Python code as another user; returns its stdout (stripped).
        The code may use `errno_of(fn, *args)`, which prints the errno name."""
        prelude = (
            "import os, sys, errno\n"
            "os.setgroups(%r); os.setgid(%d); os.setuid(%d)\n"
            "def errno_of(fn, *a):\n"
            "    try:\n"
            "        fn(*a)\n"
            "        return 'OK'\n"
            "    except OSError as e:\n"
            "        return errno.errorcode[e.errno]\n" % (list(groups), gid, uid))
        p = run([sys.executable, "-c", prelude + code], timeout=120)
        return p.stdout.decode().strip()
