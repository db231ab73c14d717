#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfd's [programs] jit: programs loaded while it is on run as native code
(arfctl progs says "jit", the stats count the compilations), while it is off
they are interpreted, and either way a client gets the same answers: the
same r0, instruction count and output, and the same refusals with the same
messages (a fault, a store into an exported region, the budget).  The
standard programs (chain lookup, path walk, readdir) go through the JIT in
every other integration test, since it is on by default."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Arfd, arfctl  # noqa: E402

# name -> assembly; each runs with arfctl exec against the export's root
PROGRAMS = {
    "sum": "mov %r0, 0\nmov %r2, 1000\nloop:\nadd %r0, %r2\nsub %r2, 1\njne %r2, 0, loop\nexit\n",
    # a local call, stack traffic through r10 and through a pointer, output
    "frames": ("mov %r6, 7\nstdw [%r10-8], 5\nmov %r1, %r10\nadd %r1, -8\ncall local f\n"
               "ldxdw %r0, [%r10-8]\nadd %r0, %r6\nstxdw [%r10-16], %r0\nmov %r1, %r10\n"
               "add %r1, -16\nmov %r2, 8\ncall 1\nldxdw %r0, [%r10-16]\nexit\n"
               "f:\nldxdw %r2, [%r1]\nmul %r2, 9\nstxdw [%r1], %r2\nmov %r6, 1\nmov %r0, 0\n"
               "exit\n"),
    "past-scratch": ("lddw %r2, 0x0007000000000000\nldxdw %r0, [%r2+16380]\nexit\n"),
    "store-meta": "lddw %r2, 0x0005000000000000\nstb [%r2], 1\nmov %r0, 0\nexit\n",
    "forever": "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\n",
}


def run_all(arfd, tmp):
    """Every program once: name -> (exit status, result or error object)."""
    out = {}
    for name, text in PROGRAMS.items():
        src = os.path.join(tmp, name + ".s")
        with open(src, "w") as f:
            f.write(text)
        p = arfctl("--json", "exec", src, arfd.url("/"), check=False)
        out[name] = (p.returncode, json.loads(p.stdout))
    return out


class Engines(unittest.TestCase):
    def start(self, jit):
        d = Arfd(extra={"programs.jit": jit, "programs.max_insns": "100000"})
        d.start()
        self.addCleanup(d.cleanup)
        return d

    def ctl_json(self, d, *args):
        return json.loads(arfctl("--control", d.control, "--json", *args).stdout)

    def test_on_and_off_agree(self):
        tmp = tempfile.TemporaryDirectory(prefix="arf-jit-")
        self.addCleanup(tmp.cleanup)
        results = {}
        for jit, engine in (("on", "jit"), ("off", "interpreter")):
            d = self.start(jit)
            results[jit] = run_all(d, tmp.name)
            listed = self.ctl_json(d, "progs", "list")
            self.assertEqual(len(listed), len(PROGRAMS), listed)
            self.assertEqual({p["engine"] for p in listed}, {engine}, listed)
            if jit == "on":
                self.assertTrue(all(p["native_bytes"] > 0 for p in listed), listed)
            st = self.ctl_json(d, "stats")["programs"]
            self.assertEqual(st["jitted"], len(PROGRAMS) if jit == "on" else 0, st)
            self.assertEqual(st["jit_failed"], 0, st)
            prom = arfctl("--control", d.control, "--prometheus", "stats").stdout.decode()
            self.assertIn("arf_program_jit_compiles_total %d" % st["jitted"], prom)
        self.assertEqual(results["on"], results["off"])

        r = results["on"]
        self.assertEqual(r["sum"], (0, {"r0": 500500, "insns": 3003, "output_len": 0,
                                        "output_hex": ""}))
        rc, j = r["frames"]
        self.assertEqual((rc, j["r0"]), (0, 52), j)  # 5 * 9 + 7, emitted as well
        self.assertEqual(j["output_hex"], "3400000000000000")
        rc, j = r["past-scratch"]
        self.assertEqual(rc, 1)
        self.assertEqual(j["error"], "instruction 2: load of 8 bytes at 0x7000000003ffc: "
                                     "out of bounds of the scratch region (16384 bytes)")
        rc, j = r["store-meta"]
        self.assertEqual(rc, 1)
        self.assertIn("store of 1 bytes at 0x5000000000000: the exported META region is "
                      "read-only", j["error"])
        rc, j = r["forever"]
        self.assertEqual(rc, 1)
        self.assertEqual((j["error"], j["insns"]),
                         ("instruction 2: instruction budget of 100000 exhausted", 100000))

    def test_bad_value(self):
        d = Arfd(extra={"programs.jit": "sometimes"})
        self.addCleanup(d.cleanup)
        with self.assertRaises(Exception):
            d.start(timeout=10)
        self.assertIn("'jit' must be true or false, not 'sometimes'", d.log())


if __name__ == "__main__":
    harness.main()
