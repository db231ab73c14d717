#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mount points (issue 18, point 3; AFS's `fs mkmount`): a directory entry
that names a volume, which libarf, arfctl and arf-fuse cross by connecting
to the volume and going on at its root.

Checked here, with one arfd serving three volumes (root, proj, home):
`arfctl vol mkmount|lsmount|rmmount` and their refusals; arfctl's paths
crossing one and two mount points over tcp and shm, files landing in the
volume the mount point names, ".." at a volume's root leading back to the
mount point's directory; a mount point of no volume failing with ENODEV;
on a FUSE mount: the mount point is a directory in listings (d_type) and
stat, writes land in the volume, st_ino is unique across volumes, rename
and link across volumes give EXDEV (mv falls back to a copy), statvfs on
a mount point reports its volume, and arf-grep on a file behind a mount
point reaches that volume (ARF_IOC_CRED's URL is the volume's)."""
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402,F401
from harness import Arfd, arfctl  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import arfproc  # noqa: E402

CONFIG = ("# tests/integration/test_mountpoints.py\n"
          "[export]\n"
          "root_squash = false\n"
          "[volume proj]\n"
          "inodes = 4096\n"
          "data_blocks = 8192\n"
          "[volume home]\n"
          "inodes = 2048\n")


def vol_number(name):
    """A volume's number in the top 16 bits of st_ino (arfclient/volumes.c):
    its name's 16-bit FNV-1a hash, the same in every process."""
    h = 2166136261
    for b in name.encode():
        h = ((h ^ b) * 16777619) & 0xffffffff
    return ((h ^ (h >> 16)) & 0xffff) or 1


def out_of(*args, check=True):
    p = arfctl(*args, check=check)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


class MountPoints(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="arf-mp-")
        self.addCleanup(self.tmp.cleanup)
        conf = os.path.join(self.tmp.name, "arfd.conf")
        with open(conf, "w") as f:
            f.write(CONFIG)
        self.arfd = Arfd(workdir=os.path.join(self.tmp.name, "w"), config=conf)
        self.addCleanup(self.arfd.cleanup)
        self.arfd.start()
        self.url = lambda path, t="tcp": self.arfd.url(path, t)
        # /vols/proj -> proj, and inside proj, /home -> home
        arfctl("mkdir", self.url("/vols"))
        self.assertEqual(out_of("vol", "mkmount", self.url("/vols/proj"), "proj")[1],
                         "'proj' is a mount point for volume 'proj'\n")
        arfctl("vol", "mkmount", self.url("/vols/proj/home"), "home")

    def vurl(self, path, vol, t="tcp"):
        base = self.url(path, t)
        return base + ("&" if "?" in base else "?") + "volume=" + vol

    def put(self, url, data):
        src = os.path.join(self.tmp.name, "src")
        with open(src, "wb") as f:
            f.write(data)
        arfctl("put", src, url)

    def test_arfctl_crosses(self):
        for i, t in enumerate(("tcp", "shm")):
            self.put(self.url("/vols/proj/p%d" % i, t), b"in proj\n")
            self.put(self.url("/vols/proj/home/h%d" % i, t), b"in home\n")
            # each landed in the volume its mount point names
            self.assertEqual(out_of("cat", self.vurl("/p%d" % i, "proj"))[1], "in proj\n")
            self.assertEqual(out_of("cat", self.vurl("/h%d" % i, "home", t))[1], "in home\n")
            self.assertEqual(out_of("cat", self.url("/vols/proj/../proj/home/h%d" % i, t))[1],
                             "in home\n")
        self.assertEqual(sorted(out_of("ls", self.url("/vols/proj"))[1].split()),
                         ["home", "p0", "p1"])
        self.assertEqual(sorted(out_of("ls", self.vurl("/", "home", "shm"))[1].split()),
                         ["h0", "h1"])
        # ".." at a volume's root is the mount point's directory
        self.assertEqual(out_of("ls", self.url("/vols/proj/home/.."))[1].split(),
                         out_of("ls", self.url("/vols/proj"))[1].split())
        self.assertIn("vols", out_of("ls", self.url("/vols/proj/home/../../.."))[1].split())
        # the mount point is the volume's root directory, never the link
        st = out_of("stat", self.url("/vols/proj"))[1]
        self.assertIn("Type: directory", st)
        self.assertIn("Inode: %d\t" % ((vol_number("proj") << 48) + 1), st)
        self.assertEqual(out_of("vol", "lsmount", self.url("/vols/proj/home"))[1],
                         "'home' is a mount point for volume '#home.'\n")
        # across volumes: EXDEV, nothing moved
        rc, _, err = out_of("mv", self.url("/vols/proj/p0"), self.url("/p0"), check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("cross-device", err.lower())
        self.assertEqual(out_of("cat", self.vurl("/p0", "proj"))[1], "in proj\n")

    def test_tools_by_url(self):
        """arf-du, arf-find, arf-sum and arf-grep given a URL behind a
        mount point run their programs on that volume's server."""
        self.put(self.url("/vols/proj/home/data"), b"x" * 10000 + b"needle\n")
        tool = lambda name, *a: subprocess.run(  # noqa: E731
            [os.path.join(harness.BUILD, "tools", name, name)] + list(a),
            capture_output=True, timeout=60)
        home = self.url("/vols/proj/home")
        p = tool("arf-du", "-s", "-b", home)
        self.assertEqual(p.returncode, 0, p.stderr)
        direct = tool("arf-du", "-s", "-b", self.vurl("/", "home"))
        self.assertEqual(p.stdout.split()[0], direct.stdout.split()[0])
        self.assertGreaterEqual(int(p.stdout.split()[0]), 10007)
        p = tool("arf-find", home, "-type", "f")
        self.assertEqual((p.returncode, p.stdout.split()), (0, [(home + "/data").encode()]),
                         p.stderr)
        p = tool("arf-sum", home + "/data")
        self.assertEqual(p.returncode, 0, p.stderr)
        import hashlib
        self.assertEqual(p.stdout.split()[0].decode(),
                         hashlib.sha256(b"x" * 10000 + b"needle\n").hexdigest())
        p = tool("arf-grep", "-c", "needle", home + "/data")
        self.assertEqual((p.returncode, p.stdout), (0, b"1\n"), p.stderr)

    def test_plain_link_of_another_mode(self):
        """A link root chmodded (not a "#VOLUME." target) is followed as a
        link, not taken for a mount point."""
        arfctl("mkdir", self.url("/real"))
        self.put(self.url("/real/f"), b"real\n")
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        m = arfproc.Mount(self.arfd.url("/"), workdir=self.tmp.name)
        self.addCleanup(m.stop)
        m.start()
        os.symlink("real", m.p("lnk"))
        self.assertEqual(m.stop(), 0)
        arfctl("chmod", "0644", self.url("/lnk"))
        self.assertEqual(out_of("cat", self.url("/lnk/f"))[1], "real\n")
        self.assertIn("Type: symlink", out_of("stat", self.url("/lnk"))[1])
        rc, _, err = out_of("vol", "lsmount", self.url("/lnk"), check=False)
        self.assertEqual(rc, 1)

    def test_refusals_and_dangling(self):
        rc, _, err = out_of("vol", "mkmount", self.url("/bad"), "no/such", check=False)
        self.assertEqual(rc, 2)
        self.assertIn("not a volume's name", err)
        rc, _, err = out_of("vol", "mkmount", self.url("/vols/proj"), "home", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("exists", err.lower())
        arfctl("mkdir", self.url("/plain"))
        rc, _, err = out_of("vol", "lsmount", self.url("/plain"), check=False)
        self.assertEqual((rc, err), (1, "'plain' is not a mount point.\n"))
        rc, _, err = out_of("vol", "rmmount", self.url("/plain"), check=False)
        self.assertEqual(rc, 1)
        self.assertIn("not a mount point", err)
        # a mount point of no volume: ENODEV where it is crossed
        arfctl("vol", "mkmount", self.url("/nowhere"), "nosuchvolume")
        rc, _, err = out_of("ls", self.url("/nowhere"), check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("no such device", err.lower())
        # rmmount removes the link, never the volume
        self.put(self.url("/vols/proj/kept"), b"kept\n")
        arfctl("vol", "rmmount", self.url("/vols/proj"))
        self.assertNotIn("proj", out_of("ls", self.url("/vols"))[1].split())
        self.assertEqual(out_of("cat", self.vurl("/kept", "proj"))[1], "kept\n")

    def test_two_mounts_one_numbering(self):
        """Two mounts that cross into the volumes in opposite orders see one
        st_ino for one file, as do arfctl and arf-find run by URL: a
        volume's number is its name's hash, not the order a process met it
        in."""
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        arfctl("vol", "mkmount", self.url("/h"), "home")
        self.put(self.url("/vols/proj/home/g"), b"g\n")
        self.put(self.url("/vols/proj/p"), b"p\n")
        mounts = []
        for _ in range(2):
            m = arfproc.Mount(self.arfd.url("/"), workdir=self.tmp.name)
            self.addCleanup(m.stop)
            m.start()
            mounts.append(m)
        a = [os.lstat(mounts[0].p(*p)).st_ino for p in (("vols", "proj", "p"), ("h", "g"))]
        b = [os.lstat(mounts[1].p(*p)).st_ino for p in (("h", "g"), ("vols", "proj", "p"))]
        self.assertEqual(a, b[::-1])
        self.assertEqual([x >> 48 for x in a], [vol_number("proj"), vol_number("home")])
        self.assertEqual(os.lstat(mounts[1].p("vols", "proj", "home", "g")).st_ino, a[1])
        st = out_of("stat", self.url("/h/g"))[1]
        self.assertIn("Inode: %d\t" % a[1], st)
        for m in mounts:
            self.assertEqual(m.stop(), 0)

    def test_fuse_mount(self):
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        self.put(self.url("/top"), b"top\n")
        m = arfproc.Mount(self.arfd.url("/"), workdir=self.tmp.name)
        self.addCleanup(m.stop)
        m.start()
        proj, home = m.p("vols/proj"), m.p("vols/proj/home")
        # a directory in the listing (d_type) and to stat, not a link
        ents = {e.name: e for e in os.scandir(m.p("vols"))}
        self.assertTrue(ents["proj"].is_dir(follow_symlinks=False))
        self.assertTrue(os.path.isdir(proj) and not os.path.islink(proj))
        self.assertEqual(ents["proj"].inode(), os.lstat(proj).st_ino)
        with open(os.path.join(proj, "f"), "w") as f:
            f.write("hello from the mount\n")
        with open(os.path.join(home, "g"), "w") as f:
            f.write("home\n")
        self.assertEqual(out_of("cat", self.vurl("/f", "proj"))[1], "hello from the mount\n")
        self.assertEqual(out_of("cat", self.vurl("/g", "home"))[1], "home\n")
        # st_ino unique across volumes: each root is ino 1 in its volume
        inos = {os.lstat(p).st_ino for p in (m.path, proj, home)}
        self.assertEqual(len(inos), 3)
        self.assertTrue(os.path.samefile(os.path.join(home, ".."), proj))
        self.assertTrue(os.path.samefile(os.path.join(proj, ".."), m.p("vols")))
        # rename and link across volumes: EXDEV; mv copies instead
        with self.assertRaises(OSError) as cm:
            os.rename(os.path.join(proj, "f"), m.p("f"))
        self.assertEqual(cm.exception.errno, errno.EXDEV)
        with self.assertRaises(OSError) as cm:
            os.link(os.path.join(proj, "f"), m.p("f-link"))
        self.assertEqual(cm.exception.errno, errno.EXDEV)
        shutil.move(os.path.join(proj, "f"), m.p("moved"))
        with open(m.p("moved")) as f:
            self.assertEqual(f.read(), "hello from the mount\n")
        self.assertNotIn("f", os.listdir(proj))
        # df on a mount point: that volume's inodes
        self.assertEqual(os.statvfs(proj).f_files, 4096)
        self.assertEqual(os.statvfs(home).f_files, 2048)
        self.assertNotIn(os.statvfs(m.path).f_files, (4096, 2048))
        # a tool given a file behind a mount point reaches that volume
        grep = os.path.join(harness.BUILD, "tools", "arf-grep", "arf-grep")
        p = subprocess.run([grep, "-c", "--stats", "home", os.path.join(home, "g")],
                           capture_output=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, b"1\n"), p.stderr)
        self.assertIn(b"volume=home", p.stderr)
        # files of three volumes in one run: a connection each
        with open(os.path.join(proj, "pf"), "w") as f:
            f.write("home in proj\n")
        p = subprocess.run([grep, "-H", "home", os.path.join(home, "g"),
                            os.path.join(proj, "pf"), m.p("top")], capture_output=True,
                           timeout=60)
        self.assertEqual(p.stdout.decode().splitlines(),
                         ["%s:home" % os.path.join(home, "g"),
                          "%s:home in proj" % os.path.join(proj, "pf")], p.stderr)
        os.unlink(os.path.join(proj, "pf"))
        # find sees every file once
        names = sorted(os.path.relpath(os.path.join(d, n), m.path)
                       for d, _, files in os.walk(m.path) for n in files)
        self.assertEqual(names, ["moved", "top", "vols/proj/home/g"])
        self.assertEqual(m.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
