#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Advisory locks held by arfd: two mounts of one export exclude each other
with fcntl and flock locks (blocking and not), a lock goes when its holder
dies, a waiting process can be killed or interrupted, a mount whose
arf-fuse dies loses its locks when its lease runs out, a mount cut off for
longer than its lease gets EIO on the files whose locks went, locks are
reclaimed across an arfd restart (the grace period), and SQLite with a
rollback journal shared by two mounts keeps every row."""
import errno
import fcntl
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import FuseTestCase  # noqa: E402

LEASE_S = 3
GRACE_S = 20

# A child process that opens a file and runs code (f is its descriptor);
# it says what happened on stdout, a line at a time.
CHILD = """import errno, fcntl, os, signal, sys, time
f = os.open(sys.argv[1], os.O_RDWR)
def say(*a):
    print(*a, flush=True)
"""


def child(path, code):
    return subprocess.Popen([sys.executable, "-c", CHILD + code, path], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True)


class watchdog:
    """A blocking call that has not returned after seconds fails the test
    (TimeoutError) rather than hanging it."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def ring(*a):
            raise TimeoutError("still blocked after %d s" % self.seconds)
        self.old = signal.signal(signal.SIGALRM, ring)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)
        return False


def try_lockf(fd, kind, length=0, start=0):
    """'got' or the errno name of a non-blocking fcntl lock."""
    try:
        fcntl.lockf(fd, kind | fcntl.LOCK_NB, length, start)
        return "got"
    except OSError as e:
        return errno.errorcode[e.errno]


def try_flock(fd, kind):
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return "got"
    except OSError as e:
        return errno.errorcode[e.errno]


class Locks(FuseTestCase):
    extra = {"locks.lease_s": str(LEASE_S), "locks.grace_s": str(GRACE_S)}

    def setUp(self):
        # no test may hang the suite: a child that never answers fails it
        dog = watchdog(900 if "sqlite" in self.id() else 180)
        dog.__enter__()
        self.addCleanup(dog.__exit__)
        super().setUp()
        self.a, self.b = self.mnt, self.mount()
        with open(self.a.p("f"), "wb") as f:
            f.write(b"0123456789" * 100)
        self.procs = []
        self.addCleanup(self.reap)

    def reap(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            for pipe in (p.stdin, p.stdout):
                if pipe:
                    pipe.close()

    def forget_mount(self, m):
        """A mount whose arf-fuse this test killed: unmounted, its exit
        status not held against it."""
        fusetest.unmount(m.path)
        m.proc.wait(timeout=30)
        m.proc = None
        m.returncode = None

    def spawn(self, path, code):
        p = child(path, code)
        self.procs.append(p)
        return p

    def open_b(self, name="f"):
        fd = os.open(self.b.p(name), os.O_RDWR)
        self.addCleanup(os.close, fd)
        return fd

    def test_fcntl_exclusion_across_mounts(self):
        h = self.spawn(self.a.p("f"), "fcntl.lockf(f, fcntl.LOCK_EX, 100, 0)\n"
                                      "fcntl.lockf(f, fcntl.LOCK_SH, 100, 200)\n"
                                      "say('held'); sys.stdin.readline()\n"
                                      "fcntl.lockf(f, fcntl.LOCK_UN, 100, 0); say('unlocked')\n"
                                      "sys.stdin.readline()")
        self.assertEqual(h.stdout.readline().strip(), "held")
        fb = self.open_b()
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX, 10, 50), "EAGAIN")   # inside [0, 100)
        self.assertEqual(try_lockf(fb, fcntl.LOCK_SH, 1, 99), "EAGAIN")
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX, 100, 100), "got")    # [100, 200) free
        self.assertEqual(try_lockf(fb, fcntl.LOCK_SH, 50, 200), "got")     # shared with A
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX, 50, 200), "EAGAIN")  # not exclusive
        # F_GETLK from the other mount names the holder's lock
        q = fcntl.fcntl(fb, fcntl.F_GETLK, _flock(fcntl.F_WRLCK, 10, 5))
        ltype, _, start, length, pid = _unflock(q)
        self.assertEqual((ltype, start, length, pid), (fcntl.F_WRLCK, 0, 100, h.pid))
        # blocking: a waiter on B gets the lock when A lets go, not before
        w = self.spawn(self.b.p("f"), "say('waiting'); t = time.time()\n"
                                      "fcntl.lockf(f, fcntl.LOCK_EX, 100, 0)\n"
                                      "say('got %.2f' % (time.time() - t))")
        self.assertEqual(w.stdout.readline().strip(), "waiting")
        time.sleep(1.5)
        self.assertIsNone(w.poll())
        h.stdin.write("\n")
        h.stdin.flush()
        self.assertEqual(h.stdout.readline().strip(), "unlocked")
        waited = float(w.stdout.readline().split()[1])
        self.assertGreaterEqual(waited, 1.4)
        self.assertEqual(w.wait(timeout=30), 0)
        print("fcntl: ranges and read/write exclude across mounts, F_GETLK names pid %d, "
              "a waiter on B got the lock %.2f s later when A let go" % (h.pid, waited))

    def test_flock_exclusion_across_mounts(self):
        fa = os.open(self.a.p("f"), os.O_RDWR)
        self.addCleanup(os.close, fa)
        fb = self.open_b()
        fcntl.flock(fa, fcntl.LOCK_SH)
        self.assertEqual(try_flock(fb, fcntl.LOCK_SH), "got")
        self.assertEqual(try_flock(fb, fcntl.LOCK_EX), "EAGAIN")
        fcntl.flock(fb, fcntl.LOCK_UN)
        fcntl.flock(fa, fcntl.LOCK_EX)
        self.assertEqual(try_flock(fb, fcntl.LOCK_SH), "EAGAIN")
        # flock and fcntl locks are apart, as on a local Linux filesystem
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX), "got")
        fcntl.lockf(fb, fcntl.LOCK_UN)
        w = self.spawn(self.b.p("f"), "say('waiting'); t = time.time()\n"
                                      "fcntl.flock(f, fcntl.LOCK_EX)\n"
                                      "say('got %.2f' % (time.time() - t))")
        self.assertEqual(w.stdout.readline().strip(), "waiting")
        time.sleep(1.5)
        self.assertIsNone(w.poll())
        fcntl.flock(fa, fcntl.LOCK_UN)
        waited = float(w.stdout.readline().split()[1])
        self.assertGreaterEqual(waited, 1.4)
        w.wait(timeout=30)
        # the waiter has exited: its open file, and with it the lock, is gone
        self.assertEqual(try_flock(fa, fcntl.LOCK_EX), "got")
        print("flock: shared and exclusive across mounts, apart from fcntl locks; "
              "a waiter got it %.2f s later" % waited)

    def test_lock_goes_with_its_holder(self):
        h = self.spawn(self.a.p("f"), "fcntl.lockf(f, fcntl.LOCK_EX)\n"
                                      "g = os.open(sys.argv[1], os.O_RDWR)\n"
                                      "fcntl.flock(g, fcntl.LOCK_EX)\n"
                                      "say('held'); time.sleep(300)")
        self.assertEqual(h.stdout.readline().strip(), "held")
        fb = self.open_b()
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX), "EAGAIN")
        self.assertEqual(try_flock(fb, fcntl.LOCK_EX), "EAGAIN")
        h.kill()
        h.wait()
        t = time.time()
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX), "got")
        self.assertEqual(try_flock(fb, fcntl.LOCK_EX), "got")
        print("a killed holder's fcntl and flock locks were free at once (%.3f s)" %
              (time.time() - t))

    def test_waiting_process_killed_or_interrupted(self):
        fb = self.open_b()
        fcntl.lockf(fb, fcntl.LOCK_EX)
        w = self.spawn(self.a.p("f"), "say('waiting'); fcntl.lockf(f, fcntl.LOCK_EX); "
                                      "say('got')")
        self.assertEqual(w.stdout.readline().strip(), "waiting")
        time.sleep(0.5)
        t = time.time()
        w.kill()
        w.wait(timeout=10)
        killed = time.time() - t
        self.assertLess(killed, 1.0)
        # a signal whose handler raises: the call returns, without the lock
        w = self.spawn(self.a.p("f"), "class Alarm(Exception): pass\n"
                                      "def ring(*a): raise Alarm()\n"
                                      "signal.signal(signal.SIGALRM, ring)\n"
                                      "signal.setitimer(signal.ITIMER_REAL, 1.0)\n"
                                      "try:\n"
                                      "    fcntl.lockf(f, fcntl.LOCK_EX); say('got')\n"
                                      "except Alarm:\n"
                                      "    say('interrupted')\n"
                                      "sys.stdin.readline()")
        self.assertEqual(w.stdout.readline().strip(), "interrupted")
        fcntl.lockf(fb, fcntl.LOCK_UN)
        fc = os.open(self.b.p("f"), os.O_RDWR)
        self.addCleanup(os.close, fc)
        # the interrupted process holds nothing, and nothing waits at arfd
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX), "got")
        locks = self.status_locks()
        self.assertEqual(locks["waiting"], 0, locks)
        print("a SIGKILLed waiter ended in %.3f s; an interrupted one returned without the "
              "lock; arfd holds no waiting request" % killed)

    def status_locks(self):
        out = fusetest.run([os.path.join(fusetest.BUILD, "tools", "arfctl", "arfctl"),
                            "--json", "status", self.arfd.url("/")]).stdout.decode()
        import json
        return json.loads(out)["server"]["locks"]

    def test_deadlock_detected(self):
        fb = self.open_b()
        fcntl.lockf(fb, fcntl.LOCK_EX, 1, 1)
        h = self.spawn(self.a.p("f"), "fcntl.lockf(f, fcntl.LOCK_EX, 1, 0); say('held')\n"
                                      "fcntl.lockf(f, fcntl.LOCK_EX, 1, 1); say('got 1')\n"
                                      "sys.stdin.readline()")
        self.assertEqual(h.stdout.readline().strip(), "held")
        time.sleep(0.5)  # A now waits for byte 1, which B holds
        with self.assertRaises(OSError) as cm, watchdog(60):
            fcntl.lockf(fb, fcntl.LOCK_EX, 1, 0)
        self.assertEqual(cm.exception.errno, errno.EDEADLK)
        fcntl.lockf(fb, fcntl.LOCK_UN, 1, 1)
        self.assertEqual(h.stdout.readline().strip(), "got 1")
        print("a cycle across two mounts was refused with EDEADLK")

    def test_lease_expires_when_arf_fuse_dies(self):
        h = self.spawn(self.a.p("f"), "fcntl.lockf(f, fcntl.LOCK_EX)\n"
                                      "fcntl.flock(f, fcntl.LOCK_EX)\n"
                                      "say('held'); time.sleep(300)")
        self.assertEqual(h.stdout.readline().strip(), "held")
        fb = self.open_b()
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX), "EAGAIN")
        self.a.proc.kill()  # A's arf-fuse: no FLUSH, no unlock, no renewal
        self.addCleanup(self.forget_mount, self.a)
        t = time.time()
        with watchdog(60):
            fcntl.lockf(fb, fcntl.LOCK_EX)   # waits for the lease to run out
        took = time.time() - t
        fcntl.flock(fb, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.assertGreater(took, LEASE_S - 2)
        self.assertLess(took, LEASE_S + 5)
        h.kill()
        print("A's arf-fuse SIGKILLed: its locks went %.2f s later (lease %d s)" %
              (took, LEASE_S))

    def test_lost_lease_gives_eio(self):
        # B's holder is a process of its own (any close by a process drops
        # its fcntl locks), started before A stops (a fork closes A's file)
        h = self.spawn(self.b.p("f"), "say('ready'); sys.stdin.readline()\n"
                                      "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                                      "os.pwrite(f, b'B wrote this', 0)\n"
                                      "say('held'); sys.stdin.readline()")
        self.assertEqual(h.stdout.readline().strip(), "ready")
        fa = os.open(self.a.p("f"), os.O_RDWR)
        fcntl.lockf(fa, fcntl.LOCK_EX)
        os.kill(self.a.proc.pid, signal.SIGSTOP)  # A is cut off: no renewal
        try:
            time.sleep(LEASE_S + 1.5)
            h.stdin.write("\n")
            h.stdin.flush()
            self.assertEqual(h.stdout.readline().strip(), "held")
        finally:
            os.kill(self.a.proc.pid, signal.SIGCONT)
        with self.assertRaises(OSError) as cm:
            os.pwrite(fa, b"A thinks it holds the lock", 0)
        self.assertEqual(cm.exception.errno, errno.EIO)
        with self.assertRaises(OSError) as cm:
            os.pread(fa, 12, 0)
        self.assertEqual(cm.exception.errno, errno.EIO)
        with open(self.b.p("f"), "rb") as f:
            self.assertEqual(f.read(12), b"B wrote this")
        # closed and opened again, the file works; the lock is B's
        os.close(fa)
        fa2 = os.open(self.a.p("f"), os.O_RDWR)
        self.addCleanup(os.close, fa2)
        self.assertEqual(os.pread(fa2, 12, 0), b"B wrote this")
        self.assertEqual(try_lockf(fa2, fcntl.LOCK_EX), "EAGAIN")
        print("A stopped past its lease: B took the lock, A's write and read then said EIO; "
              "reopened, the file works")

    def test_locks_reclaimed_after_restart(self):
        h = self.spawn(self.a.p("f"), "fcntl.lockf(f, fcntl.LOCK_EX, 10, 0)\n"
                                      "g = os.open(sys.argv[1], os.O_RDWR)\n"
                                      "fcntl.flock(g, fcntl.LOCK_SH)\n"
                                      "say('held'); sys.stdin.readline()\n"
                                      "fcntl.lockf(f, fcntl.LOCK_UN, 10, 0)\n"
                                      "fcntl.flock(g, fcntl.LOCK_UN); say('unlocked')\n"
                                      "sys.stdin.readline()")
        self.assertEqual(h.stdout.readline().strip(), "held")
        fb = self.open_b()
        # A is held back while arfd crashes and restarts, so that its
        # reclaim comes late: meanwhile new locks wait (the grace period)
        stopped = 3.0
        os.kill(self.a.proc.pid, signal.SIGSTOP)
        try:
            self.arfd.restart(kill=True)  # a crash: the lock table is gone
        finally:
            timer = threading.Timer(stopped, os.kill, (self.a.proc.pid, signal.SIGCONT))
            timer.start()
            self.addCleanup(timer.join)
        t = time.time()
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX, 1, 5), "EAGAIN")  # reclaimed by A
        took = time.time() - t
        self.assertGreater(took, stopped - 1)   # waited for the grace period ...
        self.assertLess(took, GRACE_S - 5)      # ... which ended once A had reclaimed
        self.assertEqual(try_flock(fb, fcntl.LOCK_EX), "EAGAIN")
        self.assertEqual(try_flock(fb, fcntl.LOCK_SH), "got")
        fcntl.flock(fb, fcntl.LOCK_UN)
        h.stdin.write("\n")
        h.stdin.flush()
        self.assertEqual(h.stdout.readline().strip(), "unlocked")
        self.assertEqual(try_lockf(fb, fcntl.LOCK_EX, 1, 5), "got")
        self.assertEqual(try_flock(fb, fcntl.LOCK_EX), "got")
        print("arfd SIGKILLed and restarted: A's fcntl and flock locks were reclaimed; B's "
              "request waited %.2f s in the grace period (%d s, ended when A reclaimed), then "
              "EAGAIN" % (took, GRACE_S))

    def test_sqlite_shared_by_two_mounts(self):
        # default options: lookups and attributes come from the server
        # (issue 16's point 1), and locks are arfd's
        a, b = self.mount(), self.mount()
        import sqlite3
        db = sqlite3.connect(a.p("db.sqlite"))
        db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, who TEXT, n INT)")
        db.commit()
        db.close()
        per = 1000
        code = r"""
import sqlite3
db = sqlite3.connect(sys.argv[1], timeout=300, isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE")
who = sys.argv[2]
for i in range(int(sys.argv[3])):
    while True:
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t(who, n) VALUES (?, ?)", (who, i))
            db.execute("COMMIT")
            break
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise
            try:
                db.execute("ROLLBACK")
            except sqlite3.OperationalError:
                pass
say("done")
"""
        t = time.time()
        ps = []
        for m, who in ((a, "a1"), (b, "b1"), (a, "a2"), (b, "b2")):
            p = subprocess.Popen([sys.executable, "-c", CHILD.replace(
                "f = os.open(sys.argv[1], os.O_RDWR)\n", "") + code, m.p("db.sqlite"), who,
                str(per)], stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            ps.append(p)
        for p in ps:
            self.assertEqual(p.wait(timeout=800), 0)
        took = time.time() - t
        db = sqlite3.connect(b.p("db.sqlite"))
        rows = db.execute("SELECT who, n FROM t").fetchall()
        check = db.execute("PRAGMA integrity_check").fetchone()[0]
        db.close()
        self.assertEqual(check, "ok")
        self.assertEqual(len(rows), 4 * per)
        self.assertEqual(set(rows), {(w, i) for w in ("a1", "b1", "a2", "b2")
                                     for i in range(per)})
        print("SQLite (rollback journal) from two mounts, 4 writers: %d rows, all kept, "
              "integrity ok, %.1f s" % (len(rows), took))


def _flock(ltype, start, length):
    import struct
    return struct.pack("hhqqi4x", ltype, os.SEEK_SET, start, length, 0)


def _unflock(b):
    import struct
    return struct.unpack("hhqqi4x", b)


if __name__ == "__main__":
    fusetest.main()
