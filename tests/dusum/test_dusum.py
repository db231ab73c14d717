#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-du and arf-sum against GNU du and coreutils' sha256sum, md5sum,
b2sum, sha1sum, sha224sum, sha384sum and sha512sum (9.1), on one tree in an
ARF mount: files, symbolic links (dangling, to a directory), hard links in
one directory and across two, a directory the caller may not read, one it
may not search, one it may do neither with, files it may not read, names
with spaces, newlines, carriage returns, backslashes, quotes and non-UTF-8
bytes, empty directories and files, a deep tree, sparse files, a directory
of 300 entries (more than one dir_read batch).  Each case runs both tools
in the mount with LC_ALL=C, as root and as uid 65534 (setpriv), and
compares stdout, stderr (the program's name aside) and the exit status.
By URL (root only: an anonymous connection is not uid 65534), the URL in
arf-du's and arf-sum's output is mapped back to the mount's path.

ServerDoesTheWork: --stats shows the walk and the digests ran on arfd
(executions, no one-sided reads of file data), with at most 1 KiB crossing
per file hashed, by path and by URL (test_url_bytes_per_file), where the run
resolves the paths too.  ChangingFile: a writer rewrites a 3 MiB file (its first
and last 8 bytes, a counter, each write synced) while arf-sum hashes it by
path and by URL: every digest is that of a state the file had, else the
run reports an error; never one of a mix.  Skips, with the reason, without
/dev/fuse or root."""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fuse"))
import fusetest  # noqa: E402
from fusetest import FuseTestCase  # noqa: E402

BUILD = fusetest.BUILD
ARF_DU = os.path.join(BUILD, "tools", "arf-du", "arf-du")
ARF_SUM = os.path.join(BUILD, "tools", "arf-sum", "arf-sum")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
SUMS = ["sha256sum", "md5sum", "b2sum", "sha1sum", "sha224sum", "sha384sum", "sha512sum"]
ENV = {"LC_ALL": "C", "PATH": "/usr/bin:/bin"}
for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if k in os.environ:
        ENV[k] = os.environ[k]


def w(path, data, mode=None):
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)


def make_tree(top):
    """The tree, made through the mount as root."""
    os.makedirs(top)
    os.chmod(top, 0o755)
    j = os.path.join
    w(j(top, "a.txt"), b"hello\n")
    w(j(top, "sp ace.txt"), b"x" * 5000)
    w(j(top, "new\nline"), b"newline\n")
    w(os.fsencode(top) + b"/bin\xff\xfe", b"not utf-8\n")
    w(j(top, "back\\slash"), b"backslash")
    w(j(top, "cr\rname"), b"carriage return")
    w(j(top, "quote'name"), b"quote")
    w(j(top, "emptyfile"), b"")
    w(j(top, "big"), bytes(range(256)) * 1200 + b"tail")
    with open(j(top, "sparse"), "wb") as f:
        f.truncate(64 << 20)
        f.seek(8 << 20)
        f.write(b"island")
    with open(j(top, "sparse-empty"), "wb") as f:
        f.truncate(1 << 30)
    os.makedirs(j(top, "empty"))
    os.makedirs(j(top, "links"))
    os.symlink("../a.txt", j(top, "links", "sym"))
    os.symlink("nowhere", j(top, "links", "dangling"))
    os.symlink("../deep", j(top, "links", "dirsym"))
    os.makedirs(j(top, "hl"))
    os.makedirs(j(top, "other"))
    w(j(top, "hl", "h1"), b"hard" * 3000)
    os.link(j(top, "hl", "h1"), j(top, "hl", "h2"))
    os.link(j(top, "hl", "h1"), j(top, "other", "h3"))
    w(j(top, "other", "own"), b"own")
    d = j(top, "deep")
    for i in range(14):
        d = j(d, "d%d" % i)
        os.makedirs(d)
        w(j(d, "f%d" % i), b"y" * (i * 700))
    for name, mode in (("noread", 0o311), ("nosearch", 0o644), ("locked", 0o000)):
        os.makedirs(j(top, name, "inner"))
        w(j(top, name, "f"), b"inside " + name.encode())
        os.chmod(j(top, name), mode)
    w(j(top, "secret.txt"), b"root only\n", 0o600)
    w(j(top, "unreadable.bin"), b"nobody reads this\n", 0o000)
    os.makedirs(j(top, "wide"))
    for i in range(300):
        w(j(top, "wide", "w%03d" % i), b"z" * (i * 37))
    os.makedirs(j(top, "sums"))
    os.chmod(j(top, "sums"), 0o777)


def run(argv, cwd, user):
    pre = NOBODY if user else []
    p = subprocess.run(pre + argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=ENV, timeout=120)
    return p.stdout, p.stderr, p.returncode


def norm_err(err, names):
    """The program's name out of its messages ("du: ..." / "arf-du: ...")."""
    alt = b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
    err = re.sub(rb"(?m)^(" + alt + rb"):", b"PROG:", err)
    return re.sub(rb"Try '(" + alt + rb") --help'", b"Try 'PROG --help'", err)


DU_OPTS = ["", "-a", "-s", "-h", "-ah", "-b", "--apparent-size", "-c", "-d 0", "-d 1",
           "-d 2 -a", "--max-depth=1 -h", "--inodes", "--inodes -a", "-k", "-m", "-BK",
           "-B 4096", "--si", "-l", "-al", "-sc", "-bc", "-hc -s", "-0 -a", "--apparent-size -ah",
           "-s -d 1", "-a -s", "-d x"]
DU_OPERANDS = [["top"], ["top/hl", "top/other", "top/hl"], ["top/sparse", "top/a.txt", "top/nope"],
               ["top/deep"], ["top/noread", "top/nosearch", "top/locked"], ["top/wide/"],
               ["top/links", "top/other"], ["top/other/h3", "top/hl"]]


def du_cases():
    """(options, operands): every option set with the whole tree, and with one
    other operand group in turn."""
    out = []
    for i, o in enumerate(DU_OPTS):
        out.append((o.split(), ["top"]))
        out.append((o.split(), DU_OPERANDS[1 + i % (len(DU_OPERANDS) - 1)]))
    return out


SUM_FILES = ["top/a.txt", "top/sp ace.txt", "top/new\nline", "top/back\\slash", "top/cr\rname",
             "top/quote'name", "top/emptyfile", "top/big", "top/sparse", "top/hl/h1",
             "top/other/h3", "top/links/sym", "top/secret.txt", "top/unreadable.bin", "top/nope",
             "top/empty", "top/links/dangling", "top/wide/w007", "top/wide/w299", "top/deep/d0/f0"]


class DuSumOnArf(FuseTestCase):
    def setUp(self):
        super().setUp()
        for x in (ARF_DU, ARF_SUM):
            if not os.path.exists(x):
                self.skipTest("%s not built" % x)
        os.chmod(self.arfd.workdir, 0o755)
        self.top = self.mnt.p("top")
        make_tree(self.top)
        os.symlink(os.fsencode(self.top) + b"/bin\xff\xfe", os.fsencode(self.top) + b"/links/nonutf")
        self.bin = tempfile.mkdtemp(prefix="arf-dusum-bin-")
        self.addCleanup(shutil.rmtree, self.bin, True)
        os.chmod(self.bin, 0o755)
        for s in SUMS:
            os.symlink(ARF_SUM, os.path.join(self.bin, s))

    def arf_sum(self, tool):
        return os.path.join(self.bin, tool)

    def diff(self, gnu, arf, cwd, user, names, url_map=None):
        g = run(gnu, cwd, user)
        a = run(arf, cwd, user)
        ao, ae = a[0], a[1]
        if url_map:
            ao = ao.replace(url_map[0].encode(), url_map[1].encode())
            ae = ae.replace(url_map[0].encode(), url_map[1].encode())
        g = (g[0], norm_err(g[1], names), g[2])
        a = (ao, norm_err(ae, names), a[2])
        if g != a:
            return "%r as %s:\n gnu %r\n arf %r" % (arf[1:], "65534" if user else "root", g, a)
        return None

    stride = 1  # every stride-th case (LocalTree: a sample)

    def du_tier(self, user):
        bad = []
        cases = du_cases()[::self.stride]
        for opts, ops in cases:
            r = self.diff(["du"] + opts + ops, [ARF_DU] + opts + ops, self.mnt.path, user,
                          ["du", "arf-du"])
            if r:
                bad.append(r)
        return len(cases), bad

    def sum_cases(self):
        """(tool, args): output, and -c over checksum files GNU's tool wrote."""
        files = [f for f in SUM_FILES]
        readable = ["top/a.txt", "top/sp ace.txt", "top/new\nline", "top/back\\slash",
                    "top/cr\rname", "top/big", "top/hl/h2", "top/wide/w100", "top/emptyfile"]
        sums = self.top + "/sums"
        out = []
        for t in SUMS:
            out.append((t, files))
            out.append((t, ["--tag"] + files[:12]))
            out.append((t, ["-z"] + files[:12]))
        out.append(("sha256sum", ["-b"] + files[:6]))
        out.append(("b2sum", ["-l", "256"] + files[:12]))
        out.append(("b2sum", ["-l", "128", "--tag"] + files[:12]))
        out.append(("b2sum", ["-l", "12"] + files[:2]))
        out.append(("sha256sum", ["--", "top/wide/w001", "top/bin\udcff\udcfe"]))
        for t in ("sha256sum", "md5sum", "b2sum"):
            good = os.path.join(sums, t + ".good")
            p = subprocess.run([t] + readable, cwd=self.mnt.path, stdout=subprocess.PIPE,
                               env=ENV, check=True)
            w(good, p.stdout, 0o644)
            lines = p.stdout.split(b"\n")
            badlines = list(lines)
            badlines[0] = (b"0" if badlines[0][:1] != b"0" else b"1") + badlines[0][1:]
            badlines.insert(2, b"this line is not a checksum")
            badlines.insert(3, lines[1].split(b" ")[0] + b"  top/missing-file")
            badlines.insert(4, b"#  a comment")
            bad = os.path.join(sums, t + ".bad")
            w(bad, b"\n".join(badlines), 0o644)
            p = subprocess.run([t, "--tag", "top/a.txt", "top/new\nline", "top/secret.txt"],
                               cwd=self.mnt.path, stdout=subprocess.PIPE, env=ENV)
            tagged = os.path.join(sums, t + ".tag")
            w(tagged, p.stdout, 0o644)
            miss = os.path.join(sums, t + ".missing")
            w(miss, lines[0].split(b" ")[0] + b"  top/gone\n", 0o644)
            rel = "top/sums/" + t
            out += [(t, ["-c", rel + ".good"]), (t, ["-c", "--quiet", rel + ".good"]),
                    (t, ["-c", rel + ".bad"]), (t, ["-c", "--status", rel + ".bad"]),
                    (t, ["-c", "--warn", rel + ".bad"]), (t, ["-c", "--strict", rel + ".good"]),
                    (t, ["-c", "--strict", "--quiet", rel + ".bad"]), (t, ["-c", rel + ".tag"]),
                    (t, ["-c", rel + ".missing"]), (t, ["-c", "--ignore-missing", rel + ".missing"]),
                    (t, ["-c", "--ignore-missing", rel + ".bad"])]
        p = subprocess.run(["b2sum", "-l", "160"] + readable, cwd=self.mnt.path,
                           stdout=subprocess.PIPE, env=ENV, check=True)
        w(os.path.join(sums, "b2-160"), p.stdout, 0o644)
        p = subprocess.run(["b2sum", "-l", "256", "--tag"] + readable, cwd=self.mnt.path,
                           stdout=subprocess.PIPE, env=ENV, check=True)
        w(os.path.join(sums, "b2-256.tag"), p.stdout, 0o644)
        out += [("b2sum", ["-c", "top/sums/b2-160"]), ("b2sum", ["-c", "top/sums/b2-256.tag"]),
                ("b2sum", ["-c", "top/sums/sha256sum.good"])]
        out += [("sha256sum", ["-c", "top/sums/none"]), ("sha256sum", ["-c", "top/a.txt"]),
                ("sha256sum", ["--quiet", "top/a.txt"]), ("sha256sum", ["-c", "--tag", "x"]),
                ("md5sum", ["-c", "top/sums/sha256sum.good"])]
        return out

    def sum_tier(self, user):
        bad = []
        cases = self.sum_cases()[::self.stride] if not user else self.cases
        if not user:
            self.cases = cases
        for tool, args in cases:
            args = [os.fsencode(a) for a in args]
            r = self.diff([tool] + args, [self.arf_sum(tool)] + args, self.mnt.path, user,
                          SUMS)
            if r:
                bad.append(r)
        return len(cases), bad

    def test_du_and_sum(self):
        report, bad = [], []
        for user in (False, True):
            n, b = self.du_tier(user)
            report.append("du %s: %d cases, %d identical" % ("65534" if user else "root", n, n - len(b)))
            bad += b
        for user in (False, True):
            n, b = self.sum_tier(user)
            report.append("sum %s: %d cases, %d identical" % ("65534" if user else "root", n, n - len(b)))
            bad += b
        print("\n".join(report))
        self.assertFalse(bad, "\n".join(bad[:12]))

    def test_urls(self):
        """By URL as root: the same output as GNU's on the mount's path."""
        bad = []
        n = 0
        for opts, ops in du_cases()[::2]:
            ops = ["top"]
            url = self.arfd.url("/top")
            r = self.diff(["du"] + opts + ops, [ARF_DU] + opts + [url], self.mnt.path, False,
                          ["du", "arf-du"], url_map=(self.arfd.url("/"), ""))
            n += 1
            if r:
                bad.append(r)
        for t in SUMS:
            # the run resolves the paths; through a symbolic link or ".."
            # arf-sum resolves them itself
            names = ["top/a.txt", "top/big", "top/new\nline", "top/nope", "top/empty",
                     "top/links/dirsym/d0/f0", "top/deep/../a.txt", "top/a.txt/x", "top//hl/./h1"]
            urls = [self.arfd.url("/" + x) for x in names]
            g = run([t] + names, self.mnt.path, False)
            a = run([self.arf_sum(t)] + urls, self.mnt.path, False)
            # names: the URL's path; messages: quoted as a URL (':') needs
            prefix = self.arfd.url("/").encode()
            ao = a[0].replace(prefix, b"")
            ae = a[1].replace(prefix, b"").replace(b"'", b"")
            n += 1
            if (g[0], g[1], g[2]) != (ao, ae, a[2]):
                bad.append("%s by URL:\n gnu %r\n arf %r" % (t, g, (ao, ae, a[2])))
        print("url: %d cases, %d identical" % (n, n - len(bad)))
        self.assertFalse(bad, "\n".join(bad[:12]))

    def test_server_does_the_work(self):
        """The walk and the digests run on arfd: executions, and for arf-sum at
        most 1 KiB a file (plus the handshake and the program's load)."""
        def stats(err):
            got = {}
            for k in ("execs", "bytes_sent", "bytes_received", "one_sided_bytes"):
                m = re.search(k.encode() + rb" (\d+)", err)
                self.assertIsNotNone(m, err)
                got[k] = int(m.group(1))
            return got
        for user in (False, True):
            o, e, rc = run([ARF_DU, "--stats", "-s", "top/wide"], self.mnt.path, user)
            self.assertEqual(rc, 0, e)
            s = stats(e)
            self.assertGreater(s["execs"], 0, e)
            # 300 files summed on the server: the handshake (~4 KiB) and one
            # sum back, where 300 records would be 14 KiB or more
            self.assertLess(s["bytes_received"], 8192, e)
            files = ["top/wide/w%03d" % i for i in range(0, 300, 3)]
            o, e, rc = run([ARF_SUM, "--stats"] + files, self.mnt.path, user)
            self.assertEqual(rc, 0, e)
            s = stats(e)
            self.assertGreater(s["execs"], 0, e)
            self.assertEqual(s["one_sided_bytes"], 0, e)
            crossed = s["bytes_sent"] + s["bytes_received"]
            print("%s: arf-sum of %d files: %d bytes crossed in %d runs (%s)" % (
                "65534" if user else "root", len(files), crossed, s["execs"], e.decode().strip()))
            self.assertLessEqual(crossed, 1024 * len(files) + 16384 + 8192, e)

    def test_url_bytes_per_file(self):
        """By URL the run resolves the paths too: at most 1 KiB crosses a file,
        the handshake and the program's load included, for files one to a
        directory (where resolving each path here read a directory entry
        and an inode more a file: 1,249 bytes a file here)."""
        spread = os.path.join(self.top, "spread")
        os.makedirs(spread)
        names = []
        for i in range(300):
            d = os.path.join(spread, "d%03d" % i)
            os.makedirs(d)
            w(os.path.join(d, "f"), b"s" * (i * 53))
            names.append("top/spread/d%03d/f" % i)
        g = run(["sha256sum"] + names, self.mnt.path, False)
        a = run([ARF_SUM, "--stats"] + [self.arfd.url("/" + x) for x in names], self.mnt.path,
                False)
        self.assertEqual(a[2], 0, a[1])
        self.assertEqual(a[0].replace(self.arfd.url("/").encode(), b""), g[0])
        got = {}
        for k in ("execs", "rounds", "requests", "bytes_sent", "bytes_received"):
            m = re.search(rb" " + k.encode() + rb" (\d+)", a[1])
            self.assertIsNotNone(m, a[1])
            got[k] = int(m.group(1))
        crossed = got["bytes_sent"] + got["bytes_received"]
        print("by URL: arf-sum of %d files: %d bytes crossed (%.0f a file), %d rounds, %d runs" % (
            len(names), crossed, crossed / len(names),
            got["rounds"] + got["requests"] + got["execs"], got["execs"]))
        self.assertLessEqual(crossed, 1024 * len(names), a[1])


class LocalDir:
    """A directory standing in for a mount (no FUSE): .path and .p()."""

    def __init__(self, path):
        self.path = path

    def p(self, *names):
        return os.path.join(self.path, *names)


class LocalTree(DuSumOnArf):
    """The same cases on a tree in a local directory, where both tools walk
    and read through the kernel: the GNU-compatibility half of the tools
    (options, output, messages, -c), checked also where there is no FUSE."""
    test_server_does_the_work = None
    test_url_bytes_per_file = None
    test_urls = None
    stride = 3

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("the tree's permissions are tested as root and as 65534")

    def setUp(self):
        for x in (ARF_DU, ARF_SUM):
            if not os.path.exists(x):
                self.skipTest("%s not built" % x)
        base = tempfile.mkdtemp(prefix="arf-dusum-local-")
        self.addCleanup(shutil.rmtree, base, True)
        os.chmod(base, 0o755)
        self.mnt = LocalDir(base)
        self.top = self.mnt.p("top")
        make_tree(self.top)
        self.addCleanup(lambda: [os.chmod(self.mnt.p("top", d), 0o755)
                                 for d in ("noread", "nosearch", "locked")])
        self.bin = tempfile.mkdtemp(prefix="arf-dusum-bin-")
        self.addCleanup(shutil.rmtree, self.bin, True)
        os.chmod(self.bin, 0o755)
        for t in SUMS:
            os.symlink(ARF_SUM, os.path.join(self.bin, t))


class TightBudget(DuSumOnArf):
    """arfd's instruction budget cut to 20,000 a run: the du program stops
    after a few entries and is resumed by its cursor (and asked for fewer
    entries after a run ran out), the sum program's batches are split and a
    file too big for a run is hashed here; the output stays GNU's."""
    extra = {"programs.max_insns": "20000"}
    test_du_and_sum = None
    test_server_does_the_work = None
    test_url_bytes_per_file = None
    test_urls = None

    def test_resumed(self):
        bad = []
        n = 0
        for opts in (["-a"], [], ["--inodes", "-a"], ["-s"]):
            for target, user in (("top", False), ("top", True), (self.arfd.url("/top"), False)):
                g = run(["du"] + opts + ["top"], self.mnt.path, user)
                a = run([ARF_DU, "--stats"] + opts + [target], self.mnt.path, user)
                m = re.search(rb"execs (\d+)", a[1])
                ao = a[0].replace(self.arfd.url("/").encode(), b"")
                ae = re.sub(rb"(?m)^arf-du: stats .*\n", b"", a[1])
                n += 1
                if (g[0], norm_err(g[1], ["du"]), g[2]) != (ao, norm_err(ae, ["arf-du"]), a[2]) \
                        or not m or int(m.group(1)) < 3:
                    bad.append("du %r %s as %s:\n gnu %r\n arf %r" % (opts, target, user, g, a))
        for tool in ("sha256sum", "md5sum"):
            for user in (False, True):
                files = [os.fsencode(f) for f in SUM_FILES]
                g = run([tool] + files, self.mnt.path, user)
                a = run([self.arf_sum(tool), "--stats"] + files, self.mnt.path, user)
                ae = re.sub(rb"(?m)^\S+: stats .*\n", b"", a[1])
                n += 1
                if (g[0], g[1], g[2]) != (a[0], ae, a[2]) or b"execs" not in a[1]:
                    bad.append("%s as %s:\n gnu %r\n arf %r" % (tool, user, g, a))
            # by URL (root): runs that resolve the paths, stopped and split
            names = ["top/a.txt", "top/big", "top/sp ace.txt", "top/nope", "top/empty",
                     "top/hl/h1", "top/wide/w299", "top/deep/d0/f0", "top/deep/../a.txt",
                     "top/sparse"]
            prefix = self.arfd.url("/")
            g = run([tool] + names, self.mnt.path, False)
            a = run([self.arf_sum(tool), "--stats"] + [prefix + x for x in names],
                    self.mnt.path, False)
            ae = re.sub(rb"(?m)^\S+: stats .*\n", b"", a[1])
            ao, ae = a[0].replace(prefix.encode(), b""), ae.replace(prefix.encode(), b"")
            n += 1
            if (g[0], g[1], g[2]) != (ao, ae.replace(b"'", b""), a[2]) or b"execs" not in a[1]:
                bad.append("%s by URL:\n gnu %r\n arf %r" % (tool, g, a))
        print("tight budget: %d cases, %d identical" % (n, n - len(bad)))
        self.assertFalse(bad, "\n".join(bad[:6]))


class ChangingFile(FuseTestCase):
    SIZE = 3 << 20

    def test_sum_while_rewritten(self):
        if not os.path.exists(ARF_SUM):
            self.skipTest("arf-sum not built")
        path = self.mnt.p("flip")
        body = bytearray(b"m" * self.SIZE)

        def state(head, tail):
            b = bytearray(body)
            b[:8] = head.to_bytes(8, "little")
            b[-8:] = tail.to_bytes(8, "little")
            return hashlib.sha256(b).hexdigest()
        w(path, bytes(state_bytes(body, 0, 0)))
        count = [0]
        stop = threading.Event()

        def writer():
            fd = os.open(path, os.O_WRONLY)
            k = 0
            try:
                while not stop.is_set():
                    k += 1
                    os.pwrite(fd, k.to_bytes(8, "little"), 0)
                    os.fsync(fd)
                    count[0] = k * 2 - 1          # odd: head k, tail k - 1
                    os.pwrite(fd, k.to_bytes(8, "little"), self.SIZE - 8)
                    os.fsync(fd)
                    count[0] = k * 2              # even: head k, tail k
                    time.sleep(0.003)
            finally:
                os.close(fd)

        t = threading.Thread(target=writer)
        t.start()
        digests = errors = 0
        bad = []
        try:
            deadline = time.time() + 20
            i = 0
            while (i < 12 or digests < 3) and time.time() < deadline:
                target = path if i % 2 == 0 else self.arfd.url("/flip")
                before = count[0]
                p = subprocess.run([ARF_SUM, "--stats", target], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=ENV, timeout=60)
                after = count[0]
                i += 1
                if p.returncode != 0:
                    self.assertIn(b"Resource temporarily unavailable", p.stderr)
                    errors += 1
                    continue
                self.assertRegex(p.stderr, rb"execs [1-9]")
                got = p.stdout.split(b" ")[0].decode()
                # count says what the writer finished; the server may be one
                # write ahead of it (written, not yet counted)
                legit = set()
                for c in range(before, after + 2):
                    k = (c + 1) // 2
                    legit.add(state(k, k if c % 2 == 0 else k - 1))
                if got not in legit:
                    bad.append("digest %s of no state between counts %d and %d" % (got, before, after))
                digests += 1
        finally:
            stop.set()
            t.join()
        print("changing file: %d digests, %d runs gave EAGAIN, %d rewrites" % (digests, errors, count[0]))
        self.assertFalse(bad, "\n".join(bad))
        self.assertGreater(count[0], 2, "the writer made no progress")
        self.assertGreater(digests, 0, "no run gave a digest")


def state_bytes(body, head, tail):
    b = bytearray(body)
    b[:8] = head.to_bytes(8, "little")
    b[-8:] = tail.to_bytes(8, "little")
    return b


if __name__ == "__main__":
    fusetest.main()
