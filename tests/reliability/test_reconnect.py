#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reconnection: libarf clients and an arf-fuse mount survive arfd
restarts (clean and SIGKILL) on the same address: operations in flight wait
and retry on a new connection, caches are dropped for the new incarnation,
and a fio job running on the mount completes; once the server stays away
longer than the bound, operations fail with EIO instead of hanging."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "fuse"))
import harness  # noqa: E402
from harness import Arfd, arfctl, run  # noqa: E402
from fusetest import Mount, skip_reason  # noqa: E402

STRESS = os.path.join(harness.BUILD, "tests", "reliability", "arf-stress")


class Reconnect(unittest.TestCase):
    def setUp(self):
        self.arfd = Arfd(sync=True, extra={"server.workers": "2"})
        self.addCleanup(self.arfd.cleanup)
        self.arfd.start()

    def restarts_during(self, proc, times, kill_every=2):
        done = []
        for i in range(times):
            time.sleep(1.5)
            if proc.poll() is not None:
                break
            t = time.time()
            self.arfd.restart(kill=(i % kill_every == 1))
            done.append(time.time() - t)
        return done

    def test_libarf_clients_survive_restarts(self):
        d = self.arfd
        urls = d.url("/", "tcp") + "," + d.url("/", "shm")
        p = subprocess.Popen([STRESS, "load", urls, "6", "9"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        downs = self.restarts_during(p, 3)
        out = p.communicate(timeout=300)[0].decode()
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("nothing lost", out)
        print(f"libarf: 6 clients (tcp and shm) through {len(downs)} restarts "
              f"(one by SIGKILL), each down {max(downs):.2f} s at most:\n" + out.strip())

    def test_fio_on_the_mount_completes(self):
        why = skip_reason()
        if why:
            self.skipTest(why)
        fio = shutil.which("fio")
        self.assertIsNotNone(fio, "fio missing (scripts/deps.sh)")
        m = Mount(self.arfd.url("/", "tcp"), "noac").start()
        self.addCleanup(m.stop)
        path = os.path.join(m.path, "fio.dat")
        args = [fio, "--name=r", "--filename=" + path, "--size=24m", "--bs=64k",
                "--rw=randrw", "--verify=crc32c", "--ioengine=psync", "--time_based",
                "--runtime=8", "--do_verify=1"]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        downs = self.restarts_during(p, 2)
        out = p.communicate(timeout=300)[0].decode()
        self.assertEqual(p.returncode, 0, out)
        self.assertNotIn("verify:", out.lower().replace("verify=", ""))
        print(f"fio randrw with crc32c verify on the mount completed through {len(downs)} "
              f"arfd restarts")

    def test_gives_up_after_the_bound(self):
        d = self.arfd
        arfctl("mkdir", d.url("/x"))
        # a client blocked on a server that does not come back: EIO in time
        p = subprocess.Popen([harness.ARFCTL, "--reconnect-ms", "1500", "put", "-",
                              d.url("/x/slow")], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdin.write(b"a" * 1000)
        p.stdin.flush()
        time.sleep(0.3)
        d.stop()
        t = time.time()
        p.stdin.write(b"b" * 100000)
        p.stdin.close()
        err = p.stderr.read().decode()
        rc = p.wait(timeout=30)
        took = time.time() - t
        self.assertNotEqual(rc, 0)
        self.assertIn("Input/output error", err)
        self.assertLess(took, 10)
        print(f"server gone for good: the write failed with EIO after {took:.1f} s "
              f"(bound 1.5 s)")


if __name__ == "__main__":
    harness.main()
