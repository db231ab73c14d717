#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Asynchronous replies to reads (fuse/aio.c; issue 15 point 3, issue 18
point 7): a read that arrives while another is served is submitted to
libarf's queue and answered by arf-fuse's reaper thread, holding no worker.

- 16 threads' O_DIRECT reads (over tcp and over shm) of random sizes (512 B - 128 KiB) at random
  offsets, some across the end of the file, return the file's bytes, and
  arf-fuse's count at unmount says reads were answered asynchronously.
- Reads in flight when arfd is SIGKILLed (stopped first, so that they are
  surely in flight) are done again synchronously once it is back, and
  return the right bytes; the count of reads done again is above zero.
- A process whose read waits in the queue on a stopped arfd (SIGSTOP:
  connected, silent) ends within 2 s of SIGKILL, as a synchronous wait does
  (fuse/hardmount.c); the mount serves on once arfd continues."""
import mmap
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import FuseTestCase  # noqa: E402

SIZE = 16 << 20
THREADS = 16


def pattern(size, seed=7):
    return random.Random(seed).randbytes(size)


def counts(log):
    """(asynchronous, done again, answered in flight) from arf-fuse's line at unmount."""
    m = re.search(r"reads answered asynchronously: (\d+) \(done again after a broken "
                  r"connection: (\d+); answered EINTR or EIO while in flight: (\d+)\)", log)
    if not m:
        raise AssertionError("no count of asynchronous reads in arf-fuse's log:\n" + log)
    return tuple(int(x) for x in m.groups())


class Readers:
    """THREADS threads reading path with O_DIRECT at random places until
    stopped, checking every read against data; errors collected."""

    def __init__(self, path, data, seed=1):
        self.path, self.data = path, data
        self.stop = threading.Event()
        self.errors, self.reads = [], 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(seed + i,), daemon=True)
                        for i in range(THREADS)]

    def run(self, seed):
        rnd = random.Random(seed)
        buf = mmap.mmap(-1, 128 << 10)  # page aligned, as O_DIRECT wants
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        try:
            while not self.stop.is_set():
                n = rnd.choice([512, 4096, 8192, 65536, 131072])
                off = rnd.randrange(0, len(self.data) + 65536, 512)
                try:
                    got = os.preadv(fd, [memoryview(buf)[:n]], off)
                except OSError as e:
                    with self.lock:
                        self.errors.append("read %d at %d: %s" % (n, off, e))
                    return
                want = self.data[off:off + n]
                if got != len(want) or buf[:got] != want:
                    with self.lock:
                        self.errors.append("read %d at %d: %d bytes, %s" % (
                            n, off, got, "right" if buf[:got] == want[:got] else "wrong"))
                    return
                with self.lock:
                    self.reads += 1
        finally:
            os.close(fd)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)


class AsyncBase(FuseTestCase):
    share = 4  # at least 1 / share of the reads are answered asynchronously
    def setUp(self):
        super().setUp()
        self.data = pattern(SIZE)
        with open(self.mnt.p("f"), "wb") as f:
            f.write(self.data)
            os.fsync(f.fileno())

    def stop_arfd(self):
        """SIGSTOP arfd, and wait until every thread of it is stopped."""
        pid = self.arfd.proc.pid
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            states = set()
            for t in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                    states.add(f.read().rsplit(")", 1)[1].split()[0])
            if states <= {"T", "t"}:
                return
            time.sleep(0.01)
        self.fail("arfd did not stop: %s" % states)

    def unmount_counts(self):
        self.mnt.stop()
        with open(self.mnt.log_path, errors="replace") as f:
            return counts(f.read())

    def concurrent_reads(self):
        with Readers(self.mnt.p("f"), self.data) as r:
            time.sleep(3)
        self.assertEqual(r.errors, [])
        self.assertGreater(r.reads, 1000)
        asynchronous, again, answered = self.unmount_counts()
        self.assertGreater(asynchronous, r.reads // self.share,
                           "few reads beside others were answered asynchronously")
        self.assertEqual((again, answered), (0, 0))
        print("%s: %d O_DIRECT reads by %d threads, every one the file's bytes; %d answered "
              "asynchronously" % (self.transport, r.reads, THREADS, asynchronous))


class AsyncReads(AsyncBase):
    def test_concurrent_reads_right_bytes(self):
        self.concurrent_reads()

    def test_reads_in_flight_done_again_after_sigkill(self):
        with Readers(self.mnt.p("f"), self.data, seed=100) as r:
            time.sleep(1)
            self.stop_arfd()  # reads pile up in flight
            time.sleep(1)
            before = r.reads
            old = self.arfd.proc
            old.send_signal(signal.SIGKILL)
            old.wait(timeout=60)
            self.arfd._close_log()
            self.arfd.proc = None
            self.arfd.keep_port = True
            self.arfd.start(timeout=60)
            time.sleep(2)
        self.assertEqual(r.errors, [])
        self.assertGreater(r.reads, before, "no read finished after arfd came back")
        asynchronous, again, answered = self.unmount_counts()
        self.assertGreater(again, 0, "no read in flight was done again")
        self.assertEqual(answered, 0)
        print("arfd stopped, then SIGKILLed and started again under %d reading threads: "
              "%d reads done again synchronously, all %d reads the file's bytes" % (
                  THREADS, again, r.reads))

    def test_sigkill_ends_a_queued_read(self):
        code = ("import mmap, os, sys\n"
                "buf = mmap.mmap(-1, 4096)\n"
                "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)\n"
                "print('ready', flush=True); sys.stdin.readline()\n"
                "os.preadv(fd, [buf], int(sys.argv[2]))\n"
                "print('read', flush=True)\n")
        procs = []
        try:
            for i in range(2):
                p = subprocess.Popen([sys.executable, "-c", code, self.mnt.p("f"),
                                      str((i + 3) * 1048576)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                procs.append(p)
                self.assertEqual(p.stdout.readline().strip(), b"ready")
            self.stop_arfd()
            for p in procs:  # the first waits synchronously, the second in the queue
                p.stdin.write(b"go\n")
                p.stdin.flush()
                time.sleep(0.5)
            time.sleep(1)
            self.assertEqual([p.poll() for p in procs], [None, None])
            worst = 0.0
            for p in reversed(procs):
                t = time.monotonic()
                p.kill()
                p.wait(timeout=30)
                worst = max(worst, time.monotonic() - t)
            self.assertLess(worst, 2.0)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=30)
                p.stdin.close()
                p.stdout.close()
            self.arfd.proc.send_signal(signal.SIGCONT)
        with open(self.mnt.p("f"), "rb") as f:
            self.assertEqual(f.read(4096), self.data[:4096])
        asynchronous, again, answered = self.unmount_counts()
        self.assertEqual(answered, 1, "the queued read was not the one SIGKILL ended")
        print("a read queued on a stopped arfd and a synchronous one: SIGKILL ended both "
              "within %.2f s" % worst)


class AsyncReadsShm(AsyncBase):
    """Over shm a one-sided read is a copy done inside arf_submit: the
    submitting worker answers it itself."""
    transport = "shm"
    share = 50  # a copy is quick: fewer reads find another one being served

    def test_concurrent_reads_right_bytes(self):
        self.concurrent_reads()


if __name__ == "__main__":
    fusetest.main()
