#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Deployment: systemd's notify protocol for real (arfd given a
NOTIFY_SOCKET the test listens on), SIGHUP reload, install into a scratch
DESTDIR, and `systemd-analyze verify --root` on the installed unit."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Arfd, arfctl, arfctl_json, run  # noqa: E402


class Notify(unittest.TestCase):
    def test_ready_reload_stopping(self):
        with tempfile.TemporaryDirectory(prefix="arf-it-") as tmp:
            path = os.path.join(tmp, "notify.sock")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(path)
            sock.settimeout(30)
            self.addCleanup(sock.close)
            conf = os.path.join(tmp, "arfd.conf")
            with open(conf, "w") as f:
                f.write("[export]\nroot_squash = false\nread_only = false\n")
            # the harness's arfd, reading this file and telling the socket
            d = Arfd(workdir=tmp, config=conf, env=dict(os.environ, NOTIFY_SOCKET=path))
            self.addCleanup(d.stop)
            d.start()
            msg = sock.recv(4096).decode()
            self.assertIn("READY=1", msg)
            self.assertIn(f"MAINPID={d.pid}", msg)
            arfctl("mkdir", d.url("/before"))
            # reload: the export becomes read-only without a restart
            with open(conf, "w") as f:
                f.write("[export]\nroot_squash = false\nread_only = true\n")
            d.proc.send_signal(signal.SIGHUP)
            self.assertIn("RELOADING=1", sock.recv(4096).decode())
            self.assertIn("READY=1", sock.recv(4096).decode())
            p = arfctl("mkdir", d.url("/after"), check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"Read-only file system", p.stderr)
            arfctl("stat", d.url("/before"))
            self.assertTrue(arfctl_json("status", d.url("/"))["server"]["export"]["read_only"])
            # a bad file on reload keeps the running configuration: the
            # export stays read-only (a reload that fell back to the
            # defaults would make it writable again)
            with open(conf, "w") as f:
                f.write("[export]\nroot_squash = false\nread_only = perhaps\n")
            d.proc.send_signal(signal.SIGHUP)
            self.assertIn("RELOADING=1", sock.recv(4096).decode())
            self.assertIn("READY=1", sock.recv(4096).decode())
            p = arfctl("mkdir", d.url("/after-bad-reload"), check=False)
            self.assertEqual(p.returncode, 1, "a bad reload made the export writable")
            self.assertIn(b"Read-only file system", p.stderr)
            self.assertTrue(arfctl_json("status", d.url("/"))["server"]["export"]["read_only"])
            arfctl("stat", d.url("/before"))
            d.proc.send_signal(signal.SIGTERM)
            self.assertIn("STOPPING=1", sock.recv(4096).decode())
            self.assertEqual(d.stop(), 0)
            self.assertIn(f"reload: {conf}:3: 'read_only' must be true or false, not 'perhaps'",
                          d.log())


class Install(unittest.TestCase):
    """`meson install --destdir` puts every file in its FHS place, relative
    to the configured prefix and directories (read back from the build), and
    what it installs is usable: the unit verifies, the header and arf.pc
    build a program against the installed library."""

    MAN_PAGES = ("man1/arf-asm.1", "man1/arf-grep.1", "man1/arf-find.1", "man1/arf-du.1",
                 "man1/arf-sum.1", "man3/libarf.3", "man5/arfd.conf.5", "man8/arfd.8",
                 "man8/arfctl.8", "man8/arf-fuse.8", "man8/mount.arf.8")

    @classmethod
    def setUpClass(cls):
        cls.build = harness.BUILD
        p = run(["meson", "introspect", "--buildoptions", cls.build], timeout=120)
        opts = {o["name"]: o["value"] for o in json.loads(p.stdout)}
        prefix = opts["prefix"]
        # a directory option is relative to the prefix, or absolute (e.g.
        # sysconfdir /etc when the prefix is /usr)
        cls.dirs = {k: os.path.join(prefix, opts[k]) for k in
                    ("bindir", "sbindir", "libdir", "includedir", "mandir", "sysconfdir")}
        cls.prefix = prefix
        # a sanitized libarf needs its runtime first in the program that loads it
        san = opts.get("b_sanitize", "none")
        cls.san_flags = [] if san in ("none", "", []) else [
            "-fsanitize=" + (san if isinstance(san, str) else ",".join(san))]
        cls.fuse_built = os.path.exists(os.path.join(cls.build, "fuse", "arf-fuse"))
        cls._tmp = tempfile.TemporaryDirectory(prefix="arf-destdir-")
        cls.dest = cls._tmp.name
        run(["meson", "install", "-C", cls.build, "--destdir", cls.dest, "--no-rebuild",
             "--quiet"], timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def at(self, path):
        """path (absolute, as on the target system) inside the DESTDIR"""
        return self.dest + path

    def expected(self):
        d = self.dirs
        want = {
            os.path.join(d["sbindir"], "arfd"): "exe",
            os.path.join(d["bindir"], "arfctl"): "exe",
            os.path.join(d["bindir"], "arf-asm"): "exe",
            os.path.join(d["bindir"], "arf-grep"): "exe",
            os.path.join(d["bindir"], "arf-find"): "exe",
            os.path.join(d["bindir"], "arf-du"): "exe",
            os.path.join(d["bindir"], "arf-sum"): "exe",
            os.path.join(d["libdir"], "libarf.so.0.1.0"): "file",
            os.path.join(d["libdir"], "libarf.so.0"): "link",
            os.path.join(d["libdir"], "libarf.so"): "link",
            os.path.join(d["libdir"], "libarf.a"): "file",
            os.path.join(d["libdir"], "pkgconfig", "arf.pc"): "file",
            os.path.join(d["includedir"], "arf.h"): "file",
            os.path.join(self.prefix, "lib", "systemd", "system", "arfd.service"): "file",
            os.path.join(d["sysconfdir"], "arf", "arfd.conf"): "file",
        }
        for page in self.MAN_PAGES:
            want[os.path.join(d["mandir"], page)] = "file"
        if self.fuse_built:
            want[os.path.join(d["bindir"], "arf-fuse")] = "exe"
            # mount(8) looks in /sbin only: whatever the prefix
            want["/sbin/mount.arf"] = "exe"
        return want

    def test_fhs_paths(self):
        want = self.expected()
        for path, kind in sorted(want.items()):
            real = self.at(path)
            self.assertTrue(os.path.lexists(real), f"{path} not installed (prefix {self.prefix})")
            if kind == "link":
                self.assertTrue(os.path.islink(real), f"{path} is not a symbolic link")
                self.assertTrue(os.path.exists(real), f"{path} is a dangling link")
            else:
                self.assertTrue(os.path.isfile(real) and not os.path.islink(real),
                                f"{path} is not a plain file")
            if kind == "exe":
                self.assertTrue(os.access(real, os.X_OK), f"{path} is not executable")
        # nothing else: every installed file is one of those above
        found = set()
        for root, _, files in os.walk(self.dest):
            for f in files:
                found.add(os.path.join(root, f)[len(self.dest):])
        self.assertEqual(sorted(found - set(want)), [], "installed but not expected")
        if not self.fuse_built:
            self.skipTest("libfuse3 missing: arf-fuse and mount.arf were not built")

    def test_installed_files_name_the_prefix(self):
        d = self.dirs
        unit = self.at(os.path.join(self.prefix, "lib", "systemd", "system", "arfd.service"))
        with open(unit) as f:
            self.assertIn("ExecStart=" + os.path.join(d["sbindir"], "arfd") + " ", f.read())
        with open(self.at(os.path.join(d["libdir"], "pkgconfig", "arf.pc"))) as f:
            pc = f.read()
        self.assertIn("prefix=" + self.prefix + "\n", pc)
        if self.fuse_built:
            # mount.arf finds arf-fuse in bindir when it is not beside it
            with open(self.at("/sbin/mount.arf"), "rb") as f:
                self.assertIn(os.path.join(d["bindir"], "arf-fuse").encode() + b"\0", f.read())

    def test_build_against_installed_library(self):
        cc = shutil.which("cc")
        if not cc or not shutil.which("pkg-config"):
            self.skipTest("no cc or pkg-config")
        d = self.dirs
        work = tempfile.TemporaryDirectory(prefix="arf-prog-")
        self.addCleanup(work.cleanup)
        src = os.path.join(work.name, "prog.c")
        with open(src, "w") as f:
            f.write("#include <arf.h>\n#include <stdio.h>\n"
                    "int main(void) {\n"
                    "  struct arf_url u; char err[256];\n"
                    "  if (arf_url_parse(\"arf://h:7/x\", &u, err, sizeof(err))) return 1;\n"
                    "  printf(\"%s %s %u %s\\n\", arf_strerror(-2), u.host, u.port, u.path);\n"
                    "  return 0;\n}\n")
        # arf.pc from the DESTDIR (its paths under it), the rest (libxxhash,
        # which it requires privately) from the system
        env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=self.dest,
                   PKG_CONFIG_PATH=self.at(os.path.join(d["libdir"], "pkgconfig")))
        p = subprocess.run(["pkg-config", "--cflags", "--libs", "arf"], env=env,
                           capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        flags = p.stdout.decode().split()
        self.assertIn("-I" + self.at(d["includedir"]), flags)
        exe = os.path.join(work.name, "prog")
        run([cc, "-Wall", "-Werror", "-o", exe, src] + flags + self.san_flags, timeout=120)
        lib_env = dict(os.environ, LD_LIBRARY_PATH=self.at(d["libdir"]))
        p = subprocess.run([exe], env=lib_env, capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode(), "No such file or directory h 7 /x\n")

    def test_verify_units(self):
        analyze = shutil.which("systemd-analyze")
        if not analyze:
            self.skipTest("systemd-analyze not installed")
        with tempfile.TemporaryDirectory(prefix="arf-root-") as root:
            shutil.copytree(self.dest, root, symlinks=True, dirs_exist_ok=True)
            unit = os.path.join(self.prefix, "lib", "systemd", "system", "arfd.service")
            # The DESTDIR holds ARF alone; lay it over what the unit relies
            # on from the OS (systemd's own units, the commands it runs), as
            # on a machine where the package is installed.
            host_units = "/lib/systemd/system"
            shutil.copytree(host_units, root + host_units, symlinks=True, dirs_exist_ok=True)
            for cmd in ("/bin/kill",):
                os.makedirs(os.path.dirname(root + cmd), exist_ok=True)
                shutil.copy2(os.path.realpath(cmd), root + cmd)
            # and the mount unit example (deploy/mnt-arf.mount, as an
            # administrator installs it)
            mount_unit = "/etc/systemd/system/mnt-arf.mount"
            os.makedirs(os.path.dirname(root + mount_unit), exist_ok=True)
            shutil.copy2(os.path.join(os.path.dirname(__file__), "..", "..", "deploy",
                                      "mnt-arf.mount"), root + mount_unit)
            for u in (unit, mount_unit):
                p = run([analyze, "verify", "--man=no", "--root=" + root, root + u], check=False)
                out = (p.stdout + p.stderr).decode()
                self.assertEqual(p.returncode, 0, u + ": " + out)


if __name__ == "__main__":
    harness.main()
