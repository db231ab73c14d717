#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-grep on ARF files: the differential cases of test_grep_diff.py run on
copies of the corpus inside an arf-fuse mount (by path) and by arf:// URL,
against GNU grep on the local originals; stdout and exit status must be
identical (file names in the URL tier are mapped back to local names).
Both tiers run the generated program on arfd (tools/arf-grep/remote.c):
a mount path goes to the server named by its user.arf.server attribute,
with the page-cache check off (ARF_GREP_PAGECACHE=0); -r of a mount's
directory is walked on the server.
ARF_GREP_SLICE, when set, is not used here: the shipped slices follow the
server's budget.

BytesOnWire: a 256 MiB file with a few matching lines, searched by URL and
through the mount; the output must equal GNU grep's on the local copy, and
the bytes the arf-grep client sent and received (its --stats counters) must
stay within 4x the output plus 20 KiB (the handshake, the program and the
runs' replies; the -n table walker's program is some 400 instructions).
Its arfd allows long runs ([programs] max_insns, max_wall_ms), so that the
scan takes a few dozen runs rather than hundreds: with the defaults each run
scans about 512 KiB and costs about 160 bytes of reply.
ChangingFile: a writer rewrites an 8 MiB file through the mount, 1 MiB
at a time, alternating lines of all A and all B, while arf-grep scans it by
URL (default budget: many runs, each one view of the file): every line it
sees must be one of the two written, never a mix.
Skips, with the reason, without /dev/fuse or root (the mount tier)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fuse"))
import test_grep_diff as D  # noqa: E402
import fusetest  # noqa: E402
from fusetest import FuseTestCase  # noqa: E402


# The files the tests copy into the mount are in this host's page cache,
# where arf-grep would search them here: the shipped path is what is tested
# (PageCache tests the other).
SHIPPED = {"ARF_GREP_PAGECACHE": "0"}


class GrepOnArf(FuseTestCase):
    def setUp(self):
        super().setUp()
        if not os.path.exists(D.ARF_GREP):
            self.skipTest("arf-grep not built")
        self.local = tempfile.mkdtemp(prefix="arfgrep-local-")
        self.addCleanup(shutil.rmtree, self.local, True)
        files = D.make_files(self.local)
        for d in (self.local, self.mnt.path):
            os.makedirs(os.path.join(d, "sub", "deeper"), exist_ok=True)
            with open(os.path.join(d, "sub", "a.txt"), "wb") as f:
                f.write(b"foo in a\n")
            with open(os.path.join(d, "sub", "deeper", "b.txt"), "wb") as f:
                f.write(b"no match\nfoo foo\n")
        for name in list(files) + ["pats.txt", "pats_empty.txt"]:
            shutil.copyfile(os.path.join(self.local, name), os.path.join(self.mnt.path, name))
        self.cases = D.cases(files)

    def test_mount_paths(self):
        bad = []
        n = 0
        for opts, pargs, names in self.cases:
            if "." in names:   # -r over the whole directory: order is readdir's
                continue
            args = opts + pargs + names
            want = D.run(D.GNU_GREP, args, self.local)
            got = D.run(D.ARF_GREP, args, self.mnt.path, SHIPPED)
            n += 1
            if "-r" in opts:  # recursion follows each filesystem's readdir order
                want = (b"".join(sorted(want[0].splitlines(True))), want[1])
                got = (b"".join(sorted(got[0].splitlines(True))), got[1], got[2])
            if want[:2] != got[:2]:
                bad.append("%r: gnu rc=%d %r / arf rc=%d %r %r" % (
                    args, want[1], want[0][:200], got[1], got[0][:200], got[2][:200]))
        print("mount: %d cases, %d identical" % (n, n - len(bad)))
        self.assertFalse(bad, "\n".join(bad[:10]))

    def test_urls(self):
        bad = []
        n = 0
        for opts, pargs, names in self.cases:
            if len(names) != 1 or names[0] in (".", "sub", "sub/", "missing.txt"):
                continue
            if "-f" in pargs:
                pargs = [os.path.join(self.local, a) if a.startswith("pats") else a
                         for a in pargs]
            url = self.arfd.url("/" + names[0])
            want = D.run(D.GNU_GREP, opts + pargs + names, self.local)
            got = D.run(D.ARF_GREP, opts + pargs + [url], self.local)
            out = got[0].replace(url.encode(), names[0].encode())
            n += 1
            if (want[0], want[1]) != (out, got[1]):
                bad.append("%r: gnu rc=%d %r / arf rc=%d %r %r" % (
                    opts + pargs + [url], want[1], want[0][:200], got[1], out[:200],
                    got[2][:200]))
        print("url: %d cases, %d identical" % (n, n - len(bad)))
        self.assertFalse(bad, "\n".join(bad[:10]))


class BytesOnWire(FuseTestCase):
    """A 256 MiB file with five matches, at arfd's default instruction budget:
    what crosses the transport, both ways (connecting and loading the
    program included), stays within a small factor of the output plus 20 KiB.
    The wall-clock limit is raised only so that a loaded machine cannot turn a
    run of ~0.2 s into a stop, which would cost a run and its bytes."""
    extra = {"programs.max_wall_ms": "10000"}

    def setUp(self):
        super().setUp()
        if not os.path.exists(D.ARF_GREP):
            self.skipTest("arf-grep not built")
        self.local = tempfile.mkdtemp(prefix="arfgrep-big-")
        self.addCleanup(shutil.rmtree, self.local, True)

    def crossed(self, stderr):
        """bytes_sent + bytes_received, and the executions, from --stats."""
        got = []
        for k in (rb"bytes_sent", rb"bytes_received", rb"execs"):
            m = re.search(k + rb" (\d+)", stderr)
            self.assertIsNotNone(m, stderr)
            got.append(int(m.group(1)))
        return got[0] + got[1], got[2]

    def test_bytes_on_wire(self):
        big = os.path.join(self.local, "big.txt")
        line = b"x" * 99 + b"\n"
        block = line * 1024                      # 100 KiB
        nblocks = 256 * 1024 * 1024 // len(block) + 1
        with open(big, "wb") as f:
            for i in range(nblocks):
                if i in (0, 1000, nblocks // 2, nblocks - 1):
                    f.write(b"the needle %d\n" % i)
                f.write(block)
            f.write(b"last needle, no newline")
        self.assertGreaterEqual(os.path.getsize(big), 256 << 20)
        subprocess.run([harness_ctl(), "put", big, self.arfd.url("/big.txt")], check=True,
                       stdout=subprocess.DEVNULL)
        for opts, target, cwd in ((["-n"], self.arfd.url("/big.txt"), self.local),
                                  (["-b", "-F"], "big.txt", self.mnt.path)):
            want = subprocess.run([D.GNU_GREP] + opts + ["needle", "big.txt"], cwd=self.local,
                                  stdout=subprocess.PIPE, env=D.ENV)
            p = subprocess.run([D.ARF_GREP, "--stats"] + opts + ["needle", target], cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=D.ENV)
            self.assertEqual((p.stdout, p.returncode), (want.stdout, 0), p.stderr)
            got, execs = self.crossed(p.stderr)
            print("%s %s: output %d bytes, %d bytes crossed in %d runs (%s)" % (
                " ".join(opts), target, len(p.stdout), got, execs, p.stderr.decode().strip()))
            self.assertLessEqual(got, 4 * len(p.stdout) + 20480)


class ChangingFile(FuseTestCase):
    def test_scan_while_rewritten(self):
        if not os.path.exists(D.ARF_GREP):
            self.skipTest("arf-grep not built")
        size, chunk = 8 << 20, 1 << 20
        states = [(c * 63 + "\n").encode() * (chunk // 64) for c in "AB"]
        path = os.path.join(self.mnt.path, "flip.txt")
        with open(path, "wb") as f:
            for _ in range(size // chunk):
                f.write(states[0])
        stop = threading.Event()
        passes = [0]

        def writer():
            fd = os.open(path, os.O_WRONLY)
            try:
                while not stop.is_set():
                    data = states[(passes[0] + 1) % 2]
                    for off in range(0, size, chunk):
                        os.pwrite(fd, data, off)
                    passes[0] += 1
            finally:
                os.close(fd)

        t = threading.Thread(target=writer)
        t.start()
        try:
            scans = 0
            deadline = time.time() + 20
            while scans < 6 and time.time() < deadline:
                # lines that are neither of the two written: none, ever
                p = subprocess.run([D.ARF_GREP, "--stats", "-v", "-c", "-E", "^(A{63}|B{63})$",
                                    self.arfd.url("/flip.txt")],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=D.ENV)
                self.assertEqual((p.stdout, p.returncode), (b"0\n", 1), p.stderr)
                self.assertRegex(p.stderr, rb"execs [1-9]")
                scans += 1
        finally:
            stop.set()
            t.join()
        self.assertGreater(passes[0], 0, "the writer made no pass")
        print("changing file: %d scans during %d rewrites, no line that was never written" % (
            scans, passes[0]))


class SmallFiles(FuseTestCase):
    """grep -r of a directory of the mount: walked on the server (readdir
    with attributes, no stat or open through the mount), the small files
    searched many to a run (the batch wrapper: several file views in one
    run, arfd/helpers.c).  The tree mixes what sends a batched file back to
    a run of its own: a NUL, more selected lines than a batch takes for one
    file, a file longer than a batch's view, and what a batch must get
    right itself: empty files, no final newline, long lines (fetched rather
    than inline), -m, -l/-L.  Output (sorted: readdir orders differ) and
    exit status equal GNU grep's on a local copy, and the search takes far
    fewer runs than there are files."""

    def setUp(self):
        super().setUp()
        if not os.path.exists(D.ARF_GREP):
            self.skipTest("arf-grep not built")
        self.local = tempfile.mkdtemp(prefix="arfgrep-tree-")
        self.addCleanup(shutil.rmtree, self.local, True)
        self.nfiles = 0
        for root in (self.local, self.mnt.path):
            for d in range(4):
                top = os.path.join(root, "tree", "d%d" % d, "e")
                os.makedirs(top, exist_ok=True)
                for i in range(40):
                    body = self.content(d, i)
                    where = top if i % 3 else os.path.dirname(top)
                    with open(os.path.join(where, "f%02d.txt" % i), "wb") as f:
                        f.write(body)
                    if root == self.local:
                        self.nfiles += 1

    @staticmethod
    def content(d, i):
        k = d * 40 + i
        if k % 17 == 0:
            return b""
        lines = [b"plain line %d of some text" % j for j in range(k % 7)]
        if k % 5 == 0:
            lines.insert(k % 3, b"a Needle here %d" % k)
        if k % 11 == 0:
            lines += [b"needle %d" % j for j in range(40)]   # more than a batch takes
        if k % 13 == 0:
            lines.append(b"needle with a NUL \0 after it")
        if k % 19 == 0:
            lines.append(b"needle " + b"y" * 9000)           # not inline
        if k % 23 == 0:
            lines += [b"filler needle line"] * 30000          # longer than a batch's view
        body = b"\n".join(lines)
        return body if k % 4 == 0 else body + b"\n"

    def test_tree(self):
        bad, n = [], 0
        sets = [[], ["-n"], ["-c"], ["-l"], ["-L"], ["-i"], ["-v", "-c"], ["-o", "-i"],
                ["-m", "1"], ["-h", "-b"], ["-a"], ["-q"], ["-w", "-n"], ["-F", "-i", "-c"],
                ["-E", "-c"], ["-m", "2", "-c", "-i"]]
        for opts in sets:
            pat = "NEEDLE|plain l[a-z]+e 3" if "-E" in opts else "needle"
            for target, cwd in ([("tree", "")] if opts not in (["-n"], ["-l"]) else
                                [("tree/d1", ""), (None, "tree")]):
                args = opts + ["-r", pat] + ([target] if target else [])
                want = D.run(D.GNU_GREP, args, os.path.join(self.local, cwd))
                got = D.run(D.ARF_GREP, args, os.path.join(self.mnt.path, cwd))
                want = (b"".join(sorted(want[0].splitlines(True))), want[1])
                got = (b"".join(sorted(got[0].splitlines(True))), got[1], got[2])
                n += 1
                if want[:2] != got[:2]:
                    bad.append("%r in %r: gnu rc=%d %r / arf rc=%d %r %r" % (
                        args, cwd, want[1], want[0][:300], got[1], got[0][:300], got[2][:300]))
        for opts in (["-n"], ["-c"]):    # and by URL: the same walk and batches
            url = self.arfd.url("/tree")
            want = D.run(D.GNU_GREP, opts + ["-r", "needle", "tree"], self.local)
            got = D.run(D.ARF_GREP, opts + ["-r", "needle", url], self.local)
            want = (b"".join(sorted(want[0].splitlines(True))), want[1])
            out = b"".join(sorted(got[0].replace(url.encode(), b"tree").splitlines(True)))
            n += 1
            if want != (out, got[1]):
                bad.append("%r by URL: gnu rc=%d %r / arf rc=%d %r %r" % (
                    opts, want[1], want[0][:300], got[1], out[:300], got[2][:300]))
        p = subprocess.run([D.ARF_GREP, "--stats", "-r", "-l", "needle", "tree"],
                           cwd=self.mnt.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=D.ENV)
        m = re.search(rb"execs (\d+)", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        print("small files: %d cases, %d identical; -r -l over %d files took %s runs" % (
            n, n - len(bad), self.nfiles, m.group(1).decode()))
        self.assertFalse(bad, "\n".join(bad[:10]))
        self.assertLess(int(m.group(1)), self.nfiles // 3)


class PageCache(FuseTestCase):
    """A file whose every page is in this host's page cache is searched
    here, through the mount (mmap + mincore say so): no run on arfd; with
    ARF_GREP_PAGECACHE=0, or once the pages are dropped, it is shipped."""

    def test_cached_here_else_shipped(self):
        if not os.path.exists(D.ARF_GREP):
            self.skipTest("arf-grep not built")
        local = tempfile.mkdtemp(prefix="arfgrep-pc-")
        self.addCleanup(shutil.rmtree, local, True)
        body = b"".join(b"line %d Copyright the authors\n" % i if i % 97 == 0 else
                        b"line %d of plain text\n" % i for i in range(20000))
        for d in (local, self.mnt.path):
            with open(os.path.join(d, "pc.txt"), "wb") as f:
                f.write(body)
        path = os.path.join(self.mnt.path, "pc.txt")
        with open(path, "rb") as f:
            self.assertEqual(f.read(), body)          # every page cached
        want = D.run(D.GNU_GREP, ["-n", "-i", "copyright", "pc.txt"], local)

        def search(env):
            p = subprocess.run([D.ARF_GREP, "--stats", "-n", "-i", "copyright", path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=dict(D.ENV, **env))
            self.assertEqual((p.stdout, p.returncode), want[:2], p.stderr)
            m = re.search(rb"execs (\d+)", p.stderr)
            return int(m.group(1)) if m else 0

        self.assertEqual(search({}), 0)
        self.assertGreater(search({"ARF_GREP_PAGECACHE": "0"}), 0)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        print("page cache: cached: searched here; dropped: %d runs" % search({}))


def harness_ctl():
    return fusetest.harness.ARFCTL


if __name__ == "__main__":
    fusetest.main()
