#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The active tools at volumes' mount points (issue 17, point 2; issue 18,
point 3; docs/volumes.md).  Through an ARF mount a mount point is the
directory it leads to, and GNU find, du, the checksum tools and grep -r
walk into it; arf-find, arf-du, arf-sum and arf-grep cross it too, each
volume walked by a program on its own server (their --stats lines name
the volumes), and print the inode numbers the mount shows (a volume's
number in st_ino's top 16 bits).

The tree: t/ in the root volume, t/vols/proj a mount point of volume
proj, t/vols/proj/home one of volume home (inside proj), and t/nowhere one
of no volume (ENODEV where it is crossed), with files, a symbolic link, a
hard link, an empty directory and a directory uid 65534 may not enter.
Each case runs the GNU tool and the ARF one on the mount, as root and as
uid 65534 (setpriv), and compares stdout (lines sorted), stderr (the
program's name aside) and the exit status; arf-find and arf-du also by
URL (where libarf crosses the mount points in the tool's own process: a
volume's number is its name's hash, so the inode numbers are the mount's).
Skips, with the reason, without /dev/fuse or root."""
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fuse"))
import fusetest  # noqa: E402
from fusetest import FuseTestCase  # noqa: E402
import harness  # noqa: E402

TOOL = lambda name: os.path.join(fusetest.BUILD, "tools", name, name)  # noqa: E731
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
ENV = {"LC_ALL": "C", "TZ": "UTC", "PATH": "/usr/bin:/bin"}
for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if k in os.environ:
        ENV[k] = os.environ[k]
PROG = re.compile(rb"^(\S*/)?(arf-)?(find|du|sha256sum|sum|grep): ", re.M)
STATS = re.compile(rb"^arf-(find|du|sum|grep): stats (\S+).*\n", re.M)


def norm(out, err):
    recs = sorted(re.findall(rb"[^\n\0]*[\n\0]|[^\n\0]+$", out))
    return b"".join(recs), b"\n".join(sorted(PROG.sub(b"x: ", err).splitlines()))


class ToolsAtMountPoints(FuseTestCase):
    def setUp(self):
        super().setUp()
        for t in ("arf-find", "arf-du", "arf-sum", "arf-grep"):
            if not os.path.exists(TOOL(t)):
                self.skipTest(t + " not built")
        os.chmod(self.arfd.workdir, 0o755)
        os.chmod(self.mnt.path, 0o755)
        for vol in ("proj", "home"):
            harness.arfctl("--control", self.arfd.control, "vol", "create", vol)
        # made by URL: a directory the mount made itself answers a name it
        # did not make with ENOENT (fuse/names.c)
        url = self.arfd.url
        harness.arfctl("mkdir", url("/t"))
        harness.arfctl("mkdir", url("/t/vols"))
        harness.arfctl("vol", "mkmount", url("/t/vols/proj"), "proj")
        harness.arfctl("vol", "mkmount", url("/t/nowhere"), "nosuchvolume")
        harness.arfctl("vol", "mkmount", url("/t/vols/proj/home"), "home")
        top = self.mnt.p("t")
        for rel, data in (("a.txt", b"a needle\n"), ("vols/proj/p.h", b"p" * 3000 + b"\nneedle\n"),
                          ("vols/proj/home/g.h", b"g needle\n"), ("vols/proj/home/g.c", b"")):
            os.makedirs(os.path.dirname(os.path.join(top, rel)), exist_ok=True)
            with open(os.path.join(top, rel), "wb") as f:
                f.write(data)
        for rel in ("sub", "vols/proj/pd", "vols/proj/pd/deeper", "vols/proj/home/empty"):
            os.mkdir(os.path.join(top, rel))
        with open(os.path.join(top, "vols/proj/pd/q.c"), "wb") as f:
            f.write(b"q" * 70000 + b"\nneedle\n")
        os.symlink("../p.h", os.path.join(top, "vols/proj/pd/link"))
        os.link(os.path.join(top, "vols/proj/p.h"), os.path.join(top, "vols/proj/pd/hard"))
        os.mkdir(os.path.join(top, "vols/proj/closed"), 0o700)
        with open(os.path.join(top, "vols/proj/closed/secret"), "wb") as f:
            f.write(b"s needle\n")

    def pair(self, gnu, arf, pre=(), url=None):
        """(GNU's, ARF's) normalised output and status, and the URLs of
        ARF's --stats lines."""
        procs = [subprocess.Popen(list(pre) + cmd, cwd=self.mnt.path, env=ENV,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for cmd in (gnu, arf)]
        (gout, gerr), (aout, aerr) = [p.communicate(timeout=120) for p in procs]
        stats = [m[1] for m in STATS.findall(aerr)]
        aerr = STATS.sub(b"", aerr)
        if url:
            aout, aerr = aout.replace(url.encode(), b"t"), aerr.replace(url.encode(), b"t")
        return ((norm(gout, gerr), procs[0].returncode),
                (norm(aout, aerr), procs[1].returncode), stats)

    def check(self, tool, gnu_tool, cases, by_url=(), stats=True):
        """Each case by both tools, as root and uid 65534 (and by_url's by
        URL); stats: each ARF run must have run on a server (a --stats
        line).  The volumes the --stats lines name."""
        bad, vols, need = [], set(), stats
        for pre in ([], NOBODY):
            for args in cases:
                want, got, stats = self.pair([gnu_tool] + args, [TOOL(tool), "--stats"] + args,
                                             pre)
                if want != got or (need and not stats):
                    bad.append("%s %r as %s:\n  gnu %r\n  arf %r stats %r" % (
                        tool, args, "nobody" if pre else "root", want, got, stats))
                vols.update(re.findall(rb"volume=(\w+)", b" ".join(stats)))
        url = self.arfd.url("/t")
        for args in by_url:
            uargs = [url if a == "t" else a for a in args]
            want, got, stats = self.pair([gnu_tool] + args, [TOOL(tool), "--stats"] + uargs,
                                         url=url)
            if want != got or len(stats) < 3:
                bad.append("%s %r by URL:\n  gnu %r\n  arf %r stats %r" % (
                    tool, args, want, got, stats))
        self.assertFalse(bad, "\n".join(bad))
        return vols

    def test_find(self):
        home_g = os.lstat(self.mnt.p("t", "vols", "proj", "home", "g.h")).st_ino
        self.assertGreater(home_g, 1 << 48)  # a volume's number in the top bits
        cases = [["t"], ["t", "-type", "d"], ["t", "-name", "*.h"], ["t", "-maxdepth", "2"],
                 ["t", "-maxdepth", "3", "-printf", "%d %y %p\\n"],
                 ["t", "-mindepth", "3", "-printf", "%d %P %h\\n"],
                 ["t", "-printf", "%i %n %y %m %s %k %u %p\\n"], ["t", "-empty"],
                 ["t", "-inum", str(home_g)], ["t", "-inum", "+%d" % (1 << 48)],
                 ["t", "-name", "proj", "-prune", "-o", "-print"],
                 ["t", "-name", "home", "-printf", "%y %l|%p\\n"],
                 ["t", "-type", "l", "-printf", "%l %p\\n"], ["t", "-links", "+1"],
                 ["t", "-size", "+1k"], ["t/vols/proj"], ["t/vols/proj/", "-printf", "%i %P\\n"],
                 ["t/vols/proj/home", "-printf", "%i %p\\n"], ["t/vols", "-maxdepth", "1"],
                 ["t/vols/proj/pd", "-newer", "t/a.txt"], ["t", "-type", "d", "-empty"]]
        # by URL libarf crosses the mount points, in a process of its own:
        # volume numbers are the volume name's hash, the same in every
        # process, so %i is the mount's too
        by_url = [["t"], ["t", "-type", "f", "-printf", "%s %P\\n"], ["t", "-name", "*.h"],
                  ["t", "-printf", "%i %P\\n"], ["t", "-inum", str(home_g)]]
        self.assertEqual(self.check("arf-find", "/usr/bin/find", cases, by_url),
                         {b"proj", b"home"})

    def test_du(self):
        cases = [["t"], ["-s", "t"], ["-a", "t"], ["-ab", "t"], ["--apparent-size", "-s", "t"],
                 ["-d", "1", "t"], ["--inodes", "t"], ["-c", "t/vols", "t/vols/proj/home"],
                 ["-s", "t/vols/proj"], ["-a", "t/vols/proj/home"], ["-l", "-s", "t"],
                 ["-sh", "t/vols/proj", "t/sub"]]
        by_url = [["-sb", "t"], ["-ab", "t"], ["--inodes", "-s", "t"]]
        self.assertEqual(self.check("arf-du", "/usr/bin/du", cases, by_url),
                         {b"proj", b"home"})

    def test_sum_and_grep(self):
        files = ["t/a.txt", "t/vols/proj/p.h", "t/vols/proj/home/g.h", "t/vols/proj/pd/q.c",
                 "t/vols/proj/closed/secret"]
        vols = self.check("arf-sum", "/usr/bin/sha256sum", [files])
        self.assertEqual(vols, {b"proj", b"home"})
        vols = self.check("arf-grep", "/usr/bin/grep",
                          [["-r", "needle", "t"], ["-rc", "needle", "t/vols"],
                           ["-rl", "needle", "t/vols/proj/home", "t/a.txt"]])
        self.assertEqual(vols, {b"proj", b"home"})

    def test_loops_and_closed_volumes(self):
        """A mount point leading back into a volume of its own path (a loop,
        which AFS allows too), and a volume whose root uid 65534 may not
        open.  Through the mount the kernel refuses the loop (EIO) and the
        tools agree with GNU's; by URL each tool stops at the loop with
        ELOOP instead of walking it for ever."""
        url = self.arfd.url
        harness.arfctl("vol", "mkmount", url("/t/vols/proj/home/back"), "root")
        harness.arfctl("--control", self.arfd.control, "vol", "create", "priv")
        harness.arfctl("vol", "mkmount", url("/t/priv"), "priv")
        with open(self.mnt.p("t", "priv", "s.txt"), "w") as f:
            f.write("needle\n")
        os.chmod(self.mnt.p("t", "priv"), 0o700)
        # a mount point in a directory uid 65534 may read but not search
        harness.arfctl("mkdir", url("/t/ro"))
        harness.arfctl("vol", "mkmount", url("/t/ro/mp"), "proj")
        os.chmod(self.mnt.p("t", "ro"), 0o744)
        self.check("arf-find", "/usr/bin/find", [["t"], ["t/priv"], ["t", "-type", "d"],
                                                 ["t/priv", "-printf", "%i %p\\n"],
                                                 ["t/ro"], ["t/ro", "-type", "l"],
                                                 ["t/ro", "-printf", "%y %p\\n"]])
        self.check("arf-du", "/usr/bin/du", [["t"], ["-a", "t"], ["--inodes", "-s", "t"]])
        # (uid 65534 may not open it: du walks it through the mount)
        self.check("arf-du", "/usr/bin/du", [["t/priv"]], stats=False)
        self.check("arf-grep", "/usr/bin/grep", [["-r", "needle", "t"]])
        u = self.arfd.url("/t")
        for cmd in (["arf-find", u], ["arf-du", u], ["arf-grep", "-r", "needle", u]):
            p = subprocess.run([TOOL(cmd[0])] + cmd[1:], env=ENV, capture_output=True,
                               timeout=60)
            self.assertEqual(p.returncode, 2 if cmd[0] == "arf-grep" else 1, p.stderr)
            self.assertIn(b"/vols/proj/home/back", p.stderr)
            self.assertIn(b"Too many levels of symbolic links", p.stderr)
            self.assertLess(len(p.stdout), 4096, cmd)


if __name__ == "__main__":
    fusetest.main()
