#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Power loss, simulated: arfd runs with [server] test_power_loss, so that
everything it has not synced -- RocksDB's write-ahead log (manual_wal_flush)
and the data log -- lives in its own memory, and a SIGKILL loses exactly
what a power cut would (a plain SIGKILL leaves it all in the page cache,
where it survives).  Over ARF_POWERLOSS_CYCLES cycles (default 50; more by
hand), arf-powerloss's two clients write, one commits, arfd is SIGKILLed and
started again, and the test asserts:

  * nothing committed is lost;
  * the writes the crash lost are re-sent by libarf (A's resent_bytes
    grows over the run) and are all there afterwards;
  * no re-send overwrites a later committed write of the other client;
  * arfctl fsck is clean every 10 cycles;
  * the data log's heads are recycled files (a restart's head takes a spare
    left by reclamation), so recovery meets records of a file's earlier
    life past the new ones, and ignores them.

Every arfd is stopped by pid, even when a test fails."""
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import Arfd  # noqa: E402

DRIVER = os.path.join(harness.BUILD, "tests", "reliability", "arf-powerloss")


class PowerLoss(unittest.TestCase):
    where = None  # the data directory's file system: the system's /tmp

    def test_committed_survives_uncommitted_resent(self):
        cycles = int(os.environ.get("ARF_POWERLOSS_CYCLES", "50"))
        tmp = tempfile.TemporaryDirectory(prefix="arf-powerloss-", dir=self.where)
        self.addCleanup(tmp.cleanup)
        d = Arfd(workdir=tmp.name, sync=False,
                 extra={"server.test_power_loss": "true", "server.workers": "2"})
        self.addCleanup(d.stop)
        d.start()
        drv = subprocess.Popen([DRIVER, d.url("/")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def reap():
            if drv.poll() is None:
                drv.kill()
            drv.wait()
            drv.stdin.close()
            drv.stdout.close()
        self.addCleanup(reap)

        def say(line):
            drv.stdin.write(line + "\n")
            drv.stdin.flush()
            out = drv.stdout.readline().strip()
            if not out:
                out = "(driver exited %s) %s" % (drv.wait(timeout=30), drv.stdout.read())
            return out

        t0 = time.monotonic()
        resent = []
        recycled = 0
        for i in range(cycles):
            out = say("cycle %d" % i)
            self.assertEqual(out, "crash", "cycle %d: %s\narfd's log:\n%s" % (i, out, d.log()))
            d.restart(kill=True)  # SIGKILL: what was not synced is gone
            out = say("check")
            self.assertTrue(out.startswith("ok "), "cycle %d after the crash: %s\narfd's log:\n%s"
                            % (i, out, d.log()))
            resent.append(int(out.split()[1]))
            recycled += d.stats()["store"]["log_recycled"]
            if i % 10 == 9:
                f = harness.arfctl("--control", d.control, "fsck", check=False)
                self.assertEqual(f.returncode, 0, "cycle %d: fsck: %s%s" % (
                    i, f.stdout.decode(), f.stderr.decode()))
        # B's create after its COMMIT leaves the data log's mark unsynced:
        # a restart finds RocksDB ahead of the mark and checks every block
        with open(d.log_path, errors="replace") as f:
            checked = f.read().count("every block checked against its tag, none lost")
        self.assertGreater(checked, 0, "no restart recovered past the data log's last synced "
                           "mark:\n" + d.log())
        summary = say("quit")
        drv.wait(timeout=60)
        self.assertGreater(resent[-1], 0, "no write was ever re-sent: the crashes lost nothing, "
                           "so power loss was not simulated")
        self.assertGreater(recycled, 0, "no data log head was a recycled file")
        grew = sum(1 for x, y in zip([0] + resent, resent) if y > x)
        print("power loss: %d cycles in %.0f s; nothing committed lost, no committed write of "
              "B overwritten by A's re-sends; A re-sent %d bytes in %d of %d restarts; %d "
              "restarts past an unsynced mark; %d recycled heads; %s" % (
                  cycles, time.monotonic() - t0, resent[-1], grew, cycles, checked, recycled,
                  summary))


class PowerLossQuickSyncs(PowerLoss):
    """The same on tmpfs, where syncs are quick: the soft-NIC thread then
    serves B's creates itself and runs their group commit (arfd/lanes.c,
    commit.c), which must make them as durable before their replies."""
    where = "/dev/shm"


if __name__ == "__main__":
    harness.main()
