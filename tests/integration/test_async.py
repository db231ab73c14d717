#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libarf's asynchronous API (arf_submit / arf_reap) against a real arfd,
over every transport: 64 operations in flight on one client with every
completion's status and bytes checked (one-sided and requests only), the
torn-read check through asynchronous reads, readahead for sequential
readers of a file being rewritten, operations in flight across a
restart of arfd, and writes that end in EIO within their bound when arfd
stops answering (SIGSTOP) on a client that gives up.

By hand, ARF_ASYNC_ROUNDS=30 repeats the 64-in-flight runs against the same
arfd and fails any run over 20 s: the long mode that found a client which,
posting from one thread, waited 30 s for a server that waited for it to read
(net/client.c, wait_writable; 5 stalls in 26 rounds before the fix)."""
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ArfdTestCase, run  # noqa: E402

TRANSPORTS = harness.TRANSPORTS
ASYNCTEST = os.path.join(harness.BUILD, "tests", "integration", "arf-asynctest")


ROUNDS = int(os.environ.get("ARF_ASYNC_ROUNDS", "1"))


class AsyncOps(ArfdTestCase):
    def test_64_in_flight(self):
        for i in range(ROUNDS):
            for t in TRANSPORTS:
                for mode in ("one-sided", "requests"):
                    with self.subTest(round=i, transport=t, mode=mode):
                        args = [ASYNCTEST, "ops", self.arfd.url("/", t), "6000"]
                        if mode == "requests":
                            args.append("requests")
                        t0 = time.monotonic()
                        p = run(args, timeout=600)
                        took = time.monotonic() - t0
                        print("%.1f s: %s" % (took, p.stdout.decode().strip()))
                        if ROUNDS > 1:
                            self.assertLess(took, 20.0, "a stalled run")


class AsyncTorn(ArfdTestCase):
    extra = {"regions.test_torn_delay_us": "300"}

    def test_async_readers_never_see_torn_blocks(self):
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                p = run([ASYNCTEST, "torn", self.arfd.url("/", t), "3"], timeout=300)
                print(p.stdout.decode().strip())


class Readahead(ArfdTestCase):
    def test_sequential_readers_read_ahead_whole_blocks(self):
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                p = run([ASYNCTEST, "seq", self.arfd.url("/", t), "3"], timeout=300)
                print(p.stdout.decode().strip())


class AsyncRestart(ArfdTestCase):
    def test_in_flight_across_a_restart(self):
        # operations in flight when arfd is killed and started again are
        # sent again on the new connection, and every check still holds
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                p = subprocess.Popen([ASYNCTEST, "ops", self.arfd.url("/", t), "40000"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                try:
                    time.sleep(1.5)
                    self.assertIsNone(p.poll(), "the run ended before the restart")
                    self.arfd.restart(kill=True)
                    self.assertIsNone(p.poll(), "the run ended before arfd was back: nothing "
                                      "was in flight across the restart")
                    out, err = p.communicate(timeout=600)
                finally:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                self.assertEqual(p.returncode, 0, out.decode() + err.decode())
                print("across a restart: " + out.decode().strip())


class AsyncSilent(ArfdTestCase):
    def test_writes_fail_within_their_bound_when_arfd_goes_silent(self):
        # arfd stopped (SIGSTOP: its connections stay up, nothing answers):
        # on a client bounded at 1 s without a reply + 1 s of dialling, 16
        # writes in flight end in EIO, and 16 more submitted then end in
        # EIO within about one bound.  When each one's bound began as the
        # queue came to dial again for it (one slot at a time, each dial
        # waiting out the silent handshake), the 16 more took 16 s, and the
        # 16 in flight 17 s when each sent its own COMMIT at the bound of
        # unstable bytes
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                p = subprocess.Popen([ASYNCTEST, "silent", self.arfd.url("/", t), "16"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                stopped = None
                try:
                    time.sleep(1.0)
                    self.assertIsNone(p.poll(), "the writes ended before arfd was stopped")
                    self.arfd.proc.send_signal(signal.SIGSTOP)
                    stopped = time.monotonic()
                    out, err = p.communicate(timeout=120)
                    took = time.monotonic() - stopped
                finally:
                    if stopped is not None:
                        self.arfd.proc.send_signal(signal.SIGCONT)
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                self.assertEqual(p.returncode, 0, out.decode() + err.decode())
                self.assertLess(took, 2.0 + 2.0 + 3.0, out.decode() + err.decode())
                print("%s: %s; done %.1f s after the stop" % (t, out.decode().strip(), took))
                self.arfd.restart(kill=True)  # its old connections gone


class AsyncLate(ArfdTestCase):
    def test_a_late_first_sending_does_not_overwrite_newer_bytes(self):
        # A write whose connection is cut while its first sending waits
        # unread (a proxy in arf-asynctest holds it back: a server that was
        # silent, not gone) is done again on a new connection, and the
        # writer writes the same place anew; then arfd reads the first
        # sending.  Sent again under the same request id (the queue's own
        # re-send, or arf_aio_again after a fail-fast queue handed it back)
        # the reply cache answers it and the newer bytes stay (ffbig: a 1
        # MiB piece that arfd applied before it is done again, so the reply
        # cache answers the second sending, which must go as one piece, not
        # as arf_write's 512 KiB pieces: the cached answer fits no half);
        # done again
        # as a new write (newid: arf-fuse's way before), the older bytes
        # land last, which shows the proxy makes the window it closes
        url = self.arfd.url("/", "tcp")
        for how, want in (("ff", 0), ("ffbig", 0), ("plain", 0), ("newid", 3)):
            with self.subTest(how=how):
                p = subprocess.run([ASYNCTEST, "late", url, how], capture_output=True,
                                   timeout=120)
                self.assertEqual(p.returncode, want, p.stdout.decode() + p.stderr.decode())
                print(p.stdout.decode().strip())

    def test_a_write_answered_by_a_restarted_servers_cache_is_kept_anew(self):
        # the first sending applied, then arfd restarted (SIGTERM: its reply
        # cache persists) before the write is done again: the cache answers
        # with the old server's verifier, so the piece goes once more and
        # is kept for the new one -- kept under the old verifier, the next
        # fsync failed with EIO
        p = subprocess.Popen([ASYNCTEST, "late", self.arfd.url("/", "tcp"), "ffrestart"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            line = p.stdout.readline()
            self.assertEqual(line.strip(), b"restart", line.decode())
            self.arfd.restart()
            p.stdin.write(b"go\n")
            p.stdin.flush()
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, out.decode() + err.decode())
        print(out.decode().strip())


if __name__ == "__main__":
    harness.main()
