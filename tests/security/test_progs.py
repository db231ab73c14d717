#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Programs cannot take more than their share: the attacker's report
(issue 14, findings 3 and 7) acted out against a real arfd.  The attacker
speaks the wire by hand (rawwire.py) over tcp from an ordinary port, so it
is the anonymous user with no region keys; the victim is uid 65534 (setpriv)
sending its stat as a request.

  (a) helper-heavy programs (obj_read of a 1 MiB range in a loop, memmem
      over a 1 MiB buffer in a loop) stop within max_wall_ms + 20 ms, JIT
      on and off -- before, a helper's work cost one instruction and the
      clock was read every 65536 of them: a 1 s limit ran 10.4 s;
  (b) while one client floods PROG_EXEC runs of a budget-bound program,
      another user's stat keeps its latency (p50/p99 before and during),
      and another client's run waits behind one run, not behind the flood;
  (c) SIGTERM with a run in progress that would go on for ever, and more
      queued, stops arfd within 1 s;
  (d) one identity loading many distinct large programs cannot push the
      cache past its quota (count and native bytes), another identity's
      program survives, and one program over the quota is refused;
  (e) mkdir -p as the anonymous user finds existing directories through
      the lookup helper (its regions are empty) and is refused where the
      user may not search.
Each prints the numbers it measured."""
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import rawwire  # noqa: E402
from harness import Arfd, BUILD, arfctl, run  # noqa: E402

ARF_ASM = os.path.join(BUILD, "tools", "arf-asm", "arf-asm")
SETPRIV = shutil.which("setpriv")
NOBODY = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"] if SETPRIV else None
PY = "/usr/bin/python3"  # readable by every user

OP_GETATTR, OP_PROG_LOAD, OP_PROG_EXEC = 0x100, 0x130, 0x131
S_OK, S_IO, S_DQUOT = 0, 3, 27
S_EBUDGET = 1004  # ARF_NET_S_ARF_BASE + (ARF_ERR_MAX - ARF_EBUDGET)
MIB = 1 << 20
SLACK_MS = 20.0

# obj_read(out, 1 MiB, out) for ever: the output buffer's first word is an
# even version whose checksum never matches, so each call copies and hashes
# the MiB 64 times before it answers ARF_ECSUM
OBJ_READ_LOOP = """
lddw %r6, 0x3000000000000
mov %r0, 2
stxdw [%r6], %r0
loop:
mov %r1, %r6
lddw %r2, 0x100000
mov %r3, %r6
call 17
ja loop
"""
# memmem(out, 1 MiB, "zzzzzzzz", 8) for ever: never found, a MiB scanned a call
MEMMEM_LOOP = """
lddw %r0, 0x7a7a7a7a7a7a7a7a
stxdw [%r10-8], %r0
loop:
lddw %r1, 0x3000000000000
lddw %r2, 0x100000
mov %r3, %r10
add %r3, -8
mov %r4, 8
call 3
ja loop
"""
SPIN = "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\n"


def assemble(text):
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "p.s"), os.path.join(tmp, "p.bin")
        with open(src, "w") as f:
            f.write(text)
        run([ARF_ASM, "asm", src, "-o", out])
        with open(out, "rb") as f:
            return f.read()


def started(testcase, **extra):
    d = Arfd(extra={k.replace("__", "."): v for k, v in extra.items()})
    testcase.addCleanup(d.cleanup)
    d.start()
    os.chmod(d.workdir, 0o755)  # other users reach the socket
    return d


def control(d, cmd):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(20)
        s.connect(d.control)
        s.sendall(cmd.encode() + b"\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def prog_error(body):
    """(pc, insns, message) of a failed run's reply."""
    if len(body) < 16:
        return 0, 0, ""
    pc, insns, n = struct.unpack_from("<IQI", body)
    return pc, insns, body[16:16 + n].decode(errors="replace")


class Client:
    """One connection speaking the wire by hand: tcp from an ordinary port
    (the anonymous user, no region keys), or shm (as this process's uid)."""

    def __init__(self, d, kind="tcp", timeout=30):
        self.w = rawwire.Wire(kind, str(d.port) if kind == "tcp" else d.socket)
        self.w.s.settimeout(timeout)
        st, body = self.w.hello()
        assert st == 0, (st, body)

    def close(self):
        self.w.s.close()

    def load(self, code):
        self.w.send(OP_PROG_LOAD, rawwire.cred() + struct.pack("<I", len(code)) + code)
        st, body = self.w.recv()
        return st, (body[:32] if st == 0 else prog_error(body)[2])

    def send_exec(self, h, out_max=MIB, arg=b"", uid=0):
        return self.w.send(OP_PROG_EXEC, rawwire.cred(uid, uid) + h +
                           struct.pack("<I", out_max) + struct.pack("<I", len(arg)) + arg)

    def exec(self, h, **kw):
        t0 = time.monotonic()
        self.send_exec(h, **kw)
        st, body = self.w.recv()
        return st, body, (time.monotonic() - t0) * 1000


# The victim: uid 65534, its own connection, GETATTR of / as a request,
# n times, spaced; prints the latencies in ms.
VICTIM = r"""
import json, struct, sys, time
sys.path.insert(0, sys.argv[1])
import rawwire
w = rawwire.Wire("tcp", sys.argv[2])
st, _ = w.hello()
assert st == 0, st
lat = []
for i in range(int(sys.argv[3])):
    t0 = time.monotonic()
    w.send(0x100, rawwire.cred(65534, 65534) + rawwire.fh(1, int(sys.argv[4])))
    st, body = w.recv()
    lat.append((time.monotonic() - t0) * 1000)
    assert st == 0, st
    time.sleep(0.01)
print(json.dumps(lat))
"""


def victim_start(d, n, gen):
    return subprocess.Popen(NOBODY + [PY, "-c", VICTIM, HERE, str(d.port), str(n), str(gen)],
                            stdout=subprocess.PIPE)


def victim_result(p):
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, p.returncode
    return json.loads(out)


def victim(d, n, gen):
    return victim_result(victim_start(d, n, gen))


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


class WallClock(unittest.TestCase):
    """(a) helper-heavy programs stop within max_wall_ms + 20 ms."""

    def test_helper_heavy_runs_stop_in_time(self):
        code = {"obj_read 1 MiB x64 in a loop": assemble(OBJ_READ_LOOP),
                "memmem over 1 MiB in a loop": assemble(MEMMEM_LOOP),
                "instructions alone": assemble(SPIN)}
        for jit in ("true", "false"):
            d = started(self, programs__max_wall_ms="200",
                        programs__max_insns="1000000000000", programs__jit=jit)
            c = Client(d)
            for what, prog in code.items():
                st, h = c.load(prog)
                self.assertEqual(st, S_OK, h)
                best, msg = 1e9, ""
                for _ in range(3):  # best of three: a loaded machine may delay one
                    st, body, ms = c.exec(h)
                    self.assertEqual(st, S_EBUDGET, body)
                    msg = prog_error(body)[2]
                    self.assertIn("wall-clock limit reached", msg)
                    best = min(best, ms - 200)
                    if best <= SLACK_MS:
                        break
                print("jit=%s, %s: stopped %.1f ms past max_wall_ms=200 (%s)" %
                      (jit, what, best, msg))
                self.assertLessEqual(best, SLACK_MS, "%s, jit=%s" % (what, jit))
            c.close()
            d.cleanup()


@unittest.skipUnless(SETPRIV, "setpriv (util-linux) not installed")
class Fairness(unittest.TestCase):
    """(b) a flood of program runs does not hold up another user's stat, nor
    another client's run."""

    RUNS = 200

    def test_flood_of_runs(self):
        # budget-bound runs of ~tens of ms each, as in the report (200 x 31 ms)
        d = started(self, programs__max_insns="30000000", programs__max_wall_ms="1000")
        gen = json.loads(arfctl("--json", "stat", d.url("/")).stdout)["gen"]
        idle = victim(d, 100, gen)

        attacker, other = Client(d), Client(d)
        st, h = attacker.load(assemble(SPIN))
        self.assertEqual(st, S_OK, h)
        st, body, one_ms = attacker.exec(h)
        self.assertEqual(st, S_EBUDGET, body)
        # each run claiming another uid: an anonymous connection is one
        # identity whatever it claims, so that buys it no extra turns
        for i in range(self.RUNS):
            attacker.send_exec(h, uid=1000 + i)
        t_flood = time.monotonic()
        # meanwhile the victim's stats, and another client's run, queued
        # behind the flood: each served in its turn
        v = victim_start(d, 100, gen)
        try:
            time.sleep(0.05)
            st, body, other_ms = other.exec(h)
            self.assertEqual(st, S_EBUDGET, body)
        finally:
            during = victim_result(v)
        victim_s = time.monotonic() - t_flood
        for _ in range(self.RUNS):
            st, body = attacker.w.recv()
            self.assertEqual(st, S_EBUDGET, body)
        flood_s = time.monotonic() - t_flood
        attacker.close()
        other.close()

        p50i, p99i = pct(idle, 0.5), pct(idle, 0.99)
        p50d, p99d = pct(during, 0.5), pct(during, 0.99)
        print("one run: %.1f ms alone; %d runs queued by one client took %.1f s (%.1f ms "
              "each)" % (one_ms, self.RUNS, flood_s, flood_s * 1000 / self.RUNS))
        print("another client's run, sent behind the %d: answered in %.1f ms" %
              (self.RUNS, other_ms))
        print("victim stat (GETATTR request, uid 65534): idle p50 %.2f ms p99 %.2f ms; "
              "during the flood p50 %.2f ms p99 %.2f ms" % (p50i, p99i, p50d, p99d))
        # FIFO behind one worker: the victim waited for the whole flood (seconds)
        self.assertLess(p50d, 50.0)
        self.assertLess(p99d, 250.0)
        # round robin: behind a run or two of the flood's (as long as they took
        # here, on a machine that may be loaded), not behind all of them
        avg_ms = flood_s * 1000 / self.RUNS
        self.assertLess(other_ms, 5 * max(avg_ms, one_ms) + 50)
        # and all that while the flood went on, so it shows something
        self.assertLess(victim_s, flood_s - 0.5, "the flood did not outlast the victim's stats")


class Sigterm(unittest.TestCase):
    """(c) SIGTERM stops arfd within a second whatever programs run."""

    def test_sigterm_with_endless_runs(self):
        for what, text in (("obj_read loop", OBJ_READ_LOOP), ("instruction loop", SPIN)):
            d = started(self, programs__max_wall_ms="0", programs__max_insns="1000000000000")
            c = Client(d)
            st, h = c.load(assemble(text))
            self.assertEqual(st, S_OK, h)
            for _ in range(20):  # one runs, the rest wait
                c.send_exec(h)
            time.sleep(0.5)
            t0 = time.monotonic()
            d.proc.send_signal(signal.SIGTERM)
            try:
                rc = d.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = None
            dt = time.monotonic() - t0
            print("%s without a time limit, 19 more queued: SIGTERM -> exit %s in %.3f s" %
                  (what, rc, dt))
            self.assertEqual(rc, 0, "arfd did not stop within 10 s")
            self.assertLess(dt, 1.0)
            c.close()
            d.cleanup()


class Quotas(unittest.TestCase):
    """(d) one identity cannot fill the program cache."""

    QUOTA_MIB, QUOTA_COUNT = 2, 5

    @staticmethod
    def prog(i, n):
        # n loads through a computed pointer (each some tens of bytes of
        # native code) and i, which makes the bytes, and the hash, distinct
        return assemble("mov %%r0, %d\n" % i + "ldxdw %r2, [%r1+8]\nadd %r0, %r2\n" * n +
                        "exit\n")

    def held(self, d, root_h):
        progs = control(d, "progs list")["programs"]
        mine = [p for p in progs if p["owner_uid"] == 65534]
        n, b = len(mine), sum(p["native_bytes"] for p in mine)
        self.assertLessEqual(n, self.QUOTA_COUNT, progs)
        self.assertLessEqual(b, self.QUOTA_MIB * MIB, progs)
        self.assertIn(root_h.hex(), [p["hash"] for p in progs], "root's program was evicted")
        return n, b, max(p["native_bytes"] for p in mine)

    def test_one_identity_cannot_fill_the_cache(self):
        d = started(self, programs__quota_mib=str(self.QUOTA_MIB),
                    programs__quota_count=str(self.QUOTA_COUNT), programs__cache_mib="64")
        # the other identity: root proven over shm (uid 0), its program cached first
        root = Client(d, "shm")
        st, root_h = root.load(self.prog(10 ** 6, 64))
        self.assertEqual(st, S_OK, root_h)

        anon = Client(d)
        for what, n in (("small", 4), ("large", 4096)):
            most_n = most_b = size = 0
            for i in range(12):
                st, h = anon.load(self.prog(1000 * n + i, n))
                self.assertEqual(st, S_OK, h)
                k, b, size = self.held(d, root_h)
                most_n, most_b = max(most_n, k), max(most_b, b)
            print("anonymous loaded 12 distinct %s programs (%.0f KiB of native code each): it "
                  "held at most %d programs, %.2f MiB (quota %d programs, %d MiB); root's "
                  "program stayed" % (what, size / 1024, most_n, most_b / MIB, self.QUOTA_COUNT,
                                      self.QUOTA_MIB))
        # root's program still runs from the cache (not ARF_ENOPROG)
        st, body, _ = root.exec(root_h)
        self.assertNotEqual(st, 1009, prog_error(body))
        print("programs evicted: %s" % control(d, "stats").get("programs", {}).get("evictions"))
        # one program alone over the quota: refused, saying which quota
        st, msg = anon.load(self.prog(99, 32000))
        print("a program of 64002 instructions: status %d: %s" % (st, msg))
        self.assertEqual(st, S_DQUOT, msg)
        self.assertIn("quota_mib", msg)
        self.held(d, root_h)
        anon.close()
        root.close()


class MkdirP(unittest.TestCase):
    """(e) mkdir -p for a user whose runs see no regions: the lookup helper."""

    def test_anonymous_mkdirp(self):
        d = started(self)
        arfctl("mkdir", d.url("/pub"))
        arfctl("chmod", "777", d.url("/pub"))
        arfctl("mkdir", d.url("/pub/a"))
        arfctl("chmod", "777", d.url("/pub/a"))
        arfctl("mkdir", d.url("/closed"))
        arfctl("chmod", "700", d.url("/closed"))
        arfctl("mkdir", d.url("/closed/in"))
        # as uid 65534 over tcp: anonymous, no region keys, empty regions
        path = "pub/a/b/c"
        p = run(NOBODY + [harness.ARFCTL, "--json", "exec", "@mkdirp", d.url("/"), "ino",
                          "gen", "u32:%d" % len(path), "u32:%d" % 0o755, "u32:0",
                          "str:" + path], check=False) if NOBODY else None
        if p is None:
            self.skipTest("setpriv (util-linux) not installed")
        out = json.loads(p.stdout)
        st = json.loads(arfctl("--json", "stat", d.url("/pub/a/b/c")).stdout)
        print("anonymous mkdir -p pub/a/b/c through existing pub/a: r0 %d; c owned by uid %d"
              % (out["r0"], st["uid"]))
        self.assertEqual(out["r0"], 0, out)
        self.assertEqual(st["uid"], 65534)
        path = "closed/in/x"
        p = run(NOBODY + [harness.ARFCTL, "--json", "exec", "@mkdirp", d.url("/"), "ino",
                          "gen", "u32:%d" % len(path), "u32:%d" % 0o755, "u32:0",
                          "str:" + path], check=False)
        r0 = json.loads(p.stdout)["r0"]
        print("anonymous mkdir -p closed/in/x, closed being 0700 root's: r0 %d" % r0)
        self.assertEqual(r0, -13)  # -EACCES: no search permission in /closed
        self.assertNotEqual(arfctl("stat", d.url("/closed/in/x"), check=False).returncode, 0)


if __name__ == "__main__":
    harness.main()
