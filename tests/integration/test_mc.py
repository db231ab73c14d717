#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mobile code against a real arfd: the shipped chain lookup in a directory
forced to have long hash chains (regions.dir_hash_mask), a path 32 deep
in one execution, the readdir program, libarf's automatic thresholds
differing by transport (and explicit ones honoured on every transport), a
runaway program stopped at its budget while another client carries on,
memory accesses and programs the server refuses (with messages that say
where), mkdir -p in one round trip with the request's permission checks
and persistence, and reloading of evicted programs."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Arfd, ArfdTestCase, BUILD, arfctl, run  # noqa: E402

MCTEST = os.path.join(BUILD, "tests", "integration", "arf-mctest")


class LongChains(ArfdTestCase):
    # 4 buckets' worth of hash bits: 400 names make chains of about 100
    extra = {"regions.dir_hash_mask": "3", "server.workers": "2"}

    def test_shipped_lookup_deep_in_a_chain(self):
        for i, t in enumerate(harness.TRANSPORTS):
            with self.subTest(transport=t):
                url = self.arfd.url("/", t)
                if i:
                    # a fresh directory name for each later transport
                    arfctl("mv", self.arfd.url("/chain"), self.arfd.url("/chain-%d" % i))
                p = run([MCTEST, "chain", url, "400"])
                print(p.stdout.decode().strip())


    @staticmethod
    def library_policy(url):
        """libarf's automatic thresholds (ARF_OPT_AUTO) for url's transport,
        as the library reports them (arf_client_policy, through arfctl
        --stats): the test never re-types arf.h's numbers."""
        return json.loads(arfctl("--json", "--stats", "stat", url).stdout)["stats"]["policy"]

    def test_policy_depends_on_transport(self):
        """Under the defaults, over tcp a lookup deep in a chain ships, a
        35-component path ships, a 1101-entry listing goes by READDIR
        requests and readdirplus by READDIRPLUS requests; over shm all of it
        stays one-sided, with no execution, request or fallback.  A client
        given no regions lists with attributes by READDIRPLUS on every
        transport, not a GETATTR a child.  The counters say which."""
        for t in harness.TRANSPORTS:
            with self.subTest(transport=t):
                # a fresh arfd a transport; 1100 files, past tcp's
                # readdir_req_min, in 16 buckets' worth of hash bits: chains
                # of about 70, past tcp's max_hops, well below shm's 256
                d = Arfd(extra=dict(self.extra, **{"regions.dir_hash_mask": "15"}))
                self.addCleanup(d.cleanup)
                d.start()
                pols = {tr: self.library_policy(d.url("/", tr)) for tr in ("tcp", "shm", t)}
                p = run([MCTEST, "policy", d.url("/", t), "1100", "auto"])
                d.cleanup()
                out = p.stdout.decode()
                print(out.strip())
                r = json.loads(out)
                pol = pols[t]
                self.assertEqual(r["transport"], t)
                # arf-mctest's client and arfctl's got the same thresholds
                self.assertEqual(r["policy"], pol)
                self.assertEqual(r["entries"], 1101)
                # what follows holds only if the transports' thresholds
                # differ as arf.h says they do (shm walks further, ships less)
                self.assertLess(pols["tcp"]["max_hops"] + 1, pols["shm"]["max_hops"], pols)
                self.assertGreater(pols["tcp"]["readdirplus_exec_min"], 0, pols)
                self.assertEqual(pols["shm"]["readdir_req_min"], 0, pols)
                # the chain is long enough for tcp to ship, short enough for shm not to
                self.assertGreater(r["chain_position"], pols["tcp"]["max_hops"] + 1)
                self.assertLessEqual(r["chain_position"], pols["shm"]["max_hops"])
                self.assertGreater(r["entries"], pols["tcp"]["readdir_req_min"])
                lk, rs, rd, rp = r["lookup"], r["resolve"], r["readdir"], r["readdirplus"]
                if t == "shm":
                    for name, d in (("lookup", lk), ("resolve", rs), ("readdir", rd),
                                    ("readdirplus", rp)):
                        self.assertEqual((d["execs"], d["requests"], d["fallbacks"]), (0, 0, 0),
                                         name)
                    # every entry of the chain, then the child's inode
                    self.assertEqual(lk["rounds"], r["chain_position"] + 1)
                    self.assertGreaterEqual(rs["rounds"], r["components"])
                    self.assertGreater(rd["reads"], r["entries"])
                else:
                    # the walk's max_hops + 1 rounds, one execution, nothing after it
                    self.assertEqual(lk["rounds"], pol["max_hops"] + 1)
                    self.assertEqual((lk["execs_hops"], lk["fallbacks_hops"], lk["requests"]),
                                     (1, 1, 0))
                    self.assertEqual((rs["execs_path"], rs["requests"]), (1, 0))
                    self.assertEqual(rd["execs"], 0)
                    self.assertGreaterEqual(rd["requests_readdir"], 9)  # 1101 in batches of 128
                    self.assertEqual(rd["requests"], rd["requests_readdir"])
                    self.assertEqual(rd["fallbacks_policy"], rd["requests_readdir"])
                    # READDIRPLUS: arfd reads entries and inodes in place,
                    # where the readdir program copies and checks each
                    # (counted as "other": the kinds' list is libarf's ABI)
                    self.assertEqual(rp["execs"], 0)
                    self.assertGreaterEqual(rp["requests"], 9)
                    self.assertLessEqual(rp["requests"], 9 + 1 + 1101 // 16 + 1)
                    self.assertEqual((rp["requests_readdir"], rp["requests_lookup"]), (0, 0))
                # requests alone: READDIRPLUS batches of 128 and the check's
                # GETATTR of every 16th entry (a GETATTR a child: over 1,100)
                rq = r["readdirplus_requests_only"]
                self.assertGreaterEqual(rq["requests"], 9)
                self.assertLessEqual(rq["requests"], 9 + 1 + 1101 // 16 + 1)
                self.assertEqual((rq["execs"], rq["requests_readdir"]), (0, 0))

    def test_arfctl_shows_policy_and_honours_max_hops(self):
        for t in harness.TRANSPORTS:
            with self.subTest(transport=t):
                url = self.arfd.url("/", t)
                auto = self.library_policy(url)
                self.assertNotEqual(auto["max_hops"], 5)
                j = json.loads(arfctl("--json", "--stats", "--max-hops", "5", "stat", url).stdout)
                # the one threshold given is used as given; the others stay automatic
                self.assertEqual(j["stats"]["policy"], dict(auto, max_hops=5))


class DeepPath(ArfdTestCase):
    def test_depth_32_in_one_execution(self):
        # resolve_exec_depth is set explicitly (8): it holds on every transport
        for i, t in enumerate(harness.TRANSPORTS):
            with self.subTest(transport=t):
                if i:
                    arfctl("mv", self.arfd.url("/d00"), self.arfd.url("/d00-%d" % i))
                p = run([MCTEST, "deep", self.arfd.url("/", t), "32"])
                print(p.stdout.decode().strip())


class BigDirectory(ArfdTestCase):
    def test_readdir_program(self):
        # readdir_exec_min is set explicitly (256): it holds on every transport
        for i, t in enumerate(harness.TRANSPORTS):
            with self.subTest(transport=t):
                if i:
                    arfctl("mv", self.arfd.url("/big"), self.arfd.url("/big-%d" % i))
                p = run([MCTEST, "readdir", self.arfd.url("/", t), "600"])
                print(p.stdout.decode().strip())


class Runaway(ArfdTestCase):
    # a budget too large to matter: the wall-clock limit stops the loop
    extra = {"server.workers": "2", "programs.max_insns": "1000000000000",
             "programs.max_wall_ms": "2000"}

    def test_loop_forever_is_stopped_others_carry_on(self):
        for t in harness.TRANSPORTS:
            with self.subTest(transport=t):
                p = run([MCTEST, "runaway", self.arfd.url("/", t)])
                print(p.stdout.decode().strip())


class Budget(ArfdTestCase):
    extra = {"programs.max_insns": "100000"}

    def test_instruction_budget(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "loop.s")
            with open(src, "w") as f:
                f.write("mov %r0, 0\nloop:\nadd %r0, 1\nja loop\n")
            p = arfctl("exec", src, self.arfd.url("/"), check=False)
            self.assertEqual(p.returncode, 1)
            err = p.stderr.decode()
            self.assertIn("instruction budget of 100000 exhausted", err)
            self.assertIn("instruction ", err)
        # the server counts it: arfctl stats over the control socket
        st = json.loads(arfctl("--control", self.arfd.control, "--json", "stats").stdout)
        self.assertGreaterEqual(st["programs"]["execs"], 1, st)
        self.assertGreaterEqual(st["programs"]["budget_stops"], 1, st)
        self.assertGreaterEqual(st["programs"]["insns"], 100000, st)


class Refusals(ArfdTestCase):
    """Programs and accesses the server refuses, each with a clear message."""

    CASES = {
        # name: (assembly, expected code text, expected words in the message)
        "load_out_of_bounds": (
            "lddw %r1, 0x5000000000000\nlddw %r2, 0x7fffffffff\nadd %r1, %r2\n"
            "ldxdw %r0, [%r1]\nexit\n",
            "out of bounds", ["instruction 5", "load of 8 bytes", "0x5007fffffffff",
                              "out of bounds of the exported META region"]),
        "store_out_of_bounds": (
            "mov %r0, 0\nstxdw [%r10+8], %r0\nexit\n",
            "out of bounds", ["instruction 1", "store of 8 bytes", "out of bounds of the stack"]),
        "store_into_meta": (
            "mov %r0, 0\nlddw %r1, 0x5000000000000\nstxdw [%r1], %r0\nexit\n",
            "out of bounds", ["instruction 3", "store of 8 bytes at 0x5000000000000",
                              "exported META region is read-only"]),
        "store_into_data": (
            "mov %r0, 0\nlddw %r1, 0x6000000000000\nstw [%r1+16], 1\nexit\n",
            "out of bounds", ["instruction 3", "store of 4 bytes at 0x6000000000010",
                              "exported DATA region is read-only"]),
        "null_load": (
            "mov %r1, 0\nldxb %r0, [%r1]\nexit\n",
            "out of bounds", ["instruction 1", "load of 1 bytes at 0x0"]),
        "write_r10": (
            "mov %r10, 1\nmov %r0, 0\nexit\n",
            "verifier", ["instruction 0", "r10"]),
        "unknown_helper": (
            "call 200\nexit\n",
            "verifier", ["instruction 0", "helper"]),
        "jump_out": (
            "mov %r0, 0\nja +5\nexit\n",
            "verifier", ["instruction 1"]),
        "falls_off": (
            "mov %r0, 0\n",
            "verifier", ["instruction 0"]),
        "helper_bad_pointer": (
            "mov %r1, 8\nmov %r2, 8\ncall 1\nmov %r0, 0\nexit\n",
            "out of bounds", ["instruction 2", "helper emit", "0x8", "not readable"]),
    }

    def test_refused_with_messages(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, (asm, code, words) in self.CASES.items():
                with self.subTest(case=name):
                    src = os.path.join(tmp, name + ".s")
                    with open(src, "w") as f:
                        f.write(asm)
                    p = arfctl("exec", src, self.arfd.url("/"), check=False)
                    err = p.stderr.decode()
                    print("%s: %s" % (name, err.strip()))
                    self.assertEqual(p.returncode, 1, err)
                    self.assertIn(code, err)
                    for w in words:
                        self.assertIn(w, err)
        # the server is unharmed and still runs programs
        p = arfctl("--json", "--stats", "exec", "@lookup", self.arfd.url("/"), "u64:1",
                   "u32:3", "u32:0", "str:zzz", "zero:253")
        out = json.loads(p.stdout)
        self.assertEqual(out["r0"], -2)  # -ENOENT
        self.assertEqual(out["stats"]["execs"], 1)
        self.assertEqual(out["stats"]["requests"], 0)


class MkdirP(ArfdTestCase):
    def test_mkdir_p_one_round_trip(self):
        url = self.arfd.url("/")
        path = "a/b/c/d"
        p = arfctl("--json", "--stats", "exec", "@mkdirp", url, "ino", "gen",
                   "u32:%d" % len(path), "u32:%d" % 0o755, "u32:0", "str:" + path)
        out = json.loads(p.stdout)
        self.assertEqual(out["r0"], 0, out)
        self.assertEqual(out["stats"]["execs"], 1)
        self.assertEqual(out["stats"]["requests"], 0)  # "/" (ino, gen) is read one-sidedly
        ino = int.from_bytes(bytes.fromhex(out["output_hex"])[:8], "little")
        st = json.loads(arfctl("--json", "stat", self.arfd.url("/a/b/c/d")).stdout)
        self.assertEqual(st["ino"], ino)
        # again: every component exists, found by the program's own chain walk
        p = arfctl("--json", "exec", "@mkdirp", url, "ino", "gen",
                   "u32:%d" % len(path), "u32:%d" % 0o755, "u32:0", "str:" + path)
        self.assertEqual(json.loads(p.stdout)["r0"], 0)
        # the same permission checks as requests: another user may not write in /
        p = arfctl("--json", "--uid", "4321", "--gid", "4321", "exec", "@mkdirp", url, "ino",
                   "gen", "u32:7", "u32:%d" % 0o755, "u32:0", "str:x/y/z/w")
        self.assertEqual(json.loads(p.stdout)["r0"], -13)  # -EACCES
        self.assertNotEqual(arfctl("stat", self.arfd.url("/x"), check=False).returncode, 0)
        # persisted as requests are: still there after SIGKILL and restart
        self.arfd.restart(kill=True)
        st = json.loads(arfctl("--json", "stat", self.arfd.url("/a/b/c/d")).stdout)
        self.assertEqual(st["ino"], ino)


class Reload(ArfdTestCase):
    extra = {"programs.cache_size": "1"}

    def test_evicted_program_reloads(self):
        p = run([MCTEST, "reload", self.arfd.url("/")])
        print(p.stdout.decode().strip())

    def test_after_restart(self):
        url = self.arfd.url("/")
        run([MCTEST, "reload", url])
        self.arfd.restart()
        run([MCTEST, "reload", url])


class Disabled(ArfdTestCase):
    extra = {"programs.enable": "false"}

    def test_refused(self):
        p = arfctl("exec", "@lookup", self.arfd.url("/"), "zero:272", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("disabled", p.stderr.decode())


if __name__ == "__main__":
    harness.main()
