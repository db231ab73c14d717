#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Core data path against a real arfd on loopback, over tcp and shm:
trees, byte ranges, durability across SIGKILL, torn reads, one-sided
request counts, arfctl's commands and errors."""
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Arfd, ArfdTestCase, arfctl, arfctl_json, run, ITEST  # noqa: E402

TRANSPORTS = harness.TRANSPORTS
INJECT = os.path.join(harness.BUILD, "tests", "integration", "arf-inject")


class Tree(ArfdTestCase):
    def test_tree_10000_files(self):
        # each transport builds its own tree beside the others' (/tree-tcp,
        # /tree-shm, /tree-rdma), then lists it back
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                p = run([ITEST, "tree", self.arfd.url("/", t), "10000", "tree-" + t],
                        timeout=900)
                print(p.stdout.decode().strip())


class Ranges(ArfdTestCase):
    def test_random_ranges(self):
        for i, t in enumerate(TRANSPORTS):
            with self.subTest(transport=t):
                p = run([ITEST, "ranges", self.arfd.url("/", t), str(1000 + i), "300"])
                print(p.stdout.decode().strip())


class Torn(ArfdTestCase):
    extra = {"regions.test_torn_delay_us": "300"}

    def test_readers_never_see_unwritten_bytes(self):
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                arfctl("rm", self.arfd.url("/torn"), check=False)
                p = run([ITEST, "torn", self.arfd.url("/", t), "4", "2"])
                print(p.stdout.decode().strip())


class Durability(unittest.TestCase):
    def test_sigkill_after_acknowledged_writes(self):
        tmp = tempfile.TemporaryDirectory(prefix="arf-it-")
        self.addCleanup(tmp.cleanup)
        d = Arfd(workdir=tmp.name, sync=True)
        self.addCleanup(d.stop)
        d.start()
        writer = subprocess.Popen([ITEST, "acked", d.url("/"), "100000"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: writer.poll() is None and writer.kill())
        acked = -1
        target = random.randint(150, 400)
        deadline = time.time() + 120
        while acked < target and time.time() < deadline:
            line = writer.stdout.readline().decode()
            if not line:
                break
            if line.startswith("acked "):
                acked = int(line.split()[1])
        self.assertGreaterEqual(acked, target, "writer stalled")
        d.kill()  # SIGKILL while the writer is still writing
        rest = writer.stdout.read().decode()
        writer.wait(timeout=60)
        for line in rest.splitlines():
            if line.startswith("acked "):
                acked = max(acked, int(line.split()[1]))
        d.start()
        p = run([ITEST, "verify", d.url("/"), str(acked + 1)])
        print(f"killed after {acked + 1} acknowledged files; " + p.stdout.decode().strip())


class UnstableWrites(ArfdTestCase):
    """On a default export a WRITE is unstable, as NFSv3's: answered before
    it is durable, it costs no sync; a COMMIT (fsync, and libarf's close
    of a client that wrote) costs one; every other change is durable
    before its reply, one sync each when nothing runs beside it."""
    sync = False

    def stats(self):
        s = arfctl_json("--control", self.arfd.control, "stats")
        return s["wal_syncs"], s["writes"]["unstable"], s["writes"]["commits"]

    def test_writes_wait_for_commit(self):
        n = 20
        s0, u0, c0 = self.stats()
        # a mkdir, n creates and n writes, then arf_close's COMMIT
        run([ITEST, "acked", self.arfd.url("/"), str(n)])
        s1, u1, c1 = self.stats()
        self.assertEqual(u1 - u0, n, "every write unstable")
        self.assertEqual(c1 - c0, 1, "one COMMIT, at close")
        self.assertEqual(s1 - s0, n + 2, "a sync per create, the mkdir's and the COMMIT's: "
                         "the writes cost none")
        # with an fsync (a COMMIT) after each write: one sync more per file
        run([ITEST, "acked", self.arfd.url("/"), str(n), "fsync"])
        s2, u2, c2 = self.stats()
        self.assertEqual(c2 - c1, n)
        self.assertEqual(s2 - s1, 2 * n + 1)
        print("%d unstable writes cost no sync; %d syncs for %d creates + mkdir + the close's "
              "COMMIT; with an fsync each: %d" % (n, s1 - s0, n, s2 - s1))

    def test_writes_share_one_batch_that_the_commit_makes_durable(self):
        # 16 MiB put in 1 MiB writes: RocksDB gets the create's batch and,
        # at the close's COMMIT, one batch for all the writes (each held
        # back, store.c); the COMMIT's sync covers that batch, so a SIGKILL
        # right after the put loses nothing
        data = os.urandom(16 << 20)
        tmp = tempfile.TemporaryDirectory(prefix="arf-it-")
        self.addCleanup(tmp.cleanup)
        src = os.path.join(tmp.name, "src")
        with open(src, "wb") as f:
            f.write(data)
        t0 = arfctl_json("--control", self.arfd.control, "stats")
        arfctl("put", src, self.arfd.url("/held"))
        t1 = arfctl_json("--control", self.arfd.control, "stats")
        writes = t1["writes"]["unstable"] - t0["writes"]["unstable"]
        self.assertGreaterEqual(writes, 16)
        self.assertEqual(t1["store"]["held_txns"] - t0["store"]["held_txns"], writes,
                         "every unstable write held back")
        self.assertEqual(t1["store"]["batches"] - t0["store"]["batches"], 2,
                         "the create's batch and the COMMIT's")
        self.assertEqual(t1["writes"]["commits"] - t0["writes"]["commits"], 1)
        self.arfd.kill()
        self.arfd.start()
        got = subprocess.run([harness.ARFCTL, "cat", self.arfd.url("/held")],
                             capture_output=True, check=True).stdout
        self.assertEqual(got, data, "a committed file changed by a SIGKILL")
        print("%d writes, %d RocksDB batches (the create's and the COMMIT's); the file whole "
              "after SIGKILL" % (writes, t1["store"]["batches"] - t0["store"]["batches"]))


    def behind(self, mib, wait_s):
        """arf-itest behind: (kept bytes, commits) after the writes and at
        the end of its wait (0.3 s after a COMMIT, or wait_s), and arfd's
        COMMITs meanwhile."""
        c0 = self.stats()[2]
        out = run([ITEST, "behind", self.arfd.url("/"), str(mib), str(wait_s)]).stdout.decode()
        seen = [tuple(int(x) for x in ln.split()[1::2]) for ln in out.splitlines()
                if ln.startswith("kept ")]
        self.assertIn("read back %d MiB" % mib, out)
        arfctl("rm", self.arfd.url("/behind"))
        return seen[0], seen[-1], self.stats()[2] - c0

    def test_commit_behind_the_writes(self):
        # the bound is 8 MiB: the fourth 1 MiB write brings what is kept
        # to half of it, and the client's thread commits with nobody
        # waiting (behind.c), covering at least those four; before, the
        # 6 MiB stayed kept until the fsync
        first, last, served = self.behind(6, 20)
        self.assertEqual(last[1], 1, "one COMMIT behind the writes (seen: %r, %r)" % (first, last))
        self.assertLessEqual(last[0], 2 << 20, "what it covered dropped (seen: %r)" % (last,))
        self.assertEqual(served, 2, "the COMMIT behind, and the fsync's")
        # 3 MiB, below half: kept until the fsync, as before
        first, last, served = self.behind(3, 1)
        self.assertEqual((first, last), ((3 << 20, 0), (3 << 20, 0)))
        self.assertEqual(served, 1, "the fsync's COMMIT alone")
        print("6 MiB written with a bound of 8: committed behind the writes; 3 MiB: kept "
              "until the fsync")


class StableWrites(ArfdTestCase):
    """[export] sync = true: every WRITE is durable before its reply."""
    sync = True

    def test_every_write_is_stable(self):
        n = 10
        s = arfctl_json("--control", self.arfd.control, "stats")
        run([ITEST, "acked", self.arfd.url("/"), str(n)])
        t = arfctl_json("--control", self.arfd.control, "stats")
        self.assertEqual(t["writes"]["stable"] - s["writes"]["stable"], n)
        self.assertEqual(t["writes"]["unstable"], s["writes"]["unstable"])
        self.assertEqual(t["wal_syncs"] - s["wal_syncs"], 2 * n + 1,
                         "a sync per create and per write, and the mkdir's")


class OldData(unittest.TestCase):
    def stopped_arfd(self, keep):
        """An arfd that wrote /keep (bytes keep) and stopped."""
        tmp = tempfile.TemporaryDirectory(prefix="arf-it-")
        self.addCleanup(tmp.cleanup)
        d = Arfd(workdir=tmp.name)
        self.addCleanup(d.stop)
        d.start()
        arfctl("put", "-", d.url("/keep"), input=keep)
        self.assertEqual(d.stop(), 0, d.log())
        return d

    def test_old_data_directory_is_refused(self):
        d = self.stopped_arfd(b"format 1")
        run([INJECT, d.data_dir, "oldformat"])
        with self.assertRaises(RuntimeError) as cm:
            d.start()
        self.assertIn("holds an ARF store of format 0; this arfd reads formats 2 to 4",
                      str(cm.exception))

    def test_format_3_store_upgraded(self):
        """A store of format 3 (written before the data log seeded and
        recycled its segments) is read as it was and becomes format 4 as
        arfd begins writing it, so that an older arfd, which would read the
        new segments as torn, refuses it instead."""
        d = self.stopped_arfd(b"format 3")
        self.assertIn(b"store format set to 3", run([INJECT, d.data_dir, "format3"]).stdout)
        self.assertIn(b"store format 3", run([INJECT, d.data_dir, "showformat"]).stdout)
        d.start()
        self.assertEqual(arfctl("cat", d.url("/keep")).stdout, b"format 3")
        self.assertEqual(d.stop(), 0, d.log())
        self.assertIn(b"store format 4", run([INJECT, d.data_dir, "showformat"]).stdout)


class OneSided(ArfdTestCase):
    def test_stat_deep_path_makes_no_request(self):
        arfctl("mkdir", "-p", self.arfd.url("/a/b/c/d"))
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"hello\n")
            f.flush()
            arfctl("put", f.name, self.arfd.url("/a/b/c/d/file"))
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                j = arfctl_json("--stats", "stat", self.arfd.url("/a/b/c/d/file", t))
                self.assertEqual(j["size"], 6)
                self.assertEqual(j["type"], "file")
                s = j["stats"]
                for k in ("one_sided_reads", "one_sided_bytes", "rounds", "requests", "execs",
                          "retries", "fallbacks", "bytes_sent", "bytes_received"):
                    self.assertIsInstance(s[k], int, k)
                self.assertIsInstance(s["requests_by_kind"], dict)
                self.assertIsInstance(s["fallbacks_by_reason"], dict)
                self.assertEqual(s["requests"], 0, s)
                self.assertGreater(s["one_sided_reads"], 0)
                print(f"{t}: stat /a/b/c/d/file: {s['rounds']} rounds, "
                      f"{s['one_sided_reads']} one-sided reads, 0 requests")

    def test_cat_1mib_file(self):
        data = os.urandom(1 << 20)
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            arfctl("put", f.name, self.arfd.url("/big"))
        for t in TRANSPORTS:
            with self.subTest(transport=t):
                p = arfctl("--json", "--stats", "cat", self.arfd.url("/big", t))
                self.assertEqual(p.stdout, data)
                s = json.loads(p.stderr)["stats"]
                self.assertEqual(s["requests"], 0, s)
                self.assertLessEqual(s["rounds"], 3, s)
                print(f"{t}: cat 1 MiB: {s['rounds']} rounds, {s['one_sided_bytes']} bytes one-sided")

    def test_requests_only_policy(self):
        arfctl("mkdir", self.arfd.url("/x"))
        j = arfctl_json("--stats", "--requests-only", "stat", self.arfd.url("/x"))
        self.assertEqual(j["stats"]["one_sided_reads"], 0)
        self.assertGreater(j["stats"]["requests"], 0)


class Arfctl(ArfdTestCase):
    def test_commands(self):
        u = self.arfd.url
        arfctl("mkdir", u("/dir"))
        p = arfctl("put", "-", u("/dir/hello"), input=b"hi there\n")
        self.assertEqual(arfctl("cat", u("/dir/hello")).stdout, b"hi there\n")
        self.assertEqual(arfctl("ls", u("/dir")).stdout, b"hello\n")
        arfctl("mv", u("/dir/hello"), u("/dir/bye"))
        j = arfctl_json("ls", u("/dir"))
        self.assertEqual([e["name"] for e in j["entries"]], ["bye"])
        arfctl("rm", u("/dir/bye"))
        arfctl("rm", u("/dir"))
        self.assertEqual(arfctl("ls", u("/")).stdout, b"")
        st = arfctl_json("status", u("/"))
        self.assertIn("incarnation", st["server"])
        self.assertIs(st["server"]["export"]["sync"], False)  # the default: unstable writes
        del p

    def test_errors(self):
        u = self.arfd.url
        p = arfctl("stat", u("/missing"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"No such file or directory", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        p = arfctl("mkdir", u("/"), check=False)
        self.assertEqual(p.returncode, 1)
        arfctl("mkdir", u("/d"))
        arfctl("put", "-", u("/d/f"), input=b"x")
        p = arfctl("rm", u("/d"), check=False)
        self.assertIn(b"Directory not empty", p.stderr)
        p = arfctl("stat", "http://nope/", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"not an ARF URL", p.stderr)
        p = arfctl("frobnicate", u("/"), check=False)
        self.assertEqual(p.returncode, 2)
        p = arfctl("--timeout-ms", "2000", "stat", "arf://127.0.0.1:1/", check=False)
        self.assertEqual(p.returncode, 1)
        # the daemon is still serving
        arfctl("stat", u("/d/f"))


class Full(ArfdTestCase):
    extra = {"regions.data_blocks": "64", "regions.inodes": "32"}

    def test_enospc_and_statfs(self):
        u = self.arfd.url
        before = arfctl_json("status", u("/"))["server"]["blocks"]
        self.assertEqual(before["total"], 64)
        p = arfctl("put", "-", u("/big"), input=os.urandom(1 << 20), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"No space left on device", p.stderr)
        full = arfctl_json("status", u("/"))["server"]["blocks"]
        self.assertEqual(full["free"], 0)
        arfctl("rm", u("/big"))
        after = arfctl_json("status", u("/"))["server"]["blocks"]
        self.assertEqual(after["free"], before["free"])
        # inodes run out too
        made = 0
        for i in range(40):
            p = arfctl("put", "-", u(f"/f{i}"), input=b"", check=False)
            if p.returncode:
                self.assertIn(b"No space left on device", p.stderr)
                break
            made += 1
        self.assertLess(made, 32)
        inodes = arfctl_json("status", u("/"))["server"]["inodes"]
        self.assertEqual(inodes["free"], 0)


class Restart(unittest.TestCase):
    def test_restart_keeps_data_and_changes_incarnation(self):
        tmp = tempfile.TemporaryDirectory(prefix="arf-it-")
        self.addCleanup(tmp.cleanup)
        d = Arfd(workdir=tmp.name)
        self.addCleanup(d.stop)
        d.start()
        arfctl("put", "-", d.url("/keep"), input=b"persist me")
        inc1 = arfctl_json("status", d.url("/"))["server"]["incarnation"]
        self.assertEqual(d.stop(), 0, d.log())
        d.start()
        self.assertEqual(arfctl("cat", d.url("/keep")).stdout, b"persist me")
        inc2 = arfctl_json("status", d.url("/"))["server"]["incarnation"]
        self.assertNotEqual(inc1, inc2)


class Config(unittest.TestCase):
    def test_bad_config_names_file_and_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            conf = os.path.join(tmp, "arfd.conf")
            with open(conf, "w") as f:
                f.write("[server]\nlisten = 127.0.0.1:0\nbogus_key = 1\n")
            p = run([harness.ARFD, "-c", conf, "--foreground"], check=False, timeout=30)
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"{conf}:3: unknown key 'bogus_key'".encode(), p.stderr)
            with open(conf, "w") as f:
                f.write("[regions]\ninodes = -5\n")
            p = run([harness.ARFD, "-c", conf, "--check-config"], check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b":2: 'inodes' = -5 is out of range", p.stderr)

    def test_help_and_version(self):
        p = run([harness.ARFD, "--help"])
        self.assertIn(b"--data-dir", p.stdout)
        p = run([harness.ARFD, "--version"])
        self.assertTrue(p.stdout.startswith(b"arfd "))
        p = run([harness.ARFCTL, "--help"])
        self.assertIn(b"status URL", p.stdout)


if __name__ == "__main__":
    harness.main()
