#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One truth between clients (issue 16, points 1-4): two mounts of one
export, with default caching on both.

- A name replaced, removed or whose directory was removed on mount A is
  seen so on mount B at the next open() or mkdir(): the new file, ENOENT,
  or a successful mkdir -- never ESTALE or EEXIST, 200 times each (the
  kernel retries an open that got ESTALE with a revalidating LOOKUP, which
  arf-fuse answers from the server's current state).
- git log on B right after each commit on A.
- The link count of a file that lost a name is right at once on the same
  mount (link a->b, link a->c, unlink a, unlink c: b has nlink 1), and the
  inode a rename replaced shows its new nlink and ctime.
- A non-owner who may write a root-owned set-id file (04777, 02777, 06777)
  writes and truncates it, and the mode loses its set-id bits, as on a
  local filesystem; the other mount sees the new mode.
- Every SETATTR sets ctime, chown(f, -1, -1) included.
- O_APPEND from two mounts (point 6): four writers, two on each mount,
  4,000 lines in all, every one kept whole and in each writer's order.
- A listing the kernel keeps (issue 15, point 5): a second listing of an
  unchanged 2,000-entry directory asks arfd nothing; a name added,
  removed or renamed on A, or on B itself, and a change whose mtime was
  set back, show in B's next listing; with noac every listing asks."""
import errno
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import FuseTestCase, run  # noqa: E402

ITERATIONS = 200


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def errname(e):
    return errno.errorcode.get(e.errno, str(e.errno))


class OneTruth(FuseTestCase):
    def setUp(self):
        super().setUp()
        self.a = self.mnt
        self.b = self.mount()

    def test_rename_over_then_open_on_the_other_mount(self):
        a, b = self.a, self.b
        write_file(a.p("f"), b"v0")
        bad = []
        for i in range(ITERATIONS):
            self.assertEqual(len(read_file(b.p("f"))), len(b"v%d" % i))  # B holds the name
            write_file(a.p("f.new"), b"v%d" % (i + 1))
            os.rename(a.p("f.new"), a.p("f"))                    # A replaces it
            try:
                got = read_file(b.p("f"))
                if got != b"v%d" % (i + 1):
                    bad.append("iteration %d: read %r" % (i, got))
            except OSError as e:
                bad.append("iteration %d: open: %s" % (i, errname(e)))
        self.assertEqual(bad, [], "%d of %d opens on B failed" % (len(bad), ITERATIONS))
        print("rename over a name on A, then open on B: %d of %d gave the new file, "
              "0 ESTALE" % (ITERATIONS, ITERATIONS))

    def test_unlink_then_open_and_create_on_the_other_mount(self):
        a, b = self.a, self.b
        bad = []
        for i in range(ITERATIONS):
            write_file(a.p("g"), b"x")
            self.assertEqual(read_file(b.p("g")), b"x")         # B holds the name
            os.unlink(a.p("g"))                                  # A removes it
            try:
                read_file(b.p("g"))
                bad.append("iteration %d: open succeeded" % i)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    bad.append("iteration %d: open: %s" % (i, errname(e)))
            try:
                fd = os.open(b.p("g"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                os.close(fd)
                os.unlink(b.p("g"))
            except OSError as e:
                bad.append("iteration %d: O_CREAT|O_EXCL: %s" % (i, errname(e)))
        self.assertEqual(bad, [])
        print("unlink on A, then open (ENOENT) and O_EXCL create on B: %d of %d as on one "
              "machine, 0 ESTALE, 0 EEXIST" % (ITERATIONS, ITERATIONS))

    def test_rm_rf_then_mkdir_on_the_other_mount(self):
        a, b = self.a, self.b
        bad = []
        for i in range(ITERATIONS):
            os.makedirs(a.p("d", "sub"))
            write_file(a.p("d", "sub", "x"), b"x")
            self.assertEqual(read_file(b.p("d", "sub", "x")), b"x")  # B holds the path
            shutil.rmtree(a.p("d"))                                  # A removes the tree
            try:
                os.mkdir(b.p("d"))
                os.mkdir(b.p("d", "sub"))
            except OSError as e:
                bad.append("iteration %d: mkdir: %s" % (i, errname(e)))
            try:
                read_file(b.p("d", "sub", "x"))
                bad.append("iteration %d: open of a removed file succeeded" % i)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    bad.append("iteration %d: open: %s" % (i, errname(e)))
            shutil.rmtree(b.p("d"), ignore_errors=True)
        self.assertEqual(bad, [])
        print("rm -rf on A, then mkdir and open on B: %d of %d as on one machine, 0 ESTALE, "
              "0 EEXIST" % (ITERATIONS, ITERATIONS))

    def test_git_log_after_commit_on_the_other_mount(self):
        git = shutil.which("git")
        if not git:
            self.skipTest("git is not installed")
        a, b = self.a, self.b
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", HOME=a.path,
                   GIT_CONFIG_NOSYSTEM="1")
        repo_a, repo_b = a.p("repo"), b.p("repo")
        run([git, "init", "-q", "-b", "main", repo_a], env=env)
        for i in range(10):
            write_file(os.path.join(repo_a, "f"), b"%d\n" % i)
            run([git, "-C", repo_a, "add", "f"], env=env)
            run([git, "-C", repo_a, "commit", "-q", "-m", "c%d" % i], env=env)
            head = run([git, "-C", repo_a, "rev-parse", "HEAD"], env=env).stdout.strip()
            p = subprocess.run([git, "-C", repo_b, "log", "--format=%H %s", "-1"],
                               capture_output=True, env=env, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            self.assertEqual(p.stdout.decode().split()[0], head.decode())
            self.assertEqual(p.stdout.decode().split()[1], "c%d" % i)
        print("git log on B right after each of 10 commits on A: the new commit every time")


class LinkCounts(FuseTestCase):
    def test_nlink_sequence_on_one_mount(self):
        m = self.mnt
        write_file(m.p("a"), b"x")
        os.link(m.p("a"), m.p("b"))
        os.link(m.p("a"), m.p("c"))
        self.assertEqual(os.stat(m.p("b")).st_nlink, 3)
        os.unlink(m.p("a"))
        self.assertEqual(os.stat(m.p("b")).st_nlink, 2)
        os.unlink(m.p("c"))
        self.assertEqual(os.stat(m.p("b")).st_nlink, 1)
        print("link a->b, link a->c, unlink a, unlink c: stat b at once shows 3, 2, 1")

    def test_replaced_inode_of_a_rename(self):
        m = self.mnt
        write_file(m.p("t"), b"old")
        os.link(m.p("t"), m.p("t2"))       # a second name keeps the replaced inode
        write_file(m.p("x"), b"new")
        before = os.stat(m.p("t2"))
        self.assertEqual(before.st_nlink, 2)
        time.sleep(0.02)
        os.rename(m.p("x"), m.p("t"))
        after = os.stat(m.p("t2"))
        self.assertEqual(after.st_nlink, 1)
        self.assertGreater(after.st_ctime_ns, before.st_ctime_ns)
        self.assertEqual(read_file(m.p("t2")), b"old")
        # and on another mount that had it cached
        other = self.mount()
        self.assertEqual(os.stat(other.p("t2")).st_nlink, 1)
        print("rename over t: the replaced inode (still named t2) shows nlink 1 and a new "
              "ctime at once")


class SetIdAndCtime(FuseTestCase):
    def test_non_owner_writes_a_set_id_file(self):
        other = self.mount()
        for mode in (0o4777, 0o2777, 0o6777):
            for how in ("write", "ftruncate", "truncate"):
                name = "s%o-%s" % (mode, how)
                path = self.mnt.p(name)
                write_file(path, b"root's")
                os.chmod(path, mode)
                self.assertEqual(os.stat(other.p(name)).st_mode & 0o7777, mode)
                code = {"write": "fd = os.open(%r, os.O_WRONLY)\n"
                                 "print(errno_of(os.write, fd, b'nobody'))\n",
                        "ftruncate": "fd = os.open(%r, os.O_WRONLY)\n"
                                     "print(errno_of(os.ftruncate, fd, 2))\n",
                        "truncate": "print(errno_of(os.truncate, %r, 3))\n"}[how] % path
                self.assertEqual(self.as_user(code), "OK", "%s of a %o file" % (how, mode))
                self.assertEqual(os.stat(path).st_mode & 0o7777, 0o777,
                                 "%s of a %o file by a non-owner" % (how, mode))
                fd = os.open(other.p(name), os.O_RDONLY)  # close-to-open on the other mount
                try:
                    self.assertEqual(os.fstat(fd).st_mode & 0o7777, 0o777)
                finally:
                    os.close(fd)
        # the exception is narrow: nobody may not clear the bits of a file
        # it cannot write, nor change other bits
        path = self.mnt.p("ro-setuid")
        write_file(path, b"x")
        os.chmod(path, 0o4755)
        self.assertEqual(self.as_user("print(errno_of(os.chmod, %r, 0o755))" % path), "EPERM")
        self.assertEqual(os.stat(path).st_mode & 0o7777, 0o4755)
        print("as uid 65534: write, ftruncate and truncate of root's 04777, 02777 and 06777 "
              "files succeed and leave mode 0777 (seen on both mounts); a file it cannot "
              "write keeps its set-id bit (chmod: EPERM)")

    def test_every_setattr_sets_ctime(self):
        path = self.mnt.p("c")
        write_file(path, b"x")
        other = self.mount()
        for what, fn in (("chown(f, -1, -1)", lambda: os.chown(path, -1, -1)),
                         ("chown to the same owner", lambda: os.chown(path, 0, 0)),
                         ("chmod to the same mode", lambda: os.chmod(path, 0o644)),
                         ("utime", lambda: os.utime(path, None))):
            before = os.stat(path).st_ctime_ns
            time.sleep(0.02)
            fn()
            after = os.stat(path).st_ctime_ns
            self.assertGreater(after, before, what)
            fd = os.open(other.p("c"), os.O_RDONLY)
            try:
                self.assertEqual(os.fstat(fd).st_ctime_ns, after, what + " on the other mount")
            finally:
                os.close(fd)
        # as on a local filesystem, chown(f, -1, -1) of a set-id file clears the bits
        os.chmod(path, 0o6755)
        os.chown(path, -1, -1)
        self.assertEqual(os.stat(path).st_mode & 0o7777, 0o755)
        os.mkdir(self.mnt.p("dir"))
        os.chmod(self.mnt.p("dir"), 0o2755)
        os.chown(self.mnt.p("dir"), -1, -1)
        self.assertEqual(os.stat(self.mnt.p("dir")).st_mode & 0o7777, 0o2755)
        print("chown(f, -1, -1), chown and chmod to the same values, utime: each sets ctime, "
              "seen by the other mount; chown(f, -1, -1) clears a file's set-id bits and "
              "keeps a directory's, as ext4 does")


class KeptListings(FuseTestCase):
    def setUp(self):
        super().setUp()
        self.a = self.mnt
        self.b = self.mount()

    def listing_asks(self, path):
        """B's listing of path, and the requests and program runs it cost."""
        s0 = self.arfd.stats()["requests"]
        names = sorted(os.listdir(path))
        s1 = self.arfd.stats()["requests"]
        asked = sum(s1.get(k, 0) - s0.get(k, 0)
                    for k in ("readdir", "readdirplus", "prog_exec"))
        return names, asked

    def test_kept_listing_follows_the_other_mount(self):
        a, b = self.a, self.b
        os.mkdir(a.p("big"))
        want = ["f%04d" % i for i in range(2000)]
        for n in want:
            os.close(os.open(a.p("big", n), os.O_CREAT | os.O_WRONLY, 0o644))
        names, asked = self.listing_asks(b.p("big"))
        self.assertEqual(names, want)
        self.assertGreater(asked, 0, "the first listing is fetched")
        names, asked = self.listing_asks(b.p("big"))
        self.assertEqual(names, want)
        self.assertEqual(asked, 0, "an unchanged directory's listing is the kernel's")

        def step(what, change, expect):
            change()
            names, asked = self.listing_asks(b.p("big"))
            self.assertEqual(names, sorted(expect), what)
            self.assertGreater(asked, 0, what)
            names, asked = self.listing_asks(b.p("big"))
            self.assertEqual(names, sorted(expect), what + " (again)")
            self.assertEqual(asked, 0, what + ": kept again")

        def touch(m, n):
            os.close(os.open(m.p("big", n), os.O_CREAT | os.O_WRONLY, 0o644))
        want.append("added-on-a")
        step("a name added on A", lambda: touch(a, "added-on-a"), want)
        want.remove("f0007")
        step("a name removed on A", lambda: os.unlink(a.p("big", "f0007")), want)
        want.remove("f0008")
        want.append("renamed")
        step("a name renamed on A", lambda: os.rename(a.p("big", "f0008"), a.p("big", "renamed")),
             want)
        want.append("added-on-b")
        step("a name added on B", lambda: touch(b, "added-on-b"), want)

        big_t = 1_600_000_000_123_456_789  # the directory's mtime, set twice
        step("the mtime set on A", lambda: os.utime(a.p("big"), ns=(big_t, big_t)), want)

        def add_and_set_back():
            touch(a, "hidden-by-mtime")
            os.utime(a.p("big"), ns=(big_t, big_t))
        want.append("hidden-by-mtime")
        step("a name added on A, the mtime set back", add_and_set_back, want)

        c = self.mount("noac")
        for i in range(2):
            names, asked = self.listing_asks(c.p("big"))
            self.assertEqual(names, sorted(want))
            self.assertGreater(asked, 0, "noac: listing %d asks" % (i + 1))
        print("a kept listing: unchanged 0 requests; changed on either mount (mtime set "
              "back too): fetched again and right; noac: always fetched")


class Appends(FuseTestCase):
    WRITER = ("import os, sys\n"
              "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
              "for i in range(int(sys.argv[3])):\n"
              "    os.write(fd, b'%s %04d ' % (sys.argv[2].encode(), i) + b'x' * 40 + b'\\n')\n")

    def test_o_append_from_two_mounts_keeps_every_line(self):
        a, b = self.mnt, self.mount()
        write_file(a.p("log"), b"")
        per = 1000
        writers = (("A1", a), ("A2", a), ("B1", b), ("B2", b))
        procs = [subprocess.Popen([sys.executable, "-c", self.WRITER, m.p("log"), tag, str(per)])
                 for tag, m in writers]
        for p in procs:
            self.assertEqual(p.wait(timeout=600), 0)
        lines = read_file(b.p("log")).split(b"\n")
        self.assertEqual(lines[-1], b"")
        lines = lines[:-1]
        seen = {tag: [] for tag, _ in writers}
        torn = 0
        for line in lines:
            parts = line.split(b" ")
            if len(parts) != 3 or parts[2] != b"x" * 40 or parts[0].decode() not in seen:
                torn += 1
                continue
            seen[parts[0].decode()].append(int(parts[1]))
        self.assertEqual(torn, 0)
        self.assertEqual(len(lines), per * len(writers),
                         "%d of %d lines kept" % (len(lines), per * len(writers)))
        for tag, numbers in seen.items():
            self.assertEqual(numbers, list(range(per)), tag)
        print("O_APPEND from two mounts, 2 writers on each: %d of %d lines kept, none torn, "
              "each writer's in order" % (len(lines), per * len(writers)))


if __name__ == "__main__":
    fusetest.main()
