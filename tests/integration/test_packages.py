#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Debian packages: `dpkg-buildpackage -us -uc -b` on a copy of the working
tree (dpkg-buildpackage writes the .debs beside the tree, so never in the
checkout), then each package's contents, and the packages unpacked with
`dpkg -x` into a scratch root: arfd and arfctl start from there (arfctl
and a program built with libarf-dev on the extracted libarf), and the
extracted arfd, started from the packaged example configuration, serves
the extracted arfctl.

dpkg-buildpackage and debhelper are build dependencies (scripts/deps.sh):
without them the test fails rather than skips."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import run  # noqa: E402

SOURCE = os.environ.get("ARF_SOURCE",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
VERSION = "0.1.0-1"
PACKAGES = ("arf-server", "arf-client", "libarf0", "libarf-dev")
# what each package must hold (paths as dpkg-deb -c prints them, less "./")
CONTENTS = {
    "arf-server": ["usr/sbin/arfd", "lib/systemd/system/arfd.service", "etc/arf/arfd.conf",
                   "usr/share/man/man8/arfd.8.gz", "usr/share/man/man5/arfd.conf.5.gz"],
    "arf-client": ["usr/bin/arf-fuse", "sbin/mount.arf", "usr/bin/arfctl", "usr/bin/arf-asm",
                   "usr/bin/arf-grep", "usr/bin/arf-find", "usr/bin/arf-du", "usr/bin/arf-sum",
                   "usr/share/man/man8/arf-fuse.8.gz", "usr/share/man/man8/mount.arf.8.gz",
                   "usr/share/man/man8/arfctl.8.gz", "usr/share/man/man1/arf-asm.1.gz",
                   "usr/share/man/man1/arf-grep.1.gz", "usr/share/man/man1/arf-find.1.gz",
                   "usr/share/man/man1/arf-du.1.gz", "usr/share/man/man1/arf-sum.1.gz"],
    "libarf0": ["usr/lib/{ma}/libarf.so.0", "usr/lib/{ma}/libarf.so.0.1.0"],
    "libarf-dev": ["usr/include/arf.h", "usr/lib/{ma}/libarf.a", "usr/lib/{ma}/libarf.so",
                   "usr/lib/{ma}/pkgconfig/arf.pc", "usr/share/man/man3/libarf.3.gz"],
}


def tree_files(src):
    """The working tree's files as git sees them (tracked or untracked, not
    ignored, still present), or None when src is not a usable git tree."""
    try:
        p = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    names = [n for n in p.stdout.decode().split("\0") if n]
    return [n for n in names if os.path.lexists(os.path.join(src, n))]


def copy_tree(src, dst):
    files = tree_files(src)
    if files is None:
        # not a git checkout (a release tarball): everything but build output
        shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", "build*", "obj-*", "__pycache__", "*.o", "*.pyc"))
        return
    for name in files:
        s, d = os.path.join(src, name), os.path.join(dst, name)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        if os.path.islink(s):
            os.symlink(os.readlink(s), d)
        else:
            shutil.copy2(s, d)


class Packages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("dpkg-buildpackage", "dh", "dpkg-deb"):
            if not shutil.which(tool):
                raise AssertionError(f"{tool} is not installed (scripts/deps.sh installs "
                                     "debhelper and dpkg-dev)")
        cls.arch = run(["dpkg", "--print-architecture"]).stdout.decode().strip()
        cls.multiarch = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.decode().strip()
        cls._tmp = tempfile.TemporaryDirectory(prefix="arf-pkg-")
        cls.tmp = cls._tmp.name
        tree = os.path.join(cls.tmp, "arf-0.1.0")
        copy_tree(SOURCE, tree)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MALLOC_", "MESON", "ARF_", "DEB_", "NINJA"))}
        env["DEB_BUILD_OPTIONS"] = "nocheck parallel=%d" % (os.cpu_count() or 1)
        log = os.path.join(cls.tmp, "build.log")
        parent = os.path.dirname(os.path.abspath(SOURCE))
        before = set(os.listdir(parent))
        t0 = time.time()
        with open(log, "wb") as f:
            p = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, env=env,
                               stdout=f, stderr=subprocess.STDOUT, timeout=1500)
        print(f"dpkg-buildpackage: {time.time() - t0:.0f} s", file=sys.stderr)
        cls.new_beside_checkout = sorted(set(os.listdir(parent)) - before)
        if p.returncode != 0:
            with open(log, "rb") as f:
                tail = f.read().decode(errors="replace")[-6000:]
            cls._tmp.cleanup()
            raise AssertionError(f"dpkg-buildpackage failed ({p.returncode}):\n{tail}")
        cls.debs = {pkg: os.path.join(cls.tmp, f"{pkg}_{VERSION}_{cls.arch}.deb")
                    for pkg in PACKAGES}
        # the scratch root: every package unpacked, as dpkg would lay them out
        cls.root = os.path.join(cls.tmp, "root")
        for pkg, deb in cls.debs.items():
            if os.path.exists(deb):
                run(["dpkg", "-x", deb, cls.root])

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def at(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def lib_env(self):
        return dict(os.environ, LD_LIBRARY_PATH=self.at(f"/usr/lib/{self.multiarch}"))

    def field(self, pkg, name):
        return run(["dpkg-deb", "-f", self.debs[pkg], name]).stdout.decode().strip()

    def test_debs_built(self):
        for pkg, deb in self.debs.items():
            self.assertTrue(os.path.isfile(deb), f"{os.path.basename(deb)} was not built")
            self.assertEqual(self.field(pkg, "Package"), pkg)
            self.assertEqual(self.field(pkg, "Version"), VERSION)
            self.assertEqual(self.field(pkg, "Source"), "arf")
            self.assertEqual(self.field(pkg, "Maintainer"), "ARF developers <arf@localhost>")
        # the build wrote nothing beside the checkout
        self.assertEqual([f for f in self.new_beside_checkout
                          if f.endswith((".deb", ".changes", ".buildinfo"))], [])

    def test_contents(self):
        for pkg, want in CONTENTS.items():
            listing = run(["dpkg-deb", "-c", self.debs[pkg]]).stdout.decode()
            paths = set()
            for line in listing.splitlines():
                name = line.split(None, 5)[5].split(" -> ")[0]
                paths.add(name[2:] if name.startswith("./") else name)
            for path in want:
                path = path.format(ma=self.multiarch)
                self.assertIn(path, paths, f"{pkg} lacks {path}")
        # mount(8) looks for helpers in /sbin only
        listing = run(["dpkg-deb", "-c", self.debs["arf-client"]]).stdout.decode()
        self.assertRegex(listing, r"(?m)^-rwxr-xr-x .* \./sbin/mount\.arf$")

    def test_dependencies(self):
        client = self.field("arf-client", "Depends")
        self.assertRegex(client, r"(^|, )fuse3($|,| )")
        self.assertIn("libfuse3", client)
        self.assertIn(f"libarf0 (= {VERSION})", self.field("libarf-dev", "Depends"))
        self.assertIn("libxxhash-dev", self.field("libarf-dev", "Depends"))
        self.assertEqual(self.field("libarf0", "Section"), "libs")
        # the example configuration is a conffile
        conffiles = run(["dpkg-deb", "--info", self.debs["arf-server"], "conffiles"],
                        check=False).stdout.decode()
        self.assertIn("/etc/arf/arfd.conf", conffiles)
        # dh_installsystemd saw the unit: the package enables arfd.service
        postinst = run(["dpkg-deb", "--info", self.debs["arf-server"], "postinst"],
                       check=False).stdout.decode()
        self.assertIn("deb-systemd-helper", postinst)
        self.assertIn("arfd.service", postinst)

    def test_programs_run_from_the_scratch_root(self):
        p = run([self.at("/usr/sbin/arfd"), "--version"])
        self.assertIn(b"0.1.0", p.stdout + p.stderr)
        p = subprocess.run([self.at("/usr/bin/arfctl"), "--help"], env=self.lib_env(),
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"Usage: arfctl", p.stdout)
        p = run([self.at("/usr/bin/arf-fuse"), "--version"])
        self.assertIn(b"arf-fuse 0.1.0", p.stdout)
        p = run([self.at("/usr/bin/arf-asm"), "--version"])
        self.assertIn(b"0.1.0", p.stdout)
        # mount.arf -f checks everything and mounts nothing
        p = run([self.at("/sbin/mount.arf"), "-fv", "server:/x", "/mnt"])
        self.assertIn(b"arf-fuse arf://server/x /mnt -o fsname=server:/x\n", p.stderr)
        # from /sbin, it runs the arf-fuse that the package puts in /usr/bin
        with open(self.at("/sbin/mount.arf"), "rb") as f:
            self.assertIn(b"/usr/bin/arf-fuse\0", f.read())

    def test_served_from_the_example_configuration(self):
        conf = self.at("/etc/arf/arfd.conf")
        run([self.at("/usr/sbin/arfd"), "-c", conf, "--check-config"])
        # the harness's arfd, but the package's program and example file
        # (its sync setting included); paths and port are the harness's
        d = harness.Arfd(workdir=tempfile.mkdtemp(prefix="arf-pkgd-", dir=self.tmp),
                         bin=self.at("/usr/sbin/arfd"), config=conf, sync=None, rdma=False)
        self.addCleanup(d.stop)
        d.start()
        port = d.port
        url = f"arf://127.0.0.1:{int(port)}"
        arfctl = self.at("/usr/bin/arfctl")
        for args in (["ls", url + "/"], ["stat", url + "/"], ["status", url + "/"]):
            p = subprocess.run([arfctl] + args, env=self.lib_env(), capture_output=True,
                               timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
        # the example squashes root: root on this client is nobody there
        p = subprocess.run([arfctl, "mkdir", url + "/pkg"], env=self.lib_env(),
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"Permission denied", p.stderr)
        self.assertEqual(d.stop(), 0, d.log())

    def test_build_with_libarf_dev(self):
        cc = shutil.which("cc")
        if not cc:
            self.skipTest("no C compiler")
        src = os.path.join(self.tmp, "prog.c")
        with open(src, "w") as f:
            f.write("#include <arf.h>\n#include <stdio.h>\n"
                    "int main(void) {\n"
                    "  arf_client *c; char err[256];\n"
                    "  int rc = arf_connect(\"arf://[::1\", NULL, &c, err, sizeof(err));\n"
                    "  printf(\"%d %s\\n\", rc, c == NULL ? \"null\" : \"set\");\n"
                    "  return 0;\n}\n")
        pc_dir = self.at(f"/usr/lib/{self.multiarch}/pkgconfig")
        env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=self.root, PKG_CONFIG_PATH=pc_dir)
        p = subprocess.run(["pkg-config", "--cflags", "--libs", "arf"], env=env,
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        exe = os.path.join(self.tmp, "prog")
        run([cc, "-Wall", "-Werror", "-o", exe, src] + p.stdout.decode().split())
        p = subprocess.run([exe], env=self.lib_env(), capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"-22 null\n")
        # and statically, from libarf.a
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "--static", "arf"], env=env,
                               capture_output=True, timeout=30, check=True).stdout.decode()
        libdir = self.at(f"/usr/lib/{self.multiarch}")
        static = [f for f in flags.split() if f != "-larf"]
        run([cc, "-o", exe + "-static", src, os.path.join(libdir, "libarf.a")] + static)
        p = subprocess.run([exe + "-static"], capture_output=True, timeout=30)
        self.assertEqual(p.stdout, b"-22 null\n")


if __name__ == "__main__":
    harness.main()
