#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Asynchronous replies to reads and writes (fuse/aio.c; issue 15 point 3,
issue 18 point 7): a read or write that arrives while another is served is
submitted to libarf's queue and answered by arf-fuse's reaper thread,
holding no worker.

- 16 threads' O_DIRECT reads (over tcp and over shm) of random sizes (512 B - 128 KiB) at random
  offsets, some across the end of the file, return the file's bytes, and
  arf-fuse's count at unmount says reads were answered asynchronously.
- 16 threads' O_DIRECT writes, each to a file of its own, leave every
  block as last written, through this mount and a second one.
- Writes in flight when arfd is SIGKILLed (stopped first; no COMMIT
  before) are done again once it is back, and every acknowledged write is
  there after.
- Reads in flight when arfd is SIGKILLed (stopped first, so that they are
  surely in flight) are done again synchronously once it is back, and
  return the right bytes; the count of reads done again is above zero.
- A process whose read waits in the queue on a stopped arfd (SIGSTOP:
  connected, silent) ends within 2 s of SIGKILL, as a synchronous wait does
  (fuse/hardmount.c); the mount serves on once arfd continues.
- Writes in flight on a connection that goes silent without breaking (a
  proxy drops everything both ways and keeps it open, as a dead path
  does) go on, on a new connection, within a few timeo (timeo=10: 1 s),
  not when TCP gives the connection up: a probe leaves it, and each
  write is done again under its first sending's request id (libarf's
  arf_aio_again), so that a sending the server reads late cannot land
  over newer bytes (tests/integration test_async AsyncLate)."""
import json
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
import tcpproxy  # noqa: E402  (tests/lib, on the path through fusetest)

SIZE = 16 << 20
THREADS = 16


def pattern(size, seed=7):
    return random.Random(seed).randbytes(size)


def counts(log, probes=False):
    """(asynchronous, done again, answered in flight[, probes of a silent
    connection]) from arf-fuse's line at unmount."""
    m = re.search(r"reads and writes answered asynchronously: (\d+) \(done again after a broken "
                  r"connection: (\d+); answered EINTR or EIO while in flight: (\d+); probes of "
                  r"a silent connection: (\d+)\)", log)
    if not m:
        raise AssertionError("no count of asynchronous reads in arf-fuse's log:\n" + log)
    return tuple(int(x) for x in m.groups()[:4 if probes else 3])


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


def block(b, n):
    """The bytes of block b's n-th write."""
    unit = b"%8d %8d " % (b, n)
    data = unit * (4096 // len(unit))
    return data + b"." * (4096 - len(data))


def check_blocks(mnt, expect):
    """(file, block)s whose bytes through mount mnt are not expect's
    ({(file, block): n}; else zeros)."""
    wrong = []
    for me in range(THREADS):
        with open(mnt.p("w%d" % me), "rb") as f:
            for b in range(Writers.BLOCKS):
                got = f.read(4096)
                n = expect.get((me, b))
                if got != (block(b, n) if n else bytes(4096)):
                    wrong.append((me, b))
    return wrong


# The writers in a process of their own, until stdin closes: the test's
# process then holds no file of the mount, so that starting arfd again
# (a fork, whose child closes what it inherited: a FLUSH, which waits for
# arfd on a hard mount) does not wait for the arfd it starts.
WRITER_PROC = """
import json, sys
sys.path.insert(0, %r)
import test_fuse_aio as T
w = T.Writers(sys.argv[1])
with w:
    print("started", flush=True)
    sys.stdin.read()
print(json.dumps({"writes": w.writes, "errors": w.errors,
                  "expect": [[me, b, n] for (me, b), n in w.expect.items()]}))
""" % os.path.dirname(os.path.abspath(__file__))


class Writers:
    """THREADS threads writing with O_DIRECT until stopped, each to a file
    of its own (the kernel holds a file's lock through a synchronous
    write, so one file's writers would take turns), at random 4 KiB
    blocks, each write's bytes new (the block, the write's number); the
    bytes each block should hold are kept in expect."""
    BLOCKS = 256  # 1 MiB files

    def __init__(self, mnt):
        self.paths = [os.path.join(mnt, "w%d" % i) for i in range(THREADS)]
        for p in self.paths:
            with open(p, "wb") as f:
                f.truncate(self.BLOCKS * 4096)
        self.stop = threading.Event()
        self.errors, self.writes = [], 0
        self.expect = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(THREADS)]

    def run(self, me):
        rnd = random.Random(me)
        buf = mmap.mmap(-1, 4096)
        fd = os.open(self.paths[me], os.O_WRONLY | os.O_DIRECT)
        n = 0
        try:
            while not self.stop.is_set():
                b = rnd.randrange(self.BLOCKS)
                n += 1
                buf[:] = block(b, n)
                os.pwrite(fd, buf, b * 4096)
                with self.lock:
                    self.expect[(me, b)] = n
                    self.writes += 1
        except Exception as e:  # noqa: BLE001 -- any failure is the test's
            with self.lock:
                self.errors.append("writer %d: %r" % (me, e))
        finally:
            os.close(fd)

    def check(self, mnt):
        return check_blocks(mnt, self.expect)

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

    def stop_kill_restart(self, waiter=None):
        """arfd stopped (what is in flight stays so), then SIGKILLed and
        started again on its port.  waiter: a process whose THREADS threads
        must be seen waiting (D) on the mount first."""
        self.stop_arfd()
        time.sleep(1)
        if waiter:
            deadline = time.monotonic() + 10
            while True:
                waiting = 0
                for t in os.listdir("/proc/%d/task" % waiter):
                    with open("/proc/%d/task/%s/stat" % (waiter, t)) as f:
                        waiting += f.read().rsplit(")", 1)[1].split()[0] == "D"
                if waiting >= THREADS:
                    break
                if time.monotonic() > deadline:
                    self.fail("only %d of the %d writers wait on the stopped arfd" % (
                        waiting, THREADS))
                time.sleep(0.05)
        old = self.arfd.proc
        old.send_signal(signal.SIGKILL)
        old.wait(timeout=60)
        self.arfd._close_log()
        self.arfd.proc = None
        self.arfd.keep_port = True
        self.arfd.start(timeout=60)

    def concurrent_writes(self):
        with Writers(self.mnt.path) as w:
            time.sleep(3)
        self.assertEqual(w.errors, [])
        self.assertGreater(w.writes, 1000)
        self.assertEqual(w.check(self.mnt), [])
        # and through another mount, which has none of it cached
        self.assertEqual(w.check(self.mount()), [])
        asynchronous, again, answered = self.unmount_counts()
        self.assertGreater(asynchronous, w.writes // self.share,
                           "few writes beside others were answered asynchronously")
        self.assertEqual((again, answered), (0, 0))
        print("%s: %d O_DIRECT writes by %d threads, every block as last written, seen by a "
              "second mount; %d answered asynchronously" % (self.transport, w.writes, THREADS,
                                                            asynchronous))

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

    def test_concurrent_writes_right_bytes(self):
        self.concurrent_writes()

    def test_writes_in_flight_done_again_after_sigkill(self):
        p = subprocess.Popen([sys.executable, "-c", WRITER_PROC, self.mnt.path],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        self.assertEqual(p.stdout.readline().strip(), b"started")
        time.sleep(1)
        # writes pile up in flight, then their connection breaks
        self.stop_kill_restart(waiter=p.pid)
        time.sleep(2)
        out, _ = p.communicate(timeout=120)
        res = json.loads(out)
        self.assertEqual(res["errors"], [])
        expect = {(me, b): n for me, b, n in res["expect"]}
        # every acknowledged write is there, though arfd was killed before
        # any COMMIT (a new verifier: the mount sends again what is above
        # the durable sequence arfd recovered)
        self.assertEqual(check_blocks(self.mnt, expect), [])
        self.assertEqual(check_blocks(self.mount(), expect), [])
        asynchronous, again, answered = self.unmount_counts()
        self.assertGreater(again, 0, "no write in flight was done again")
        self.assertEqual(answered, 0)
        print("arfd stopped, then SIGKILLed and started again under %d writing threads: %d "
              "writes done again synchronously; every block as last written (%d writes)" % (
                  THREADS, again, res["writes"]))

    def test_reads_in_flight_done_again_after_sigkill(self):
        with Readers(self.mnt.p("f"), self.data, seed=100) as r:
            time.sleep(1)
            before = r.reads
            self.stop_kill_restart()  # reads pile up in flight, then their connection breaks
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


class AsyncSilentPath(AsyncBase):
    def test_writes_on_a_silent_connection_go_on_on_a_new_one(self):
        proxy = tcpproxy.Proxy(self.arfd.port)
        self.addCleanup(proxy.stop)
        m = self.mount(opts="timeo=10", url=proxy.url("/"))
        with Writers(m.path) as w:
            time.sleep(1)
            self.assertGreater(proxy.silence(), 0)
            t0 = time.monotonic()
            with w.lock:
                before = w.writes
            # nothing breaks the silent connection: before the probe the
            # queued writers on it waited until TCP gave it up (here: never)
            while time.monotonic() - t0 < 20:
                with w.lock:
                    if w.writes >= before + 2000 or w.errors:
                        break
                time.sleep(0.05)
            took = time.monotonic() - t0
            with w.lock:
                after = w.writes - before
            if after < 2000:
                proxy.stop()  # broken at last: the writers end, and the test fails
        self.assertEqual(w.errors, [])
        self.assertGreaterEqual(after, 2000, "the writers stopped on the silent connection")
        self.assertEqual(w.check(m), [])
        self.assertEqual(w.check(self.mnt), [])  # arfd's own: every block as last written
        m.stop()
        with open(m.log_path, errors="replace") as f:
            asynchronous, again, answered, probes = counts(f.read(), probes=True)
        self.assertGreater(again, 0, "no write was done again on a new connection")
        # probes is not asserted: a synchronous write on the connection (one
        # that found none other in flight) may leave it first, timing out
        # as the probe does; without the probe the writers went on only then
        self.assertEqual(answered, 0)
        print("a connection silenced under %d writing threads (timeo 1 s): 2000 more writes "
              "%.1f s later, %d done again on a new connection, %d probes; every block as "
              "last written" % (THREADS, took, again, probes))


class AsyncReadsShm(AsyncBase):
    """Over shm a one-sided read is a copy done inside arf_submit: the
    submitting worker answers it itself."""
    transport = "shm"
    share = 50  # a copy is quick: fewer reads find another one being served

    def test_concurrent_reads_right_bytes(self):
        self.concurrent_reads()

    def test_concurrent_writes_right_bytes(self):
        self.concurrent_writes()


if __name__ == "__main__":
    fusetest.main()
