# SPDX-License-Identifier: MIT
"""FUSE test helpers: mount an arfd export with arf-fuse (in the foreground,
so the test owns the daemon's pid), and always unmount it — fusermount3 -u
-z, then SIGTERM / SIGKILL by pid — even when the test fails.  The arfd
side is tests/integration/harness.py, imported by path.  Tests skip, with
the reason, when /dev/fuse or the arf-fuse binary is missing."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import harness  # noqa: E402,F401  (sets BUILD from ARF_BUILD)
from harness import Arfd, BUILD, run  # noqa: E402,F401

ARF_FUSE = os.path.join(BUILD, "fuse", "arf-fuse")
MOUNT_ARF = os.path.join(BUILD, "fuse", "mount.arf")


def skip_reason():
    """Why FUSE tests cannot run here, or None."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE in this kernel or container)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not accessible"
    if not os.path.exists(ARF_FUSE):
        return "arf-fuse was not built (libfuse3 not found at configure time)"
    if os.geteuid() != 0:
        return "FUSE tests mount as root (allow_other, setuid checks, mount.arf)"
    return None


def mounted(path):
    """True if path is a mount point in this namespace (no stat of it, which
    would wait on a daemon that is not serving yet)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == path:
                return True
    return False


def fstype(path):
    path = os.path.realpath(path)
    kind = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                kind = fields[fields.index("-") + 1]
    return kind


def unmount(path):
    """Lazy unmount; quiet if it is not mounted."""
    if mounted(path):
        subprocess.run(["fusermount3", "-u", "-z", path], capture_output=True, timeout=60)


class Mount:
    """One arf-fuse process in the foreground on its own mount point."""

    def __init__(self, url, opts="", mountpoint=None, workdir=None):
        self.url = url
        self.opts = opts
        self._tmp = None
        if mountpoint is None:
            self._tmp = tempfile.mkdtemp(prefix="arf-mnt-", dir=workdir)
            mountpoint = self._tmp
        self.path = mountpoint
        self.proc = None
        self.log_path = os.path.join(tempfile.gettempdir(),
                                     "arf-fuse-%d-%s.log" % (os.getpid(),
                                                             os.path.basename(mountpoint)))
        self.returncode = None

    def start(self, timeout=30):
        args = [ARF_FUSE, self.url, self.path, "-f"]
        if self.opts:
            args += ["-o", self.opts]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("arf-fuse exited with %d:\n%s" % (self.proc.returncode,
                                                                      self.log()))
            if mounted(self.path):
                os.stat(self.path)  # waits for INIT: the mount now answers
                return self
            time.sleep(0.02)
        raise RuntimeError("arf-fuse did not mount in %ds:\n%s" % (timeout, self.log()))

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def p(self, *names):
        return os.path.join(self.path, *names)

    def stop(self):
        """Unmount and wait for the daemon; returns its exit status."""
        if self.proc is None:
            return None
        unmount(self.path)
        try:
            self.returncode = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.returncode = self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.returncode = self.proc.wait(timeout=20)
        self._log.close()
        self.proc = None
        if self._tmp:
            try:
                os.rmdir(self._tmp)
            except OSError:
                pass
        return self.returncode


def find_daemon(mountpoint):
    """The pid of the arf-fuse serving mountpoint (for mounts made through
    mount(8), whose daemon the test did not start itself)."""
    mountpoint = os.path.realpath(mountpoint)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if (argv and os.path.basename(argv[0]) == b"arf-fuse" and mountpoint.encode() in argv
                and alive(int(pid))):
            return int(pid)
    return None


def alive(pid):
    """True while pid runs (a zombie nobody has reaped yet has finished)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid, timeout=10):
    deadline = time.time() + timeout
    while alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def kill_pid(pid):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if wait_gone(pid):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class FuseTestCase(unittest.TestCase):
    """One arfd and one mount per test; both stopped even on failure.
    Subclasses set mount_opts / extra (arfd --set) / transport."""
    mount_opts = ""
    extra = None
    transport = "tcp"
    sync = True

    @classmethod
    def setUpClass(cls):
        why = skip_reason()
        if why:
            raise unittest.SkipTest(why)

    def setUp(self):
        self.arfd = Arfd(sync=self.sync, extra=self.extra)
        self.addCleanup(self.arfd.cleanup)
        self.arfd.start()
        self.mnt = self.mount()

    def mount(self, opts=None, url=None):
        m = Mount(url or self.arfd.url("/", self.transport),
                  self.mount_opts if opts is None else opts)
        try:
            m.start()
        except Exception:
            m.stop()
            raise
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
