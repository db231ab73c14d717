#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfd's rdma_listen, end to end with the real daemon and arfctl.

Which branch runs is decided from the machine and the build, never from
arfd's log: rdma can be had when the build has rdma-core ($ARF_HAVE_VERBS,
set by meson) and the kernel lists an RDMA device (harness.rdma_devices(),
/sys/class/infiniband).  The log is then what is checked, and a line that
is missing, an arfd that died, or a reason that is not the machine's fail.

Without rdma: arfd asked to serve rdma beside tcp serves tcp and warns,
naming the reason (no device, or a build without rdma-core); arfctl over
tcp works and over arf+rdma:// fails at once saying why not; arfd asked to
serve rdma alone exits 1 with the reason.  With rdma: arfd serves tcp and
rdma (on $ARF_TEST_RDMA_ADDR, 127.0.0.1 unless set, as every integration
test) at once, says so, and arfctl lists the export over both."""
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import Arfd, ProcError, arfctl  # noqa: E402

DEVICES, NO_DEVICE = harness.rdma_devices()
BUILT = os.environ.get("ARF_HAVE_VERBS", "") == "1"
if not BUILT:
    WHY = "built without rdma-core"
elif not DEVICES:
    WHY = "no RDMA device"
else:
    WHY = ""
# arfd with nothing but rdma, and no regions to speak of
SMALL = {"regions.data_blocks": "1024", "regions.inodes": "1024", "regions.dir_buckets": "1024",
         "regions.dir_entries": "1024", "regions.pages": "256"}


def wait_log(d, pattern, timeout=10):
    """The first match of pattern in d's log, waiting for the line to be
    written (arfd logs its serving line after writing the port file); None
    if it never comes."""
    deadline = time.time() + timeout
    while True:
        m = re.search(pattern, d.log())
        if m or time.time() > deadline:
            return m
        time.sleep(0.05)


class RdmaListen(unittest.TestCase):
    def arfd(self, **extra):
        d = Arfd(rdma=False, regions=SMALL, extra=extra)
        self.addCleanup(d.cleanup)
        return d

    @unittest.skipIf(WHY == "", "rdma is available here (the other test runs)")
    def test_without_rdma_serves_tcp_and_says_why(self):
        d = self.arfd(**{"server.rdma_listen": "127.0.0.1:0"})
        d.start()  # an arfd that dies at start fails here, with its log
        m = wait_log(d, r"not serving rdma: (.*); serving tcp and shm only")
        self.assertIsNotNone(m, "arfd does not say it is not serving rdma:\n" + d.log())
        why = m.group(1)
        self.assertIn(WHY, why, "the warning names another reason than the machine's")
        self.assertIsNotNone(wait_log(d, r"on tcp 127\.0\.0\.1:%d and shm [^,]*, incarnation"
                                      % d.port),
                             "the serving line names tcp and shm alone:\n" + d.log())
        arfctl("ls", d.url("/"))
        p = arfctl("ls", "arf+rdma://127.0.0.1/", check=False)
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("the rdma transport is not available", err)
        self.assertIn(why, err)
        self.assertIsNone(d.proc.poll(), "arfd died:\n" + d.log())
        print("arfd without rdma (%s): serves tcp and shm; arfctl over arf+rdma: %s" % (
            why, err.strip()))

    @unittest.skipIf(WHY == "", "rdma is available here (the other test runs)")
    def test_rdma_alone_refuses_to_start(self):
        d = self.arfd(**{"server.listen": "", "server.socket": "", "server.rdma_listen": ":0"})
        with self.assertRaises(ProcError) as cm:
            d.start()
        self.assertEqual(d.proc.returncode, 1, d.log())
        self.assertIn("nothing to serve on", str(cm.exception))
        self.assertIn(WHY, str(cm.exception))
        print("arfd with rdma alone: exit 1: " + d.log().strip().splitlines()[-1])

    @unittest.skipUnless(WHY == "", "rdma is not available here: %s%s" % (
        WHY, " (%s)" % NO_DEVICE if BUILT else ""))
    def test_with_rdma_serves_both(self):
        d = Arfd(rdma=True, regions=SMALL)
        self.addCleanup(d.cleanup)
        d.start()
        self.assertIsNotNone(wait_log(d, r"rdma \[?[^\s\]]+\]?:%d, incarnation" % d.rdma_port),
                             "arfd does not say it serves rdma:\n" + d.log())
        arfctl("ls", d.url("/", "tcp"))
        arfctl("ls", d.url("/", "rdma"))
        self.assertIsNone(d.proc.poll(), "arfd died:\n" + d.log())
        print("arfd serves tcp and rdma on %s:%d (devices: %s); arfctl lists over both" % (
            harness.RDMA_ADDR, d.rdma_port, ", ".join(DEVICES)))


if __name__ == "__main__":
    harness.main()
