#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libarf's compound calls against a real arfd (arf-compound):
arf_create_write makes a small file whole in one round trip and takes it
back when a later step fails; arf_copy copies on the server as
copy_file_range(2) says, with few bytes on the wire.  And `arfctl cp`,
which uses it."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ArfdTestCase, arfctl, run  # noqa: E402

COMPOUND = os.path.join(harness.BUILD, "tests", "integration", "arf-compound")


class CreateWrite(ArfdTestCase):
    def test_create_write(self):
        # the work is the server's: one transport shows it
        p = run([COMPOUND, "create-write", self.arfd.url("/", "tcp")], check=False)
        out = p.stdout.decode()
        print(out.strip())
        self.assertEqual(p.returncode, 0, out + p.stderr.decode())


class Copy(ArfdTestCase):
    def test_copy(self):
        p = run([COMPOUND, "copy", self.arfd.url("/", "tcp")], check=False, timeout=600)
        out = p.stdout.decode()
        print(out.strip())
        self.assertEqual(p.returncode, 0, out + p.stderr.decode())

    def test_arfctl_cp(self):
        data = os.urandom(3 << 20)
        src = os.path.join(self.arfd.workdir, "local-src")
        with open(src, "wb") as f:
            f.write(data)
        u = self.arfd.url
        arfctl("put", src, u("/a"))
        arfctl("mkdir", u("/d"))
        out = json.loads(arfctl("--json", "--stats", "cp", u("/a"), u("/d")).stdout)
        self.assertEqual(out["to"], "/d/a")
        self.assertEqual(out["bytes"], len(data))
        wire = out["stats"]["bytes_sent"] + out["stats"]["bytes_received"]
        self.assertLess(wire, 64 << 10, "arfctl cp moved %d bytes" % wire)
        self.assertEqual(arfctl("cat", u("/d/a")).stdout, data)
        # over an existing, longer file: replaced, not merged
        arfctl("put", "-", u("/long"), input=b"x" * (4 << 20))
        arfctl("cp", u("/a"), u("/long"))
        self.assertEqual(arfctl("cat", u("/long")).stdout, data)
        # errors: a directory, a missing source, another server
        p = arfctl("cp", u("/d"), u("/e"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"Is a directory", p.stderr)
        p = arfctl("cp", u("/nope"), u("/e"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"No such file", p.stderr)
        p = arfctl("cp", u("/a"), "arf://127.0.0.1:1/x", check=False)
        self.assertIn(b"cross-device", p.stderr.lower())
        print("arfctl cp: 3 MiB copied by the server with %d bytes on the wire; over a longer "
              "file; EISDIR, ENOENT, EXDEV" % wire)


if __name__ == "__main__":
    harness.main()
