#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfd's file_view helper (arfd/helpers.c) lends a run's views in a region
that held the views of earlier runs on the same worker: none of their bytes
may show.  A small arf-asm program, through `arfctl exec`, views a file and
emits the region from the view's start, past the bytes it got: after runs
over a long file of 'A', a run over a short file sees its own bytes and
then zeros only (arfd zeroes what the copy did not overwrite once it is in,
not the whole region before it)."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ArfdTestCase, arfctl, arfctl_json  # noqa: E402

LONG = 8192   # bytes of the long file, viewed whole
PEEK = 12288  # bytes emitted from the view's start: past both files' ends

# file_view(ctx, 56); emit PEEK bytes from the view's address
VIEW_PEEK = """mov %r6, %r1
mov %r2, 56
call 22
mov %r7, %r0
jslt %r7, 0, out
ldxdw %r1, [%r6+32]
mov %r2, {peek}
call 1
out:
mov %r0, %r7
exit
"""


class FileView(ArfdTestCase):
    def test_no_earlier_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            prog = os.path.join(tmp, "peek.s")
            with open(prog, "w") as f:
                f.write(VIEW_PEEK.format(peek=PEEK))
            for name, data in (("long", b"A" * LONG), ("short", b"short\n")):
                src = os.path.join(tmp, name)
                with open(src, "wb") as f:
                    f.write(data)
                arfctl("put", src, self.arfd.url("/" + name))

            def peek(name, length):
                out = arfctl_json("exec", prog, self.arfd.url("/" + name), "ino", "gen",
                                  "u32:0", "u64:0", "u64:%d" % length, "zero:24")
                self.assertEqual(out["r0"], 0, out)
                return bytes.fromhex(out["output_hex"])

            # alternated, so that the short file's runs follow long ones on
            # whichever worker serves them
            for _ in range(6):
                got = peek("long", LONG)
                self.assertEqual(got, b"A" * LONG + bytes(PEEK - LONG))
                got = peek("short", LONG)
                self.assertEqual(got, b"short\n" + bytes(PEEK - 6))


if __name__ == "__main__":
    harness.main()
