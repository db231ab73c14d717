#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""On a mount, the kernel vouches for the caller: a tool run by an ordinary
user (arf-grep) asks arf-fuse, with the ioctl ARF_IOC_CRED on an open file,
for a credential token that arfd minted for exactly the uid and gid the
kernel gave, and acts as that user on a connection of its own.  Acted out
as the attacker would: the token with a claim of root, the token after a
restart, a made-up token, and arf-grep over a tree of mixed permissions
compared with GNU grep as the same user."""
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fuse"))
import fusetest  # noqa: E402
from fusetest import FuseTestCase, run  # noqa: E402
import harness  # noqa: E402

ARF_GREP = os.path.join(harness.BUILD, "tools", "arf-grep", "arf-grep")
PY = "/usr/bin/python3"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
IOC_SIZE = 4 + 4 + 8 + 4 + 4 + 4352 + 144
ARF_IOC_CRED = (2 << 30) | (IOC_SIZE << 16) | (0xAF << 8) | 1


def ioctl_cred_code(path):
    """Python run as another user: the ioctl's answer as JSON."""
    return (
        "import fcntl, json, struct\n"
        "fd = os.open(%r, os.O_RDONLY)\n"
        "buf = bytearray(%d)\n"
        "try:\n"
        "    fcntl.ioctl(fd, %d, buf, True)\n"
        "except OSError as e:\n"
        "    print(json.dumps({'errno': e.errno})); sys.exit(0)\n"
        "ver, ttl, ino, gen = struct.unpack_from('<IIQI', buf)\n"
        "url = bytes(buf[24:24 + 4352]).split(b'\\0')[0].decode()\n"
        "tok = bytes(buf[24 + 4352:]).hex()\n"
        "print(json.dumps({'version': ver, 'ttl': ttl, 'ino': ino, 'gen': gen, 'url': url, "
        "'token': tok}))\n" % (path, IOC_SIZE, ARF_IOC_CRED))


# A hand-made client: HELLO with a token, then READ claiming uid 0.
# Prints [hello status, hello message, read status, read body].
RAW = r'''
import json, socket, struct, sys
port, tok, ino, gen, vol = %d, bytes.fromhex(%r), %d, %d, %r
s = socket.create_connection(("127.0.0.1", port))
def frame(op, fid, body, aux=0):
    return struct.pack("<IHHQiI", 24 + len(body), op, 0, fid, 0, aux) + body
def recv():
    h = b""
    while len(h) < 24:
        c = s.recv(24 - len(h))
        if not c:
            return None, b""
        h += c
    n, op, fl, fid, st, aux = struct.unpack("<IHHQiI", h)
    b = b""
    while len(b) < n - 24:
        b += s.recv(n - 24 - len(b))
    return st, b
hello = (struct.pack("<II", 1, (1 if tok else 0) | (4 if vol else 0)) +
         b"/".ljust(256, b"\0") + tok + vol.encode().ljust(64 if vol else 0, b"\0"))
s.sendall(frame(1, 1, hello, aux=1))
st, b = recv()
if st != 0:
    print(json.dumps([st, b.decode(errors="replace"), None, ""])); sys.exit(0)
body = struct.pack("<III", 0, 0, 0) + struct.pack("<QIQI", ino, gen, 0, 4096)
s.sendall(frame(0x103, 2, body))
st2, b2 = recv()
print(json.dumps([st, "", st2, b2.decode(errors="replace")]))
'''


class MountIdentity(FuseTestCase):
    def setUp(self):
        super().setUp()
        os.chmod(self.arfd.workdir, 0o755)
        m = self.mnt
        with open(m.p("secret"), "w") as f:
            f.write("root's secret\n")
        os.chmod(m.p("secret"), 0o600)
        with open(m.p("open"), "w") as f:
            f.write("anyone's\n")
        os.chmod(m.p("open"), 0o644)
        os.mkdir(m.p("mine"))
        os.chown(m.p("mine"), 65534, 65534)

    def as_nobody_py(self, code):
        """Python code run as uid 65534 (the system's python: pyenv's is root's)."""
        p = run(NOBODY + [PY, "-c", "import os, sys\n" + code])
        return json.loads(p.stdout)

    def raw(self, tok_hex, ino, gen, vol=""):
        return self.as_nobody_py(RAW % (self.arfd.port, tok_hex, ino, gen, vol))

    def test_token_names_the_kernels_user(self):
        m = self.mnt
        got = self.as_nobody_py(ioctl_cred_code(m.p("open")))
        self.assertEqual(got.get("version"), 1, got)
        self.assertEqual(got["url"], self.arfd.url("/", "tcp"))
        st = os.stat(m.p("open"))
        self.assertEqual(got["ino"], st.st_ino)
        secret = os.stat(m.p("secret")).st_ino
        sgen = json.loads(harness.arfctl("--json", "stat", self.arfd.url("/secret")).stdout)["gen"]
        # the token acts as uid 65534: claiming root on that connection changes nothing
        hs, msg, rs, body = self.raw(got["token"], secret, sgen)
        self.assertEqual(hs, 0, msg)
        self.assertNotEqual(rs, 0, body)
        self.assertNotIn("secret", body)
        # ... while the file the user may read is read
        hs, msg, rs, body = self.raw(got["token"], got["ino"], got["gen"])
        self.assertEqual((hs, rs), (0, 0), (msg, body))
        self.assertEqual(body, "anyone's\n")
        # a made-up token is refused at the handshake, with the reason
        forged = bytearray(bytes.fromhex(got["token"]))
        forged[4] = 0  # uid 65534 -> uid 0 (65534 = 0xfffe; low byte cleared)
        forged[5] = 0
        hs, msg, rs, body = self.raw(bytes(forged).hex(), secret, sgen)
        self.assertNotEqual(hs, 0)
        self.assertIn("not minted by this server", msg)
        # after arfd restarts, the old token is worth nothing
        self.arfd.restart()
        hs, msg, rs, body = self.raw(got["token"], got["ino"], got["gen"])
        self.assertNotEqual(hs, 0)
        self.assertIn("credential token refused", msg)
        print("ARF_IOC_CRED as uid 65534: token acts as 65534 (claimed root read nothing, "
              "its own readable file read); forged and pre-restart tokens refused")

    def test_token_good_on_every_volume_of_its_server(self):
        """A token is the server's, not a volume's: a client that crosses a
        mount point into another volume of the same server presents it
        there and acts as the same user (docs/volumes.md); a forged one is
        refused there too."""
        harness.arfctl("--control", self.arfd.control, "vol", "create", "proj")
        vurl = lambda path: self.arfd.url(path) + "?volume=proj"  # noqa: E731
        src = os.path.join(self.arfd.workdir, "src")
        for name, mode in (("open", "0644"), ("secret", "0600")):
            with open(src, "w") as f:
                f.write("proj's %s\n" % name)
            harness.arfctl("put", src, vurl("/" + name))
            harness.arfctl("chmod", mode, vurl("/" + name))
        st = {n: json.loads(harness.arfctl("--json", "stat", vurl("/" + n)).stdout)
              for n in ("open", "secret")}
        got = self.as_nobody_py(ioctl_cred_code(self.mnt.p("open")))
        hs, msg, rs, body = self.raw(got["token"], st["open"]["ino"], st["open"]["gen"], "proj")
        self.assertEqual((hs, msg, rs, body), (0, "", 0, "proj's open\n"))
        hs, msg, rs, body = self.raw(got["token"], st["secret"]["ino"], st["secret"]["gen"],
                                     "proj")
        self.assertEqual(hs, 0, msg)
        self.assertNotEqual(rs, 0, body)  # as uid 65534, not root
        forged = bytearray(bytes.fromhex(got["token"]))
        forged[4] = forged[5] = 0
        hs, msg, rs, body = self.raw(bytes(forged).hex(), st["secret"]["ino"],
                                     st["secret"]["gen"], "proj")
        self.assertNotEqual(hs, 0)
        self.assertIn("not minted by this server", msg)

    def test_ioctl_on_other_files_and_commands(self):
        """Only ARF_IOC_CRED is answered; others are ENOTTY, as on any file."""
        m = self.mnt
        fd = os.open(m.p("open"), os.O_RDONLY)
        try:
            with self.assertRaises(OSError) as cm:
                fcntl.ioctl(fd, (2 << 30) | (8 << 16) | (0xAF << 8) | 2, bytearray(8), True)
            self.assertEqual(cm.exception.errno, 25)  # ENOTTY
        finally:
            os.close(fd)

    def test_arf_grep_reads_what_the_user_may(self):
        if not os.path.exists(ARF_GREP):
            self.skipTest("arf-grep not built")
        m = self.mnt
        tree = m.p("tree")
        os.mkdir(tree)
        os.chmod(tree, 0o755)
        files = {  # name: (mode, uid, gid)
            "root600": (0o600, 0, 0),
            "root644": (0o644, 0, 0),
            "nobody600": (0o600, 65534, 65534),
            "other640": (0o640, 1000, 1000),
            "group640": (0o640, 1000, 65534),
        }
        for name, (mode, uid, gid) in files.items():
            with open(os.path.join(tree, name), "w") as f:
                f.write("needle in %s\nhay\n" % name)
            os.chown(os.path.join(tree, name), uid, gid)
            os.chmod(os.path.join(tree, name), mode)
        os.mkdir(os.path.join(tree, "closed"))
        with open(os.path.join(tree, "closed", "inside"), "w") as f:
            f.write("needle inside\n")
        os.chmod(os.path.join(tree, "closed"), 0o700)

        def as_nobody(args):
            p = subprocess.run(NOBODY + args, capture_output=True, timeout=120, cwd=m.path)
            return p.returncode, sorted(p.stdout.decode().splitlines()), p.stderr.decode()

        rc1, out1, err1 = as_nobody(["grep", "-r", "needle", "tree"])
        rc2, out2, err2 = as_nobody([ARF_GREP, "--stats", "-r", "needle", "tree"])
        self.assertEqual(out2, out1, (err1, err2))
        self.assertEqual(rc2, rc1, (err1, err2))
        self.assertEqual(out1, ["tree/group640:needle in group640",
                                "tree/nobody600:needle in nobody600",
                                "tree/root644:needle in root644"])
        # the files it could open were searched on the server, as uid 65534
        self.assertRegex(err2, r"stats arf://[^:]+:\d+/: execs [1-9]", err2)
        for name in ("root600", "other640", "closed"):
            self.assertIn(name, err2)  # Permission denied, as grep says it
        print("arf-grep -r as uid 65534 on the mount: same lines and status as GNU grep "
              "(3 files readable of 6), searched on the server")


if __name__ == "__main__":
    harness.main()
