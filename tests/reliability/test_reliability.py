#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reliability against real arfd processes (issue: crashes, load):

* crash consistency: a mixed workload (creates, writes, renames, unlinks,
  mkdirs) on a default export (unstable writes, each committed before the
  workload counts it acknowledged), arfd SIGKILLed at random moments and
  restarted, ARF_KILL_CYCLES times (default 50; more by hand); after every
  restart nothing acknowledged is lost and nothing unexpected is there.
* uncommitted writes: the same workload without COMMITs under a simulated
  power loss ([server] test_power_loss): every metadata step acknowledged
  is there (durable before its reply), a file may have lost its
  uncommitted bytes but never holds others; a clean stop loses nothing.
  (test_powerloss.py shows the re-sends of a client that outlives the
  crash.)
* load: ARF_LOAD_CLIENTS (32) clients, tcp and shm mixed, for ARF_LOAD_SECONDS
  (60), then a full verification of the tree; latency percentiles printed.

Every arfd is stopped by pid, even when a test fails."""
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import Arfd, run  # noqa: E402

STRESS = os.path.join(harness.BUILD, "tests", "reliability", "arf-stress")


def crash_cycles(testcase, cycles, seed, commit=True, extra=None):
    """SIGKILL cycles of the crash writer on a default export; after each,
    arf-stress check (--uncommitted when the writer does not commit) and
    fsck.  Returns the log of acknowledged steps and the last check's line."""
    rnd = random.Random(seed)
    tmp = tempfile.TemporaryDirectory(prefix="arf-crash-")
    testcase.addCleanup(tmp.cleanup)
    d = Arfd(workdir=tmp.name, sync=False, extra=extra)
    testcase.addCleanup(d.stop)
    log = []
    next_id = 0
    last = ""
    for cycle in range(cycles):
        d.start()
        url = d.url("/", "tcp" if cycle % 2 == 0 else "shm")
        # unbuffered: readline below takes one line and nothing after it;
        # a buffered reader would read ahead lines that communicate(), which
        # reads the descriptor itself, never sees (a step acknowledged at
        # the start of a cycle then looked unacknowledged to the check)
        w = subprocess.Popen([STRESS, "crash", url, str(next_id)] + (["commit"] if commit else []),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
        first = []
        try:
            # the kill falls inside the workload, not in the writer's
            # connection handshake: wait for its first step
            while True:
                line = w.stdout.readline().decode()
                if not line:
                    break
                first.append(line.rstrip("\n"))
                if line.startswith(("S ", "FAIL")):
                    break
            time.sleep(rnd.uniform(0.05, 0.6))
            d.kill()  # SIGKILL at a random moment of the workload
        finally:
            out = w.communicate(timeout=60)[0].decode()
        lines = first + out.splitlines()
        bad = [x for x in lines if x.startswith("FAIL")]
        # the writer dies with "connection" errors once arfd is gone: expected
        log += [x for x in lines if len(x.split()) == 2 and x[0] in "SCWRUD"]
        ids = [int(x.split()[1]) for x in log]
        next_id = (max(ids) + 1) if ids else next_id
        if bad and "connect" in bad[0] and not any(x.startswith("S ") for x in lines):
            testcase.fail("cycle %d: writer could not start: %s\narfd's log:\n%s" % (
                cycle, bad[0], d.log()))
        d.start()
        p = run([STRESS, "check", d.url("/")] + ([] if commit else ["--uncommitted"]),
                input="\n".join(log).encode(), check=False)
        testcase.assertEqual(p.returncode, 0, "cycle %d: %s%s" % (
            cycle, p.stdout.decode(), p.stderr.decode()[-3000:]))
        last = p.stdout.decode().strip()
        f = harness.arfctl("--control", d.control, "fsck", check=False)
        d.stop()
        testcase.assertEqual(f.returncode, 0, "cycle %d: fsck after restart: %s%s" % (
            cycle, f.stdout.decode(), f.stderr.decode()))
    return d, log, last


class Crash(unittest.TestCase):
    def test_sigkill_cycles_lose_nothing_acknowledged(self):
        cycles = int(os.environ.get("ARF_KILL_CYCLES", "50"))
        d, log, last = crash_cycles(self, cycles, seed=1234)
        acked = sum(1 for x in log if not x.startswith("S "))
        print(f"crash: survived {cycles} SIGKILL cycles on a default export (writes committed "
              f"before counted); {acked} acknowledged steps, all present, arfctl fsck clean "
              f"after every restart; {last}")
        self.assertGreater(acked, cycles, "the workload made too little progress")

    def test_uncommitted_window(self):
        # A clean stop (SIGTERM) makes everything durable, committed or not.
        tmp = tempfile.TemporaryDirectory(prefix="arf-uncommitted-")
        self.addCleanup(tmp.cleanup)
        d = Arfd(workdir=tmp.name, sync=False)
        self.addCleanup(d.stop)
        d.start()
        w = subprocess.Popen([STRESS, "crash", d.url("/"), "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        time.sleep(1.0)
        self.assertEqual(d.stop(), 0)
        out = w.communicate(timeout=60)[0].decode()
        log = [x for x in out.splitlines() if len(x.split()) == 2 and x[0] in "SCWRUD"]
        d.start()
        p = run([STRESS, "check", d.url("/")], input="\n".join(log).encode(), check=False)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode()[-3000:])
        print("uncommitted writes, clean stop: " + p.stdout.decode().strip())
        d.stop()
        # power lost: the writes' bytes may be gone (their client died with
        # arfd, so nobody re-sends them), every metadata step is there
        _, log2, last = crash_cycles(self, 5, seed=99, commit=False,
                                     extra={"server.test_power_loss": "true"})
        print("uncommitted writes, after 5 power losses: " + last)


class Load(unittest.TestCase):
    def test_32_clients_mixed(self):
        clients = os.environ.get("ARF_LOAD_CLIENTS", "32")
        seconds = os.environ.get("ARF_LOAD_SECONDS", "60")
        d = Arfd(sync=True, extra={"server.workers": "2"})
        self.addCleanup(d.cleanup)
        d.start()
        urls = d.url("/", "tcp") + "," + d.url("/", "shm")
        p = run([STRESS, "load", urls, clients, seconds], timeout=int(float(seconds)) + 600)
        print(p.stdout.decode().strip())


if __name__ == "__main__":
    harness.main()
