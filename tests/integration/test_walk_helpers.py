#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfd's tree-walking helpers (arfd/helpers_walk.c), driven by small arf-asm
programs through `arfctl exec`, as root and as another user:

dir_read lists a directory in batches resumed by cookie (every entry once),
with each child's attributes when the caller may search the directory and
none when it may only read it, refuses a directory the caller may not read
(-EACCES), a file (-ENOTDIR), a buffer too small for one record (-ENOSPC)
and a short argument (-EINVAL).  file_digest gives the same digests as
hashlib for every algorithm, of a range and of an empty file, refuses a
reader without permission (-EACCES), a directory (-EISDIR) and an unknown
algorithm (-EINVAL); the server serves on after each refusal."""
import hashlib
import json
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ArfdTestCase, arfctl, arfctl_json  # noqa: E402

SCRATCH = 0x7000000000000
EACCES, ENOTDIR, EISDIR, EINVAL, ENOSPC = 13, 20, 21, 22, 28

# dir_read(ctx, 40, scratch, BUFLEN); emit the argument back, then the records
DIR_READ = """mov %r6, %r1
mov %r2, 40
lddw %r3, {scratch}
mov %r4, {buflen}
call 24
mov %r7, %r0
jslt %r7, 0, out
mov %r1, %r6
mov %r2, 40
call 1
lddw %r1, {scratch}
mov %r2, %r7
call 1
out:
mov %r0, %r7
exit
"""

# file_digest(ctx, 128); emit the argument back
DIGEST = """mov %r6, %r1
mov %r2, {arglen}
call 25
mov %r7, %r0
mov %r1, %r6
mov %r2, 128
call 1
mov %r0, %r7
exit
"""

ALGS = {1: "md5", 2: "sha1", 3: "sha224", 4: "sha256", 5: "sha384", 6: "sha512",
        7: "blake2b"}


def parse_records(buf):
    """dir_read's records: [(name, ino, attr dict or None, link or None)]."""
    out, i = [], 0
    while i < len(buf):
        ino, cookie, gen, typ, namelen, has_attr, has_link = struct.unpack_from(
            "<QQIBBBB", buf, i)
        i += 24
        attr = None
        if has_attr:
            (a_ino, a_gen, mode, nlink, uid, gid, _pad, size, blocks, at, mt, ct,
             rdev) = struct.unpack_from("<QIIIIIIQQqqqQ", buf, i)
            attr = dict(ino=a_ino, mode=mode, nlink=nlink, uid=uid, gid=gid, size=size,
                        blocks=blocks)
            i += 80
        name = bytes(buf[i:i + namelen])
        i += (namelen + 7) & ~7
        link = None
        if has_link:
            (tlen,) = struct.unpack_from("<I", buf, i)
            link = bytes(buf[i + 8:i + 8 + tlen])
            i += 8 + ((tlen + 7) & ~7)
        out.append((name, ino, typ, attr, link, gen))
    return out


class WalkHelpers(ArfdTestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def prog(self, name, text):
        p = os.path.join(self.tmp.name, name + ".s")
        with open(p, "w") as f:
            f.write(text)
        return p

    def put(self, path, data, mode=None):
        src = os.path.join(self.tmp.name, "data")
        with open(src, "wb") as f:
            f.write(data)
        arfctl("put", src, self.arfd.url(path))
        if mode is not None:
            arfctl("chmod", "%o" % mode, self.arfd.url(path))

    def exec(self, prog, path, args, uid=None):
        who = ["--uid", str(uid), "--gid", str(uid)] if uid is not None else []
        return arfctl_json(*who, "exec", prog, self.arfd.url(path), *args)

    def dir_read(self, path, flags=1, cookie=0, maxn=0, buflen=8192, uid=None, arglen=None):
        prog = self.prog("dr%d" % buflen, DIR_READ.format(scratch=hex(SCRATCH), buflen=buflen))
        args = ["ino", "gen", "u32:%d" % flags, "u64:%d" % cookie, "u32:%d" % maxn,
                "zero:12"]
        if arglen is not None:  # a short argument: the helper is told 16 bytes
            prog = self.prog("drshort", DIR_READ.replace("mov %r2, 40\nlddw", "mov %r2, 16\nlddw")
                             .format(scratch=hex(SCRATCH), buflen=buflen))
        out = self.exec(prog, path, args, uid)
        r0 = out["r0"]
        if r0 < 0:
            return r0, None, []
        raw = bytes.fromhex(out["output_hex"])
        rd = struct.unpack_from("<QIIQIIII", raw, 0)
        return r0, dict(cookie=rd[3], n=rd[5], eof=rd[6]), parse_records(raw[40:])

    def test_dir_read(self):
        arfctl("mkdir", self.arfd.url("/d"))
        names = sorted(b"f%03d" % i for i in range(150)) + [b"a name with spaces"]
        for n in names:
            self.put("/d/" + n.decode(), n * 3)
        arfctl("mkdir", self.arfd.url("/d/sub"))
        names.append(b"sub")
        # with attributes, as root: as many as fit in the scratch region a call
        recs, cookie = [], 0
        for _ in range(10):
            r0, rd, got = self.dir_read("/d", flags=1, cookie=cookie, buflen=16384)
            self.assertGreater(r0, 0)
            self.assertLessEqual(rd["n"], 256)
            recs, cookie = recs + got, rd["cookie"]
            if rd["eof"]:
                break
        self.assertEqual(rd["eof"], 1)
        self.assertEqual(sorted(r[0] for r in recs), sorted(names))
        for name, ino, typ, attr, _link, gen in recs:
            self.assertNotEqual(gen, 0, name)
            self.assertIsNotNone(attr, name)
            self.assertEqual(attr["ino"], ino)
            if name == b"sub":
                self.assertEqual(typ, 4)  # DT_DIR
                self.assertEqual(attr["mode"] & 0o170000, 0o040000)
            else:
                self.assertEqual(typ, 8)  # DT_REG
                self.assertEqual(attr["size"], len(name) * 3)
        # in batches of 7, resumed by cookie: every entry exactly once
        seen, cookie, rounds = [], 0, 0
        while True:
            r0, rd, recs = self.dir_read("/d", flags=0, cookie=cookie, maxn=7)
            self.assertGreaterEqual(r0, 0)
            self.assertLessEqual(rd["n"], 7)
            self.assertEqual(rd["n"], len(recs))
            seen += [r[0] for r in recs]
            self.assertTrue(all(r[3] is None for r in recs))  # no ATTRS asked
            cookie, rounds = rd["cookie"], rounds + 1
            if rd["eof"]:
                break
            self.assertLess(rounds, 100)
        self.assertEqual(sorted(seen), sorted(names))
        self.assertEqual(len(seen), len(set(seen)))
        # a small buffer: fewer records, then more on the next call
        r0, rd, recs = self.dir_read("/d", flags=1, buflen=300)
        self.assertGreaterEqual(len(recs), 1)
        self.assertEqual(rd["eof"], 0)
        self.assertLessEqual(r0, 300)
        # too small for one record
        r0, _, _ = self.dir_read("/d", flags=1, buflen=16)
        self.assertEqual(r0, -ENOSPC)
        # a short argument
        r0, _, _ = self.dir_read("/d", arglen=16)
        self.assertEqual(r0, -EINVAL)
        # a file is not a directory
        r0, _, _ = self.dir_read("/d/f000")
        self.assertEqual(r0, -ENOTDIR)

    def test_dir_read_permissions(self):
        arfctl("mkdir", self.arfd.url("/closed"))
        arfctl("mkdir", self.arfd.url("/readonly"))
        self.put("/closed/secret", b"s")
        self.put("/readonly/visible", b"v")
        arfctl("chmod", "0700", self.arfd.url("/closed"))
        arfctl("chmod", "0744", self.arfd.url("/readonly"))
        # another user: no read permission, no listing
        r0, _, _ = self.dir_read("/closed", uid=4321)
        self.assertEqual(r0, -EACCES)
        # read but not search: the names, no attributes (stat would need
        # x) and no handle (a lookup would need x)
        r0, rd, recs = self.dir_read("/readonly", uid=4321)
        self.assertGreater(r0, 0)
        self.assertEqual([(r[0], r[3], r[5]) for r in recs], [(b"visible", None, 0)])
        # root: both, with attributes
        r0, rd, recs = self.dir_read("/closed")
        self.assertEqual([r[0] for r in recs], [b"secret"])
        self.assertIsNotNone(recs[0][3])
        self.assertNotEqual(recs[0][5], 0)
        # the server serves on
        self.assertEqual(arfctl_json("stat", self.arfd.url("/closed/secret"))["size"], 1)

    def digest(self, path, alg, off=0, length=0, uid=None, arglen=128):
        prog = self.prog("dg%d" % arglen, DIGEST.format(arglen=arglen))
        out = self.exec(prog, path, ["ino", "gen", "u32:%d" % alg, "u64:%d" % off,
                                     "u64:%d" % length, "zero:96"], uid)
        raw = bytes.fromhex(out["output_hex"])
        size, mt, ct, dlen = struct.unpack_from("<QqqI", raw, 32)
        return out["r0"], raw[64:64 + dlen], size

    def test_file_digest(self):
        data = os.urandom(3 * 1024 * 1024 + 12345)  # more than one MiB piece
        self.put("/big", data)
        self.put("/empty", b"")
        for alg, name in ALGS.items():
            with self.subTest(alg=name):
                r0, dg, size = self.digest("/big", alg)
                self.assertEqual(r0, 0)
                self.assertEqual(size, len(data))
                self.assertEqual(dg, hashlib.new(name, data).digest())
                r0, dg, _ = self.digest("/empty", alg)
                self.assertEqual((r0, dg), (0, hashlib.new(name, b"").digest()))
        # a range, and a range past the end
        r0, dg, _ = self.digest("/big", 4, off=1000, length=2 * 1024 * 1024)
        self.assertEqual(dg, hashlib.sha256(data[1000:1000 + 2 * 1024 * 1024]).digest())
        r0, dg, _ = self.digest("/big", 4, off=len(data) - 10, length=100)
        self.assertEqual(dg, hashlib.sha256(data[-10:]).digest())
        # refusals
        self.put("/private", b"p", mode=0o600)
        self.assertEqual(self.digest("/private", 4, uid=4321)[0], -EACCES)
        self.assertEqual(self.digest("/private", 4)[0], 0)  # root may
        arfctl("mkdir", self.arfd.url("/dir"))
        self.assertEqual(self.digest("/dir", 4)[0], -EISDIR)
        self.assertEqual(self.digest("/big", 99)[0], -EINVAL)
        self.assertEqual(self.digest("/big", 4, arglen=64)[0], -EINVAL)
        # the server serves on
        self.assertEqual(arfctl_json("stat", self.arfd.url("/big"))["size"], len(data))


if __name__ == "__main__":
    harness.main()
