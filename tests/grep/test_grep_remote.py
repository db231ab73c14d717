#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-grep on ARF files: the differential cases of test_grep_diff.py run on
copies of the corpus inside an arf-fuse mount (by path) and by arf:// URL,
against GNU grep on the local originals; stdout and exit status must be
identical (file names in the URL tier are mapped back to local names).
Both tiers run the generated program on arfd (tools/arf-grep/remote.c):
a mount path goes to the server named by its user.arf.server attribute.
ARF_GREP_SLICE, when set, is not used here: the shipped slices follow the
server's budget.

BytesOnWire: a 256 MiB file with a few matching lines, searched by URL and
through the mount; the output must equal GNU grep's on the local copy, and
the bytes the arf-grep client received (its --stats counters) must stay
within 4x the output plus 16 KiB (the handshake and the runs' replies).
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
            got = D.run(D.ARF_GREP, args, self.mnt.path)
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
    program included), stays within a small factor of the output plus 16 KiB.
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
            self.assertLessEqual(got, 4 * len(p.stdout) + 16384)


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


def harness_ctl():
    return fusetest.harness.ARFCTL


if __name__ == "__main__":
    fusetest.main()
