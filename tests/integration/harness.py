# SPDX-License-Identifier: MIT
"""Integration-test harness: start a real arfd on loopback (free port) and
a private UNIX socket, in a temporary data directory, and always stop it by
pid (SIGTERM, then SIGKILL) even when the test fails."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BUILD = os.environ.get("ARF_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
ARFD = os.path.join(BUILD, "arfd", "arfd")
ARFCTL = os.path.join(BUILD, "tools", "arfctl", "arfctl")
ITEST = os.path.join(BUILD, "tests", "integration", "arf-itest")



def rdma_devices():
    """The RDMA devices the kernel offers (what ibv_get_device_list reads),
    and why there are none."""
    d = "/sys/class/infiniband"
    try:
        devs = sorted(os.listdir(d))
    except OSError as e:
        return [], f"{d}: {e.strerror} (this kernel has no RDMA)"
    return devs, "" if devs else f"{d} is empty (no RDMA device)"


RDMA_DEVICES, RDMA_WHY = rdma_devices()
# The transports every data-path test runs over: verbs too where the
# machine has an RDMA device (real or soft-RoCE); otherwise it is skipped,
# and the run says so (transports_note).
TRANSPORTS = ("tcp", "shm") + (("rdma",) if RDMA_DEVICES else ())


def transports_note():
    if RDMA_DEVICES:
        return "transports: tcp, shm, rdma (%s)" % ", ".join(RDMA_DEVICES)
    return "transports: tcp, shm; verbs skipped: " + RDMA_WHY


# rdma needs an address on an RDMA-capable interface (soft-RoCE binds to a
# netdev: set ARF_TEST_RDMA_ADDR to its address, as tests/verbs does)
RDMA_ADDR = os.environ.get("ARF_TEST_RDMA_ADDR", "127.0.0.1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# small regions keep each test's arfd light; sizes are still ample for the tests
SMALL = {
    "regions.inodes": "65536",
    "regions.dir_buckets": "32768",
    "regions.dir_entries": "65536",
    "regions.pages": "4096",
    "regions.data_blocks": "131072",
}


class Arfd:
    """One arfd process with its own data directory, port and socket."""

    def __init__(self, workdir=None, sync=True, extra=None, spin_us=0):
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="arf-it-")
            workdir = self._tmp.name
        self.workdir = workdir
        self.data_dir = os.path.join(workdir, "data")
        self.socket = os.path.join(workdir, "arfd.sock")
        self.control = os.path.join(workdir, "arfd.ctl")  # arfd's default: beside the socket
        self.port_file = os.path.join(workdir, "port")
        self.log_path = os.path.join(workdir, "arfd.log")
        self.sync = sync
        self.extra = dict(SMALL)
        self.extra.update(extra or {})
        self.spin_us = spin_us
        self.proc = None
        self.port = None
        self.rdma_port = free_port() if "rdma" in TRANSPORTS else None

    def start(self, timeout=30):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        listen = "127.0.0.1:%d" % (self.port if getattr(self, "keep_port", False) else 0)
        args = [ARFD, "--foreground", "--listen", listen, "--socket", self.socket,
                "--data-dir", self.data_dir, "--spin-us", str(self.spin_us),
                "--set", "server.port_file=" + self.port_file,
                "--set", "export.sync=" + ("true" if self.sync else "false")]
        if self.rdma_port:
            args += ["--rdma-listen", "%s:%d" % (RDMA_ADDR, self.rdma_port)]
        for k, v in self.extra.items():
            args += ["--set", f"{k}={v}"]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("arfd exited with %d:\n%s" % (self.proc.returncode, self.log()))
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    txt = f.read().strip()
                if txt:
                    self.port = int(txt)
                    return self
            time.sleep(0.05)
        raise RuntimeError("arfd did not start in %ds:\n%s" % (timeout, self.log()))

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def url(self, path="/", transport="tcp"):
        if transport == "tcp":
            return f"arf://127.0.0.1:{self.port}{path}"
        if transport == "rdma":
            return f"arf+rdma://{RDMA_ADDR}:{self.rdma_port}{path}"
        return f"arf+shm://{path}?socket={self.socket}"

    def restart(self, kill=False):
        """Stop (SIGTERM, or SIGKILL) and start again on the same port and
        socket, as a restarted server would be."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.keep_port = True
        return self.start()

    def kill(self):
        """SIGKILL: no clean shutdown."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._close_log()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(timeout=30)
        self._close_log()
        return self.proc.returncode if self.proc else None

    def _close_log(self):
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None

    def cleanup(self):
        self.stop()
        if self._tmp:
            self._tmp.cleanup()


def run(args, check=True, timeout=600, input=None):
    p = subprocess.run(args, capture_output=True, timeout=timeout, input=input)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\nstdout: %s\nstderr: %s" % (
            " ".join(args), p.returncode, p.stdout.decode(errors="replace")[-3000:],
            p.stderr.decode(errors="replace")[-3000:]))
    return p


def arfctl(*args, check=True, input=None):
    return run([ARFCTL] + list(args), check=check, input=input)


def arfctl_json(*args):
    p = arfctl("--json", *args)
    return json.loads(p.stdout)


class ArfdTestCase(unittest.TestCase):
    """A test case with one arfd per test, stopped even on failure."""
    sync = True
    extra = None

    def setUp(self):
        self.arfd = Arfd(sync=self.sync, extra=self.extra)
        self.addCleanup(self.arfd.cleanup)
        self.arfd.start()


def main():
    print(transports_note(), flush=True)
    unittest.main(verbosity=2)
