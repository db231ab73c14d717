# SPDX-License-Identifier: MIT
"""Integration-test harness: the processes come from tests/lib/arfproc.py
(arfd on loopback on a free port and a private UNIX socket, in a temporary
data directory, with a configuration file of its own, always stopped by
pid, SIGTERM then SIGKILL, even when the test fails); this adds what the
unittest side needs: the built programs, a test case with one arfd per
test, and main(), which exits 77 when nothing ran (tests/lib/testmain.py)."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import arfproc  # noqa: E402
import testmain  # noqa: E402
from arfproc import (BUILD, RDMA_ADDR, RDMA_DEVICES, RDMA_WHY, SMALL, TRANSPORTS,  # noqa: E402,F401
                     Arfd, ProcError, free_port, rdma_devices, run)

# what tests import from here (arfproc's names among them)
__all__ = ["ARFCTL", "ARFD", "BUILD", "ITEST", "RDMA_ADDR", "RDMA_DEVICES", "RDMA_WHY", "SMALL",
           "TRANSPORTS", "Arfd", "ArfdTestCase", "ProcError", "arfctl", "arfctl_json",
           "free_port", "main", "rdma_devices", "run", "transports_note"]

ARFD = arfproc.arfd_bin()
ARFCTL = os.path.join(BUILD, "tools", "arfctl", "arfctl")
ITEST = os.path.join(BUILD, "tests", "integration", "arf-itest")


def transports_note():
    if RDMA_DEVICES:
        return "transports: tcp, shm, rdma (%s)" % ", ".join(RDMA_DEVICES)
    return "transports: tcp, shm; verbs skipped: " + RDMA_WHY


def arfctl(*args, check=True, input=None):
    return run([ARFCTL] + list(args), check=check, input=input)


def arfctl_json(*args):
    p = arfctl("--json", *args)
    return json.loads(p.stdout)


class ArfdTestCase(unittest.TestCase):
    """A test case with one arfd per test, stopped even on failure."""
    sync = False  # the default export: unstable writes until a COMMIT
    extra = None

    def setUp(self):
        self.arfd = Arfd(sync=self.sync, extra=self.extra)
        self.addCleanup(self.arfd.cleanup)
        self.arfd.start()


def main():
    testmain.main(transports_note())
