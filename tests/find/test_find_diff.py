#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arf-find against GNU find 4.9 on the same tree inside an arf-fuse mount.

The tree has regular files, empty files, a sparse file, symbolic links (to a
file, to a directory, dangling), hard links (in one directory and across
two), names with spaces, a newline and bytes that are not UTF-8, empty
directories, a directory of 300 entries, a chain 45 directories deep,
files of several owners, modes and ages, two directories that uid 65534
may not enter (mode 000, and 0700 owned by root) and one it may read but
not search (0444: names and types without attributes).  Each case runs both
programs with the same arguments from the mount's root and compares their
standard output (lines sorted: gnulib's fts sorts big directories by inode,
arf-find walks breadth first), exit status and standard error (lines
sorted, the program's name taken out); as root and again as uid 65534
(setpriv) on the same mount (allow_other).  Every case must have been run by
arf-find itself (its --stats line is there) except those in FALLBACK, which
must have gone to GNU find (no --stats line).  By URL (as root), a third of the cases that
start at the tree's top are compared with GNU find run as
root through the mount (arf-find's connection comes from a reserved
port: root proven), URL mapped back to the path.  test_server_side: the
ioctl answers on a directory, and a selective -name crosses a fraction of
the bytes of a bare walk.  test_small_slices: runs of 7 entries.
Times are set well away from every boundary the cases test, and TZ=UTC.
Skips, with the reason, without /dev/fuse or root."""
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fuse"))
import fusetest  # noqa: E402
from fusetest import FuseTestCase  # noqa: E402

ARF_FIND = os.path.join(fusetest.BUILD, "tools", "arf-find", "arf-find")
GNU_FIND = "/usr/bin/find"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
IOC_SIZE = 4 + 4 + 8 + 4 + 4 + 4352 + 144
ARF_IOC_CRED = (2 << 30) | (IOC_SIZE << 16) | (0xAF << 8) | 1
ENV = dict(os.environ, LC_ALL="C", TZ="UTC")
ENV.pop("ARF_FIND_MAX_ENTS", None)
HOUR, DAY = 3600, 86400


def make_tree(top, now):
    """The tree under top (which exists); returns nothing."""
    def w(rel, data=b"", mode=0o644, age=5 * HOUR, uid=0, gid=0):
        p = os.path.join(top, rel)
        with open(p, "wb") as f:
            f.write(data)
        os.chown(p, uid, gid)
        os.chmod(p, mode)
        os.utime(p, (now - age, now - age))

    def d(rel, mode=0o755, uid=0, gid=0):
        p = os.path.join(top, rel)
        os.mkdir(p)
        os.chown(p, uid, gid)
        os.chmod(p, mode)

    for sub in ("sub", "sub/deeper", "emptydir", "many", "perms", "ages", "odd", "denied000",
                "rootonly", "nobodys", "deep"):  # and r444 below
        d(sub)
    w("a.txt", b"hello\n")
    w("b.h", b"#define B 1\n" * 100)
    w("c.c", b"int c;\n" * 300)
    w("Upper.TXT", b"UP\n")
    w("empty_file")
    w("sub/x.h", b"x" * 1500)
    w("sub/y.c", b"y" * 5000)
    w("sub/deeper/z.h", b"z" * 20000)
    w("sub/deeper/.hidden", b"h")
    os.link(os.path.join(top, "a.txt"), os.path.join(top, "sub", "a_hard"))
    os.link(os.path.join(top, "b.h"), os.path.join(top, "b_hard.h"))
    os.symlink("../a.txt", os.path.join(top, "sub", "link_to_a"))
    os.symlink("nowhere/at/all", os.path.join(top, "dangling"))
    os.symlink("sub", os.path.join(top, "link_dir"))
    w("odd/name with spaces.txt", b"s\n")
    w("odd/new\nline", b"n\n")
    w(b"odd/caf\xe9".decode("utf-8", "surrogateescape"), b"latin1\n")
    w(b"odd/\xff\xfe.h".decode("utf-8", "surrogateescape"), b"ff\n")
    w("odd/it's", b"q\n")
    w("odd/star*", b"")
    for i in range(300):
        w("many/f%03d%s" % (i, ".h" if i % 7 == 0 else ".c" if i % 5 == 0 else ""),
          b"m" * (i * 13))
    for name, mode in (("p644", 0o644), ("p600", 0o600), ("p755", 0o755), ("p4755", 0o4755),
                       ("p2750", 0o2750), ("p000", 0o000), ("p777", 0o777), ("p640", 0o640)):
        w("perms/" + name, b"p", mode=mode)
    d("perms/sticky", mode=0o1777)
    for name, age in (("m30", 30 * 60), ("h2", 2 * HOUR), ("d3", 3 * DAY + 5 * HOUR),
                      ("d10", 10 * DAY + 5 * HOUR), ("d40", 40 * DAY + 5 * HOUR),
                      ("future", -2 * DAY)):
        w("ages/" + name, b"t", age=age)
    w("denied000/inside", b"secret")
    os.chmod(os.path.join(top, "denied000"), 0)
    w("rootonly/inside.h", b"secret")
    os.chmod(os.path.join(top, "rootonly"), 0o700)
    # readable, not searchable: names and types without attributes
    d("r444")
    d("r444/sub")
    w("r444/f.h", b"r")
    os.chmod(os.path.join(top, "r444"), 0o444)
    w("nobodys/mine.h", b"n", uid=65534, gid=65534)
    w("nobodys/group100", b"g", uid=65534, gid=100)
    os.chown(os.path.join(top, "nobodys"), 65534, 65534)
    # sparse: 8 MiB with one byte at the end
    p = os.path.join(top, "sparse.bin")
    with open(p, "wb") as f:
        f.truncate(8 << 20)
        f.seek((8 << 20) - 1)
        f.write(b"!")
    os.utime(p, (now - 5 * HOUR, now - 5 * HOUR))
    p = os.path.join(top, "deep")
    for i in range(45):
        p = os.path.join(p, "d%d" % i)
        os.mkdir(p)
    with open(os.path.join(p, "leaf.h"), "wb") as f:
        f.write(b"leaf\n")
    # directories last: their times too
    for dp, dn, fn in os.walk(top):
        for n in dn + fn:
            q = os.path.join(dp, n)
            if n in ("m30", "h2", "d3", "d10", "d40", "future") or n.startswith("ages"):
                continue
            os.utime(q, (now - 5 * HOUR, now - 5 * HOUR), follow_symlinks=False)
    os.utime(top, (now - 5 * HOUR, now - 5 * HOUR))


# GNU find's arguments after the starting points (and, in STARTS, with them).
def cases():
    c = []
    for pat in ("*.h", "*.c", "a*", "*", "?.txt", "[ab]*", "[!a-c]*", "*.TXT", "caf*",
                "*spaces*", "new*", "*[0-9]", "f0[0-4]?*", "*\\**", "it*", ".hidden", "d4*",
                "*e*e*", "[[:upper:]]*", "\\[*"):
        c.append(["-name", pat])
        c.append(["-iname", pat])
    for pat in ("*/sub/*", "t/deep/*/d3*", "*x.h", "t/*.h", "*/MANY/f00*", "t/odd/*"):
        c.append(["-path", pat])
        c.append(["-ipath", pat])
    for rt, pat in ((None, ".*\\.h"), (None, ".*/d[0-9]+"), (None, ".*sub.*"),
                    (None, "t/\\(a\\|b\\).*"), ("emacs", ".*/f0[0-9]+\\.c"),
                    ("emacs", ".*line"), (None, ".*new.line"),
                    ("posix-extended", ".*/(x|y)\\.[ch]"), ("posix-extended", ".*/d[0-9]{2}"),
                    ("posix-basic", ".*/d[0-9]\\{2\\}"), ("posix-basic", ".*\\.TXT")):
        pre = ["-regextype", rt] if rt else []
        c.append(pre + ["-regex", pat])
        c.append(pre + ["-iregex", pat])
    for t in ("f", "d", "l", "f,l", "d,l"):
        c.append(["-type", t])
    for s in ("0", "+0", "-1k", "+1M", "+10k", "1", "-2", "2c", "+100c", "-6c", "3k", "+1000w"):
        c.append(["-size", s])
    for t in (["-mtime", "0"], ["-mtime", "+2"], ["-mtime", "-4"], ["-mtime", "3"],
              ["-mtime", "+20"], ["-mmin", "-60"], ["-mmin", "+60"], ["-mmin", "-200"],
              ["-mtime", "-1"], ["-newer", "t/ages/d3"], ["-newer", "t/ages/h2"],
              ["-ctime", "-1"]):
        c.append(t)
    for t in (["-user", "root"], ["-user", "nobody"], ["-uid", "0"], ["-uid", "+0"],
              ["-gid", "65534"], ["-group", "nogroup"], ["-group", "root"], ["-gid", "-50"],
              ["-user", "65534"]):
        c.append(t)
    for m in ("644", "-644", "/111", "-4000", "755", "-2000", "/6000", "000", "-1000"):
        c.append(["-perm", m])
    c += [["-empty"], ["-type", "d", "-empty"], ["-type", "f", "-empty"], ["!", "-empty"]]
    c += [["-links", "2"], ["-links", "+1"], ["-links", "1"], ["-type", "f", "-links", "+1"],
          ["-inum", "+0", "-name", "a*"]]
    c += [["-maxdepth", "0"], ["-maxdepth", "1"], ["-maxdepth", "2", "-type", "d"],
          ["-mindepth", "2", "-maxdepth", "3"], ["-mindepth", "40"],
          ["-mindepth", "1", "-name", "*.h"], ["-maxdepth", "1", "-empty"],
          ["-mindepth", "46"]]
    c += [["-name", "sub", "-prune", "-o", "-print"],
          ["-name", "deep", "-prune", "-o", "-name", "*.h", "-print"],
          ["-path", "t/deep/d0/d1", "-prune", "-o", "-type", "d", "-print"],
          ["-depth", "-name", "sub", "-prune"],
          ["-name", "many", "-prune"],
          ["-type", "d", "-name", "d2*", "-prune", "-printf", "%d %p\\n"]]
    c += [["!", "-name", "*.h"], ["-name", "a.txt", "-o", "-name", "b.h"],
          ["(", "-name", "*.h", "-o", "-name", "*.c", ")", "-type", "f"],
          ["-name", "x", "-a", "-name", "y"], ["-false"], ["-true"],
          ["-name", "a.txt", "-print", ",", "-name", "b.h", "-print"],
          ["-not", "-type", "d", "-not", "-type", "f"],
          ["-name", "*.h", "-print", "-o", "-print0"],
          ["(", "-type", "l", "-o", "-empty", ")", "-printf", "%y %p\\n"],
          ["-size", "+1k", "-name", "*.c", "-o", "-size", "-1", "-name", "*.h"]]
    c += [["-print0"], ["-name", "*.h", "-print0"]]
    for f in ("%p\\n", "%f\\n", "%h\\n", "%P\\n", "%s %p\\n", "%m %M %p\\n",
              "%u %g %U %G %p\\n", "%n %p\\n", "%l|%p\\n", "%d %y %p\\n", "%t %p\\n",
              "%T@ %p\\n", "%k %p\\n", "%-10s|%5d|%p\\n", "\\t%f\\0", "%%\\n%#m %p\\n",
              "[%10f] %5m\\n", "%i %n\\n"):
        c.append(["-printf", f])
    return [["t"] + x for x in c]


STARTS = [["t/sub", "t/emptydir"], ["t/a.txt"], ["t/sub/"], ["t/sub//", "-name", "*.h"],
          ["t/link_dir"], ["t/missing", "t/sub"], ["t/denied000"], ["t/dangling"],
          ["t/sub/..", "-maxdepth", "1"], ["t/deep", "-name", "leaf.h", "-printf", "%d %P\\n"],
          ["t/rootonly", "-printf", "%f %h\\n"], ["t/odd", "-printf", "%f|%h|%P\\n"],
          ["t/sub", "-printf", "%f|%h|%P\\n"], ["t/sub/", "-printf", "%f|%h|%P\\n"],
          ["t/link_dir", "-printf", "%y %l %f\\n"], ["t/emptydir", "-empty"],
          ["t/denied000", "-empty"], ["t/many", "-newer", "t/a.txt"],
          ["t/r444"], ["t/r444", "-name", "*.h"], ["t/r444", "-type", "d"], ["t/r444", "-type", "f"],
          ["t/r444", "-printf", "%p %s\\n"], ["t/r444", "-maxdepth", "1", "-printf", "%y %f\\n"],
          ["t/r444", "-empty"], ["t/r444", "!", "-empty"],
          ["t/r444", "-name", "sub", "-prune", "-o", "-print"],
          ["t/r444", "-not", "-type", "d", "-not", "-type", "f"],
          ["t/r444", "-size", "0", "-o", "-print"], ["t/r444", "-printf", "%f %d\\n"]]

# Run by GNU find itself (arf-find hands them over whole).
FALLBACK = [["t", "-name", "*.h", "-exec", "echo", "found", "{}", ";"],
            ["t/sub", "-ls"], ["-L", "t/sub", "-name", "*.h"],
            ["t", "-name", "*.c", "-fprint", "/dev/stdout"], ["t", "-perm", "u+x"],
            ["t", "-name", "a/b"], ["t", "-user", "no-such-user-here"],
            ["t", "-name", "*.h", "-maxdepth", "1"], ["t", "-bogus"],
            ["t", "-mtime", "1.5"], ["t", "-perm", "/0"]]

PROG = re.compile(rb"^(\S*/)?(arf-find|find): ", re.M)
STATS = re.compile(rb"^arf-find: stats .*\n", re.M)


def norm(out, err):
    """Output records (each with its \\n or \\0) and error lines, sorted."""
    recs = sorted(re.findall(rb"[^\n\0]*[\n\0]|[^\n\0]+$", out))
    return b"".join(recs), b"\n".join(sorted(PROG.sub(b"find: ", err).splitlines()))


class FindDiff(FuseTestCase):
    def setUp(self):
        super().setUp()
        if not os.path.exists(ARF_FIND):
            self.skipTest("arf-find not built")
        os.chmod(self.arfd.workdir, 0o755)
        os.chmod(self.mnt.path, 0o755)
        self.top = self.mnt.p("t")
        os.mkdir(self.top)
        make_tree(self.top, time.time())

    def run_pair(self, args, user, url=None):
        pre = NOBODY if user else []
        aargs = list(args)
        if url:
            aargs = [url if a == "t" else a for a in args]
        # side by side: two processes' start-up is most of a case's time
        procs = [subprocess.Popen(cmd, cwd=self.mnt.path, env=ENV, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
                 for cmd in (pre + [GNU_FIND] + args, pre + [ARF_FIND, "--stats"] + aargs)]
        outs = [p.communicate(timeout=120) for p in procs]
        gnu = subprocess.CompletedProcess(args, procs[0].returncode, *outs[0])
        arf = subprocess.CompletedProcess(aargs, procs[1].returncode, *outs[1])
        aout, aerr = arf.stdout, arf.stderr
        shipped = b"arf-find: stats " in aerr
        aerr = STATS.sub(b"", aerr)
        if url:
            aout = aout.replace(url.encode(), b"t")
            aerr = aerr.replace(url.encode(), b"t")
        return ((norm(gnu.stdout, gnu.stderr), gnu.returncode),
                (norm(aout, aerr), arf.returncode), shipped)

    def check(self, all_cases, user, fallback=False, url=None):
        bad, n = [], 0
        t0 = time.time()
        for args in all_cases:
            want, got, shipped = self.run_pair(args, user, url)
            n += 1
            if want != got:
                bad.append("%r as %s: gnu rc=%d out=%r err=%r\n   arf rc=%d out=%r err=%r" % (
                    args, user or "root", want[1], want[0][0][:300], want[0][1][:300],
                    got[1], got[0][0][:300], got[0][1][:300]))
            elif shipped == fallback:
                bad.append("%r as %s: %s" % (args, user or "root",
                                             "ran on the server, expected GNU find" if fallback
                                             else "not run on the server"))
        print("%s%s%s: %d cases, %d identical (%.1f s)" % (
            "fallback " if fallback else "", "url " if url else "", user or "root", n,
            n - len(bad), time.time() - t0))
        return bad

    def test_root_and_nobody(self):
        bad = []
        for user in (None, "nobody"):
            bad += self.check(cases() + STARTS, user)
            bad += self.check(FALLBACK, user, fallback=True)
        self.assertFalse(bad, "\n".join(bad[:15]) + "\n%d failed" % len(bad))

    def test_url(self):
        """By URL as root: arf-find's connection comes from a reserved port,
        which proves root on this host, so it is compared with GNU find as
        root through the mount.  Cases whose answer depends on the path's
        text (-path, -regex, %h) are left out: the URL is not the path."""
        url = self.arfd.url("/t")
        sel = [a for a in cases() if a[0] == "t" and not any(
            x in ("-path", "-ipath", "-regex", "-iregex") or "%h" in x for x in a)][::3]
        bad = self.check(sel, None, url=url)
        self.assertFalse(bad, "\n".join(bad[:15]))

    def test_server_side(self):
        self.ioctl_on_directory()
        self.filtered_beside_the_data()

    def ioctl_on_directory(self):
        """ARF_IOC_CRED answers on a directory's descriptor (FUSE passes
        directory ioctls with FUSE_IOCTL_DIR), as root and as uid 65534:
        the directory's own handle comes back."""
        code = (
            "import fcntl, os, struct, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
            "buf = bytearray(%d)\n"
            "fcntl.ioctl(fd, %d, buf, True)\n"
            "ver, ttl, ino, gen = struct.unpack_from('<IIQI', buf)\n"
            "print(ver, ino)\n" % (IOC_SIZE, ARF_IOC_CRED))
        want = os.stat(self.mnt.p("t", "sub")).st_ino
        for pre in ([], NOBODY):
            p = subprocess.run(pre + ["/usr/bin/python3", "-c", code, self.mnt.p("t", "sub")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            ver, ino = map(int, p.stdout.split())
            self.assertEqual((ver, ino), (1, want))

    def filtered_beside_the_data(self):
        """A selective -name sends back a fraction of what a bare walk does:
        the test ran on the server."""
        def received(args):
            p = subprocess.run([ARF_FIND, "--stats"] + args, cwd=self.mnt.path, env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            return int(re.search(rb"bytes_received (\d+)", p.stderr).group(1)), p.stdout
        everything, out = received(["t/many"])
        some, out2 = received(["t/many", "-name", "f00*.h"])
        self.assertEqual(out.count(b"\n"), 301)
        self.assertEqual(out2.count(b"\n"), 2)
        print("t/many: %d bytes received for all 301 entries, %d for -name 'f00*.h'" % (
            everything, some))
        self.assertLess(some * 4, everything)

    def test_utf8_locale(self):
        """In C.UTF-8 (curly quotes in messages, multibyte matching) the
        name cases, and some printf ones, as uid 65534; plain ASCII
        patterns are still decided on the server."""
        ENV["LC_ALL"] = "C.UTF-8"
        try:
            sel = [a for a in cases() if a[1] in ("-name", "-iname")] + [
                ["t", "-printf", "%f %u\\n"], ["t/odd"], ["t/denied000", "-empty"]]
            bad = self.check(sel, "nobody")
        finally:
            ENV["LC_ALL"] = "C"
        self.assertFalse(bad, "\n".join(bad[:15]))

    def test_small_slices(self):
        """Runs of a handful of entries: the cursor resumes every directory."""
        old = ENV.get("ARF_FIND_MAX_ENTS")
        ENV["ARF_FIND_MAX_ENTS"] = "7"
        try:
            bad = self.check([["t"], ["t", "-name", "*.h", "-printf", "%d %p\\n"],
                              ["t", "-mindepth", "1", "-maxdepth", "2", "-empty"]], None)
        finally:
            ENV.pop("ARF_FIND_MAX_ENTS", None)
            if old is not None:
                ENV["ARF_FIND_MAX_ENTS"] = old
        self.assertFalse(bad, "\n".join(bad))


if __name__ == "__main__":
    fusetest.main()
