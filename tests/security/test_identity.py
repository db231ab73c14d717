#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Identity is proven, never claimed: the attacker's report (issue 14)
acted out against a real arfd.  The attacker is an unprivileged local user
(uid 65534 through setpriv) who runs arfctl with claimed credentials, or
sends hand-made frames that libarf would never send."""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness  # noqa: E402
from harness import Arfd, arfctl, run, ARFCTL  # noqa: E402

SETPRIV = shutil.which("setpriv")
NOBODY = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"] if SETPRIV else None


def as_nobody(*args, check=False):
    return run(NOBODY + [ARFCTL] + list(args), check=check)


def started(testcase, **extra):
    d = Arfd(extra={k.replace("__", "."): v for k, v in extra.items()})
    testcase.addCleanup(d.cleanup)
    d.start()
    os.chmod(d.workdir, 0o755)  # the attacker reaches the socket as any local user would
    os.chmod(d.socket, 0o777)
    return d


def put(d, path, data, mode, uid=0, gid=0):
    """As root: a file with this content, mode and owner."""
    src = os.path.join(d.workdir, "src")
    with open(src, "wb") as f:
        f.write(data)
    arfctl("put", src, d.url(path))
    arfctl("--uid", "0", "--gid", "0", "exec", "@lookup", d.url("/"), "zero:272", check=False)
    # chmod/chown through the mount-free path: arf-itest's setattr
    run([harness.ITEST, "setattr", d.url(path), "%o" % mode, str(uid), str(gid)])


@unittest.skipUnless(SETPRIV, "setpriv (util-linux) not installed")
class ClaimedCredentials(unittest.TestCase):
    """Finding 1: claimed credentials were believed over tcp."""

    def test_claimed_root_reads_nothing_more(self):
        d = started(self)
        put(d, "/secret", b"root's secret\n", 0o600)
        arfctl("mkdir", d.url("/private"))
        run([harness.ITEST, "setattr", d.url("/private"), "700", "0", "0"])
        put(d, "/private/open", b"world-readable, in a 0700 directory\n", 0o644)
        for t in ("tcp", "shm"):
            # as itself: refused
            p = as_nobody("cat", d.url("/secret", t))
            self.assertEqual(p.returncode, 1, (t, p.stdout))
            self.assertIn(b"Permission denied", p.stderr)
            # claiming root: refused just the same
            p = as_nobody("--uid", "0", "--gid", "0", "cat", d.url("/secret", t))
            self.assertEqual(p.returncode, 1, (t, p.stdout))
            self.assertNotIn(b"secret", p.stdout)
            self.assertIn(b"Permission denied", p.stderr)
            p = as_nobody("--uid", "0", "--gid", "0", "cat", d.url("/private/open", t))
            self.assertEqual(p.returncode, 1, (t, p.stdout))
            self.assertIn(b"Permission denied", p.stderr)
        print("arfctl --uid 0 as uid 65534 over tcp and shm: root's 0600 file and a file "
              "in root's 0700 directory refused")

    def test_claimed_root_changes_nothing(self):
        d = started(self)
        arfctl("mkdir", d.url("/home"))
        run([harness.ITEST, "setattr", d.url("/home"), "1777", "0", "0"])
        arfctl("mkdir", d.url("/vault"))
        run([harness.ITEST, "setattr", d.url("/vault"), "700", "1000", "1000"])
        put(d, "/vault/f", b"uid 1000's\n", 0o644, 1000, 1000)
        for t in ("tcp", "shm"):
            p = as_nobody("--uid", "0", "--gid", "0", "rm", d.url("/vault/f", t))
            self.assertEqual(p.returncode, 1, (t, p.stderr))
            p = as_nobody("--uid", "1000", "--gid", "1000", "rm", d.url("/vault/f", t))
            self.assertEqual(p.returncode, 1, (t, p.stderr))
            # what it makes is its own, never root's
            p = as_nobody("--uid", "0", "--gid", "0", "mkdir", d.url("/home/x" + t, t))
            self.assertEqual(p.returncode, 0, (t, p.stderr))
            st = json.loads(arfctl("--json", "stat", d.url("/home/x" + t)).stdout)
            self.assertEqual((st["uid"], st["gid"]), (65534, 65534), (t, st))
        st = json.loads(arfctl("--json", "stat", d.url("/vault/f")).stdout)
        self.assertEqual(st["uid"], 1000)
        print("claimed uid 0 / 1000 as uid 65534: another user's file not removed; "
              "what it makes belongs to 65534")

    def test_raw_frame_claiming_root(self):
        """A READ frame made by hand, claiming uid 0, from an ordinary port."""
        d = started(self)
        put(d, "/secret", b"root's secret\n", 0o600)
        st = json.loads(arfctl("--json", "stat", d.url("/secret")).stdout)
        code = RAW_READ % (d.port, st["ino"], st["gen"])
        p = run(NOBODY + ["/usr/bin/python3", "-c", code], check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        status, body = json.loads(p.stdout)
        self.assertNotEqual(status, 0, body)
        self.assertNotIn("secret", body)
        print("raw READ claiming uid 0 from port >= 1024: status %d, nothing read" % status)

    def test_insecure_export_believes_claims(self):
        """`insecure` is NFS's opt-out: claims from any port are believed."""
        d = started(self, export__insecure="true")
        put(d, "/secret", b"root's secret\n", 0o600)
        p = as_nobody("--uid", "0", "--gid", "0", "cat", d.url("/secret", "tcp"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"root's secret\n")
        # shm peers stay what the kernel says, insecure or not
        p = as_nobody("--uid", "0", "--gid", "0", "cat", d.url("/secret", "shm"))
        self.assertEqual(p.returncode, 1)


# A client that speaks the wire protocol itself (no libarf): HELLO, then a
# READ request whose credentials claim uid 0.  Prints [status, body].
RAW_READ = r'''
import json, socket, struct
s = socket.create_connection(("127.0.0.1", %d))
def frame(op, fid, body, aux=0):
    return struct.pack("<IHHQiI", 24 + len(body), op, 0, fid, 0, aux) + body
def recv():
    h = b""
    while len(h) < 24:
        h += s.recv(24 - len(h))
    n, op, fl, fid, st, aux = struct.unpack("<IHHQiI", h)
    b = b""
    while len(b) < n - 24:
        b += s.recv(n - 24 - len(b))
    return st, b
hello = struct.pack("<II", 1, 0) + b"/".ljust(256, b"\0")
s.sendall(frame(1, 1, hello, aux=1))
st, b = recv()
assert st == 0, (st, b)
cred = struct.pack("<III", 0, 0, 0)
body = cred + struct.pack("<QIQI", %d, %d, 0, 4096)
s.sendall(frame(0x103, 2, body))
st, b = recv()
print(json.dumps([st, b.decode(errors="replace")]))
'''


if __name__ == "__main__":
    harness.main()
