#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Failure paths that used to lose or destroy (issue 19, items 6-8).

SecondArfd: a second arfd started on a running one's data directory,
socket, tcp port or whole configuration fails with a message that says
why -- and leaves the running daemon's socket, control socket and pid file
in place, and the daemon serving.

FailStop: RocksDB (or the data log) failing under a serving arfd, injected
with server.test_fail_write / test_fail_sync / test_fail_append (the Nth
write, WAL sync or data log append after start, and every later one,
fails).  The client gets an error, never an
acknowledgement of what is not durable; a one-sided reader (arf-fptest:
libarf's one-sided readers only) never sees the change RocksDB refused;
every later request answers EIO and `arfctl status` says why; arfd does
not spin (no retry loop: one log line, no CPU); after a restart everything
acknowledged as durable is there (every change but an unstable write, and
each unstable write a COMMIT or a later durable change covered).

MissedReplay: a write kept under an incarnation that no replay covered
(libarf keeps a write only while its server is the connection's -- else
it sends it again -- so none should exist) makes the next COMMIT (fsync,
close) report EIO, never success: re-sending it then could land it over a
newer write.

ThreadCreation: each of arfd's own thread creations made to fail in turn
(an LD_PRELOAD shim, failthread.c): arfd stops with a message naming the
thread, exit status 1, no crash, no hang -- it joins only what started."""
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Arfd, ProcError, arfctl, run  # noqa: E402

FPTEST = os.path.join(harness.BUILD, "tests", "integration", "arf-fptest")
FAILTHREAD = os.path.join(harness.BUILD, "tests", "integration", "failthread.so")


def control_status(d):
    return json.loads(arfctl("--control", d.control, "--json", "status").stdout)


def see(d, path, transport="tcp"):
    """What a one-sided reader sees of path: 'visible ...', 'torn ...' or 'absent ...'."""
    return run([FPTEST, "see", d.url("/", transport), path], timeout=60).stdout.decode().strip()


class SecondArfd(unittest.TestCase):
    """Start A; start B on what A holds; B fails, A keeps its files and serves."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="arf-fp-")
        self.addCleanup(self.tmp.cleanup)
        self.pid_file = os.path.join(self.tmp.name, "a.pid")
        self.a = Arfd(extra={"server.pid_file": self.pid_file})
        self.addCleanup(self.a.cleanup)
        self.a.start()
        arfctl("mkdir", self.a.url("/before"))

    def second(self, data_dir=False, socket=False, port=False, pid_file=False, control=False):
        b = Arfd(workdir=os.path.join(self.tmp.name, "b"), name="arfd B")
        self.addCleanup(b.cleanup)
        extra = {"server.pid_file": os.path.join(b.workdir, "b.pid")}
        if data_dir:
            b.data_dir = self.a.data_dir
        if socket:
            b.socket = self.a.socket
        if control:
            b.control = self.a.control
        if port:
            b.port, b.keep_port = self.a.port, True
        if pid_file:
            extra["server.pid_file"] = self.pid_file
        b.extra.update(extra)
        try:
            p = run(b.args(), check=False, timeout=60)
        except subprocess.TimeoutExpired:
            self.fail("arfd B started on what arfd A holds and served")
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        return p.stderr.decode().strip()

    def assert_a_intact(self):
        a = self.a
        self.assertIsNone(a.proc.poll(), "arfd A died")
        for path in (a.socket, a.control, self.pid_file):
            self.assertTrue(os.path.exists(path), f"{path} was removed")
        with open(self.pid_file) as f:
            self.assertEqual(int(f.read()), a.pid)
        for t in ("tcp", "shm"):
            self.assertIn(b"before", arfctl("ls", a.url("/", t)).stdout)
        self.assertEqual(control_status(a)["state"], "serving")

    def test_same_data_dir(self):
        msg = self.second(data_dir=True)
        self.assert_a_intact()
        self.assertRegex(msg, r"data directory .* is in use by another arfd")
        print("same data directory:", msg.splitlines()[-1][:110], "... A intact")

    def test_same_socket(self):
        msg = self.second(socket=True)
        self.assert_a_intact()
        self.assertRegex(msg, r"socket .*arfd\.sock is in use by a running server")
        print("same socket:", msg.splitlines()[-1], "; A intact")

    def test_same_port(self):
        msg = self.second(port=True)
        self.assert_a_intact()
        self.assertRegex(msg, r"listen on 127\.0\.0\.1:%d: Address already in use" % self.a.port)
        print("same tcp port:", msg.splitlines()[-1], "; A intact")

    def test_same_control_socket(self):
        msg = self.second(control=True)
        self.assert_a_intact()
        self.assertRegex(msg, r"control socket .* in use by a running arfd")
        print("same control socket:", msg.splitlines()[-1], "; A intact")

    def test_same_everything(self):
        msg = self.second(data_dir=True, socket=True, port=True, pid_file=True, control=True)
        self.assert_a_intact()
        self.assertRegex(msg, r"pid file .*a\.pid: arfd %d is running" % self.a.pid)
        print("same configuration twice:", msg.splitlines()[-1][-70:], "; A intact")

    def test_stale_files_are_taken_over(self):
        """A pid file and socket left by an arfd that died are not in the way."""
        a = self.a
        a.kill()
        self.assertTrue(os.path.exists(self.pid_file))
        a.keep_port = True
        a.start()
        with open(self.pid_file) as f:
            self.assertEqual(int(f.read()), a.pid)
        self.assertIn(b"before", arfctl("ls", a.url("/", "shm")).stdout)
        a.stop()
        self.assertFalse(os.path.exists(self.pid_file), "a clean stop removes its pid file")
        self.assertFalse(os.path.exists(a.socket))


class FailStop(unittest.TestCase):
    """RocksDB refusing a write or a sync under a serving arfd."""

    def start(self, sync, **extra):
        d = Arfd(sync=sync, extra={k.replace("__", "."): str(v) for k, v in extra.items()})
        self.addCleanup(d.cleanup)
        d.start()
        return d

    def acked(self, d, n, timeout=120):
        """arf-itest acked: the files it acknowledged, and its output."""
        try:
            p = run([harness.ITEST, "acked", d.url("/"), str(n)], check=False, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail("the client hung waiting for an answer (%ds)" % timeout)
        out = p.stdout.decode()
        got = [int(x) for x in re.findall(r"^acked (\d+)$", out, re.M)]
        self.assertEqual(got, list(range(len(got))), out)
        self.assertNotEqual(p.returncode, 0, "every write was acknowledged: nothing failed")
        self.assertIn("FAIL:", out)
        return len(got), out

    def assert_failed(self, d, what):
        st = control_status(d)
        self.assertEqual(st["state"], "failed", st)
        self.assertIn(what, st["failure"])
        # every later request answers EIO (a read too: the regions may hold the change)
        for args in (["mkdir", d.url("/later")], ["--requests-only", "ls", d.url("/")]):
            p = arfctl(*args, check=False)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(b"Input/output error", p.stderr, p.stderr)
        # the data connection's status says so too
        st2 = json.loads(arfctl("--json", "status", d.url("/")).stdout)
        self.assertEqual(st2.get("state") or st2.get("server", {}).get("state"), "failed", st2)
        return st["failure"]

    def assert_no_spin(self, d, what):
        """No retry loop: the failure is logged once, and arfd sits idle."""
        c0 = harness.arfproc.cpu_seconds(d.pid)
        time.sleep(2)
        cpu = harness.arfproc.cpu_seconds(d.pid) - c0
        self.assertLess(cpu, 0.3, f"arfd used {cpu:.2f} s of CPU in 2 s after the failure")
        log = d.log()
        said = re.findall(r"export '.*' failed: rocksdb: .*", log)
        self.assertEqual(len(said), 1, log[-3000:])
        self.assertIn(what, said[0])
        again = [line for line in log.splitlines()
                 if what in line and said[0] not in line and "EIO: export failed: " not in line]
        self.assertEqual(again, [], "the failure was retried or logged again")
        return cpu

    def restart_clean(self, d):
        for k in ("server.test_fail_write", "server.test_fail_sync", "server.test_fail_append"):
            d.extra.pop(k, None)
        d.restart()
        self.assertEqual(control_status(d)["state"], "serving")

    def write_failure(self, sync):
        # txn 1: mkdir /acked; then create and write per file: the 12th is
        # the create of f000005
        d = self.start(sync, server__test_fail_write=12)
        n, out = self.acked(d, 20)
        self.assertEqual(n, 5, out)
        self.assertIn("create f000005", out)
        failed = "/acked/f000005"
        seen = [see(d, failed, t) for t in ("tcp", "shm")]
        for s in seen:
            self.assertFalse(s.startswith("visible"), f"a one-sided reader sees {failed}: {s}")
        self.assertTrue(see(d, "/acked/f000004").startswith("visible"))
        why = self.assert_failed(d, "injected failure (server.test_fail_write)")
        cpu = self.assert_no_spin(d, "injected failure (server.test_fail_write)")
        self.restart_clean(d)
        lost = ""
        if sync:
            run([harness.ITEST, "verify", d.url("/"), str(n)])
        else:
            # an unstable write is durable once a COMMIT or a later durable
            # change covers it: each create's group commit covered the write
            # before it, but nothing covered f000004's (the create after it
            # failed, and its client, gone, never committed), and arfd holds
            # an unstable write's metadata back for the next batch -- the
            # one that failed -- so it may be lost: the file is then empty,
            # never other bytes (a client still there re-sends it)
            run([harness.ITEST, "verify", d.url("/"), str(n - 1)])
            last = "/acked/f%06d" % (n - 1)
            size = json.loads(arfctl("--json", "stat", d.url(last)).stdout)["size"]
            if size:
                run([harness.ITEST, "verify", d.url("/"), str(n)])
            else:
                lost = f" ({last}'s uncommitted write lost: the file is empty)"
        self.assertTrue(see(d, failed).startswith("absent"), see(d, failed))
        arfctl("mkdir", d.url("/after"))
        print(f"{'sync' if sync else 'async'} export, RocksDB write 12 fails: {n} files "
              f"acknowledged, then EIO; one-sided readers of {failed}: {seen}; "
              f"status failure: {why!r}; {cpu:.2f} s CPU in 2 s; after a restart the "
              f"acknowledged files are intact{lost} and {failed} absent")

    def test_write_failure_sync_export(self):
        self.write_failure(True)

    def test_write_failure_async_export(self):
        self.write_failure(False)

    def test_append_failure_after_the_reply(self):
        """An unstable write is answered before the data log's copy of its
        blocks (arfd/store.h arfd_store_settle).  When that copy fails the
        write has been acknowledged as unstable: the export fails, and the
        COMMIT that would have covered it answers EIO, so the client that
        kept it hears (arf_fsync, close() on a mount).  Nothing committed
        is lost, and the lost write leaves its file empty, not wrong."""
        # appends of blocks: one per file's write; the 4th, f000003's, fails
        d = self.start(False, server__test_fail_append=4)
        try:
            p = run([harness.ITEST, "acked", d.url("/"), "10", "fsync"], check=False,
                    timeout=120)
        except subprocess.TimeoutExpired:
            self.fail("the client hung waiting for an answer (120 s)")
        out = p.stdout.decode()
        self.assertNotEqual(p.returncode, 0, out)
        self.assertEqual(re.findall(r"^acked (\d+)$", out, re.M), ["0", "1", "2"], out)
        # the write itself was answered: the COMMIT is what says EIO
        self.assertRegex(out, r"FAIL: fsync f000003: .*Input/output error")
        why = self.assert_failed(d, "injected failure (server.test_fail_append)")
        self.assertTrue(why.startswith("data log: write:"), why)
        said = re.findall(r"export '.*' failed: data log: .*", d.log())
        self.assertEqual(len(said), 1, d.log()[-3000:])
        self.restart_clean(d)
        run([harness.ITEST, "verify", d.url("/"), "3", "fsync"])
        st = json.loads(arfctl("--json", "stat", d.url("/synced/f000003")).stdout)
        self.assertEqual(st["size"], 0, st)
        print(f"async export, data log append 4 fails after its write's reply: 3 files "
              f"committed, f000003's fsync EIO; status failure: {why!r}; after a restart "
              f"the committed files are intact and f000003 is empty")

    def test_sync_failure(self):
        # syncs: mkdir /acked, then create and write per file: the 6th is
        # the create of f000002
        d = self.start(True, server__test_fail_sync=6)
        n, out = self.acked(d, 20, timeout=60)
        self.assertEqual(n, 2, out)
        failed = "/acked/f000002"
        seen = see(d, failed)
        self.assertFalse(seen.startswith("visible"), f"a one-sided reader sees {failed}: {seen}")
        why = self.assert_failed(d, "injected failure (server.test_fail_sync)")
        cpu = self.assert_no_spin(d, "injected failure (server.test_fail_sync)")
        self.restart_clean(d)
        run([harness.ITEST, "verify", d.url("/"), str(n)])
        print(f"sync export, WAL sync 6 fails: {n} files acknowledged, then EIO (no retry "
              f"every 10 ms); one-sided reader of {failed}: {seen!r}; status failure: "
              f"{why!r}; {cpu:.2f} s CPU in 2 s; after a restart the {n} acknowledged "
              f"files are intact")


class MissedReplay(unittest.TestCase):
    """A kept write of an earlier incarnation that no replay re-sent."""

    def test_commit_reports_a_write_no_replay_covered(self):
        d = Arfd()
        self.addCleanup(d.cleanup)
        d.start()
        for transport in ("tcp", "shm"):
            out = run([FPTEST, "missed", d.url("/", transport), "missed-" + transport],
                      timeout=60).stdout.decode().strip()
            # before: "fsync 0 resent 0 kept 1 ..." -- fsync said durable
            # while 4 KiB the server lost were only in the log
            self.assertEqual(out, "fsync %d resent 0 kept 0 again 0 data %s" % (
                -errno.EIO, "a only"), transport)
        print("a write kept under an earlier incarnation that no replay covered: fsync "
              "answered EIO, not success, and dropped it; the next fsync succeeds (tcp, shm)")


class ThreadCreation(unittest.TestCase):
    """Each of arfd's own pthread_create calls failing in turn."""

    def test_each_thread_creation_failing(self):
        if not os.path.exists(FAILTHREAD):
            self.skipTest(f"{FAILTHREAD} was not built")
        failures = []
        for n in range(1, 40):
            env = dict(os.environ, LD_PRELOAD=FAILTHREAD, ARF_TEST_FAIL_THREAD=str(n))
            # a sanitizer build: the shim comes before its runtime on purpose
            env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                                   ":verify_asan_link_order=0").lstrip(":")
            d = Arfd(extra={"server.workers": "2", "programs.workers": "2"}, env=env,
                     name=f"arfd with thread creation {n} failing")
            self.addCleanup(d.cleanup)
            t0 = time.time()
            try:
                d.start(timeout=60)
            except ProcError:
                log = d.log()
                self.assertIn(f"failthread: failing thread creation {n}", log)
                self.assertEqual(d.proc.returncode, 1, f"creation {n}: {log[-2000:]}")
                m = re.search(r"^arfd: (.*thread.*)$", log, re.M)
                self.assertIsNotNone(m, f"creation {n}: no message naming a thread:\n{log}")
                self.assertLess(time.time() - t0, 30)
                self.assertFalse(os.path.exists(d.socket), "a failed start left its socket")
                failures.append(m.group(1))
                d.cleanup()
                continue
            # past the last of arfd's own threads: it serves, untouched
            self.assertNotIn("failthread", d.log())
            arfctl("mkdir", d.url("/ok"))
            d.cleanup()
            break
        else:
            self.fail("arfd never started")
        # request and program workers, committer, soft-NIC, control
        self.assertGreaterEqual(len(failures), 7, failures)
        print(f"{len(failures)} thread creations failed in turn; each start stopped with "
              f"exit 1 and a message: " + "; ".join(sorted(set(
                  re.sub(r":.*", "", f) for f in failures))))


if __name__ == "__main__":
    harness.main()
