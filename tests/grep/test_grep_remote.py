#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-grep on ARF files: the differential cases of test_grep_diff.py run on
copies of the corpus inside an arf-fuse mount (by path) and by arf:// URL,
against GNU grep on the local originals; stdout and exit status must be
identical (file names in the URL tier are mapped back to local names).

NOTE: until arf-grep ships its program through arfd's PROG_EXEC (see
tools/arf-grep/remote.c), these tiers exercise the stopgap paths: the
mount path is read through the mount, the URL with arf_read().  The check
that only matching lines cross the transport is test_bytes_on_wire, which
is expected to fail until then and is skipped unless ARF_GREP_SHIPPED=1.
Skips, with the reason, without /dev/fuse or root (the mount tier)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fuse"))
import test_grep_diff as D  # noqa: E402
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

    @unittest.skipUnless(os.environ.get("ARF_GREP_SHIPPED") == "1",
                         "arf-grep does not ship its program yet (stopgap reads the file)")
    def test_bytes_on_wire(self):
        big = os.path.join(self.mnt.path, "big.bin")
        with open(big, "wb") as f:
            line = b"x" * 99 + b"\n"
            for i in range(256 * 1024 * 1024 // (len(line) * 1024)):
                f.write(line * 1024)
            f.write(b"the needle\n")
        p = subprocess.run([D.ARF_GREP, "--stats", "needle", self.arfd.url("/big.bin")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=D.ENV)
        self.assertEqual(p.stdout, b"the needle\n")


if __name__ == "__main__":
    unittest.main()
