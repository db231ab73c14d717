#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unstable writes through the mount, as on NFSv3: arfd answers a write
before it is durable, and close() (FUSE's FLUSH) sends the COMMIT that
makes it so -- only when the file has writes not yet committed -- so that
close() reports a write that cannot be made durable; fsync() always
commits."""
import os
import time
import unittest

from fusetest import FuseTestCase, main


def writes(d):
    # through the control socket from this process: a child (arfctl) would
    # inherit the open file and close it, a FLUSH of its own
    s = d.stats()
    return s["writes"]["unstable"], s["writes"]["commits"], s["wal_syncs"]


def inline(d):
    return d.stats()["inline_requests"]


# the reads the soft-NIC thread serves itself too (ARFD_PROC_BRIEF)
BRIEF = ("getattr", "lookup", "access", "readlink", "xattr_get")


class Commit(FuseTestCase):
    sync = False  # the default export: unstable writes

    def test_close_commits_what_was_written(self):
        p = os.path.join(self.mnt.path, "f")
        with open(p, "wb") as f:  # the create: durable before its reply
            pass
        u0, c0, s0 = writes(self.arfd)
        i0 = inline(self.arfd)
        fd = os.open(p, os.O_WRONLY)
        self.addCleanup(lambda: os.close(fd) if fd_open[0] else None)
        fd_open = [True]
        for i in range(8):
            os.pwrite(fd, bytes([i]) * 65536, i * 65536)
        u1, c1, s1 = writes(self.arfd)
        i1 = inline(self.arfd)
        self.assertEqual(u1 - u0, 8, "each write answered unstable")
        # one after another with nothing else queued: the soft-NIC thread
        # serves them itself (lanes.c), all but perhaps the first
        self.assertGreaterEqual(i1 - i0, 4, "writes served with no hand-off to a worker")
        self.assertEqual((c1, s1), (c0, s0), "no COMMIT and no sync before close()")
        fd_open[0] = False
        os.close(fd)
        u2, c2, s2 = writes(self.arfd)
        self.assertEqual(c2 - c1, 1, "close() after writes: one COMMIT")
        self.assertEqual(s2 - s1, 1, "and it synced")
        # a file opened and closed without writes: no COMMIT, no round trip
        with open(p, "rb") as f:
            self.assertEqual(f.read(65536), bytes(65536))
        fd = os.open(p, os.O_WRONLY)
        os.close(fd)
        _, c3, _ = writes(self.arfd)
        self.assertEqual(c3, c2, "close() without writes sent a COMMIT")
        # fsync commits, every time
        fd = os.open(p, os.O_WRONLY)
        os.fsync(fd)
        os.close(fd)
        _, c4, _ = writes(self.arfd)
        self.assertEqual(c4 - c3, 1)
        print("8 writes (%d served inline): no sync until close(), which sent 1 COMMIT; "
              "close() without writes: none; fsync(): one" % (i1 - i0))



class CreatesInline(FuseTestCase):
    tmpfs = True  # syncs quick enough for the soft-NIC thread to run them

    def test_creates_served_inline_are_durable_before_their_reply(self):
        # the soft-NIC thread serves a create itself and runs its group
        # commit (arfd/lanes.c, commit.c); the reply still waits for the
        # sync
        N = 20
        os.mkdir(self.mnt.p("d"))
        # syncs count as slow until some have been timed (ARFD_SYNC_NS_UNKNOWN)
        for i in range(20):
            os.mkdir(self.mnt.p("d", "warm"))
            os.rmdir(self.mnt.p("d", "warm"))
        s0 = self.arfd.stats()
        for i in range(N):
            os.close(os.open(self.mnt.p("d", "f%d" % i), os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                             0o644))
            os.mkdir(self.mnt.p("d", "s%d" % i))
        s1 = self.arfd.stats()
        req = lambda s, k: s["requests"].get(k, 0)  # noqa: E731
        self.assertEqual(req(s1, "create") - req(s0, "create"), N)
        self.assertEqual(req(s1, "mkdir") - req(s0, "mkdir"), N)
        # each one synced before the next was sent: one sync each
        self.assertGreaterEqual(s1["wal_syncs"] - s0["wal_syncs"], 2 * N)
        briefs = sum(req(s1, k) - req(s0, k) for k in BRIEF)
        served = s1["inline_requests"] - s0["inline_requests"] - briefs
        self.assertGreaterEqual(served, N, "creates and mkdirs served with no hand-off")
        for i in range(N):
            self.assertTrue(os.path.isdir(self.mnt.p("d", "s%d" % i)))
        # renames, chmods, unlinks and rmdirs that free little go the same way
        for i in range(N):
            os.rename(self.mnt.p("d", "f%d" % i), self.mnt.p("d", "g%d" % i))
            os.chmod(self.mnt.p("d", "g%d" % i), 0o600)
            os.unlink(self.mnt.p("d", "g%d" % i))
            os.rmdir(self.mnt.p("d", "s%d" % i))
        s2 = self.arfd.stats()
        for k in ("rename", "setattr", "unlink", "rmdir"):
            self.assertEqual(req(s2, k) - req(s1, k), N, k)
        served2 = (s2["inline_requests"] - s1["inline_requests"] -
                   sum(req(s2, k) - req(s1, k) for k in BRIEF))
        # most, not all: one sync slowed by the host (over 100 us) sends the next
        # change to a worker (arfd_commit_quick)
        self.assertGreaterEqual(served2, 2 * N, "small changes served with no hand-off")
        self.assertGreaterEqual(s2["wal_syncs"] - s1["wal_syncs"], 4 * N)
        self.assertEqual(os.listdir(self.mnt.p("d")), [])
        # removing a file of 2 MiB frees more than the soft-NIC thread may:
        # a worker serves it
        with open(self.mnt.p("d", "big"), "wb") as f:
            f.write(b"x" * (2 << 20))
        s3 = self.arfd.stats()
        os.unlink(self.mnt.p("d", "big"))
        s4 = self.arfd.stats()
        self.assertEqual(req(s4, "unlink") - req(s3, "unlink"), 1)
        self.assertEqual(s4["inline_requests"] - s3["inline_requests"] -
                         sum(req(s4, k) - req(s3, k) for k in BRIEF), 0,
                         "the unlink of a 2 MiB file was served by the soft-NIC thread")
        print("%d creates and %d mkdirs: %d served by the soft-NIC thread, %d WAL syncs; "
              "%d renames, chmods, unlinks and rmdirs: %d served so; a 2 MiB file's unlink "
              "by a worker" % (N, N, served, s1["wal_syncs"] - s0["wal_syncs"], 4 * N, served2))


    def test_what_inline_unlinks_free_is_reclaimed(self):
        # 80 files of 1 MiB fill the data log's first segment (64 MiB) and
        # go on in the next; removed, each by the soft-NIC thread (1 MiB is
        # the most it frees), they leave the first segment dead: the
        # committer deletes it, though no worker ran a group commit since
        os.mkdir(self.mnt.p("d"))
        block = os.urandom(1 << 20)
        for i in range(80):
            with open(self.mnt.p("d", "f%d" % i), "wb") as f:
                f.write(block)
        s0 = self.arfd.stats()
        for i in range(80):
            os.unlink(self.mnt.p("d", "f%d" % i))
        s1 = self.arfd.stats()
        self.assertGreaterEqual(s1["inline_requests"] - s0["inline_requests"], 70)
        deadline = time.monotonic() + 10
        while self.arfd.stats()["store"]["log_reclaimed_bytes"] == 0:
            self.assertLess(time.monotonic(), deadline, "the dead segment was never reclaimed")
            time.sleep(0.1)
        st = self.arfd.stats()["store"]
        print("80 MiB written then unlinked, %d unlinks by the soft-NIC thread: %d MiB "
              "reclaimed, %d segment(s) left" % (s1["inline_requests"] - s0["inline_requests"],
                                                 st["log_reclaimed_bytes"] >> 20,
                                                 st["log_segments"]))


class CommitFails(FuseTestCase):
    # syncs: the create of the file (1), then the close()'s COMMIT (2) fails
    sync = False
    extra = {"server.test_fail_sync": "2"}

    def test_close_reports_the_commit_failure(self):
        p = os.path.join(self.mnt.path, "f")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"x" * 4096)  # answered before it is durable
        with self.assertRaises(OSError) as cm:
            os.close(fd)
        self.assertEqual(cm.exception.errno, 5, "close() must report EIO")
        print("a COMMIT that cannot sync: close() fails with EIO (%s)" % cm.exception)


if __name__ == "__main__":
    main()
