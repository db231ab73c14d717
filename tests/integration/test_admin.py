#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfctl's management commands against a real arfd: status, stats (JSON
and Prometheus), clients, exports, checkpoint, config check, the control
socket's permission check, progs (list, show, disasm and unload of the
program cache, by unique hash prefix), and fsck — live (with the regions
compared to RocksDB) and offline on a stopped server's data directory,
finding each kind of damage that arf-inject puts into RocksDB, and none on a
healthy filesystem."""
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Arfd, ArfdTestCase, arfctl, run, ARFCTL  # noqa: E402

INJECT = os.path.join(harness.BUILD, "tests", "integration", "arf-inject")
HDR = struct.Struct("<IHHQiI")


def ctl(d, *args, check=True):
    return arfctl("--control", d.control, *args, check=check)


def ctl_json(d, *args):
    return json.loads(ctl(d, "--json", *args).stdout)


def make_tree(d):
    arfctl("mkdir", "-p", d.url("/a/b/c"))
    with tempfile.NamedTemporaryFile() as f:
        f.write(os.urandom(3 * 4096 + 100))
        f.flush()
        for name in ("/a/one", "/a/b/two", "/a/b/c/three"):
            arfctl("put", f.name, d.url(name))
    arfctl("mv", d.url("/a/b/two"), d.url("/a/two-moved"))
    arfctl("rm", d.url("/a/b/c/three"))


class Commands(ArfdTestCase):
    extra = {"server.test_hooks": "true"}

    def test_status_stats_clients_exports_checkpoint(self):
        d = self.arfd
        make_tree(d)
        st = ctl_json(d, "status")
        self.assertEqual(st["incarnation"], 1)
        self.assertIn("regions", st)
        s = ctl_json(d, "stats")
        self.assertGreaterEqual(s["requests"]["mkdir"], 3)
        self.assertGreater(s["mutations"], 0)
        self.assertGreater(s["connections"]["accepted"], 0)
        prom = ctl(d, "--prometheus", "stats").stdout.decode()
        for name in ("arf_requests_total{kind=\"mkdir\"}", "arf_mutations_total",
                     "arf_one_sided_reads_total", "arf_connections_open", "arf_uptime_seconds"):
            self.assertIn(name, prom)
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool missing (Debian prometheus, in scripts/deps.sh)")
        p = run([promtool, "check", "metrics"], input=prom.encode(), check=False)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr).decode())
        # a client holding a connection is listed
        s2 = socket.create_connection(("127.0.0.1", d.port))
        self.addCleanup(s2.close)
        body = struct.pack("<II", 1, 0) + b"/".ljust(256, b"\0")
        s2.sendall(HDR.pack(HDR.size + len(body), 1, 0, 0, 0, 1) + body)
        s2.recv(24)
        cl = ctl_json(d, "clients")["clients"]
        self.assertTrue(any(c["transport"] == "tcp" and c["ready"] for c in cl), cl)
        ex = ctl_json(d, "exports")["exports"]
        self.assertEqual(ex[0]["name"], "/")
        self.assertIs(ex[0]["sync"], False)  # the default: unstable writes until a COMMIT
        self.assertTrue(ctl_json(d, "checkpoint")["ok"])
        # stats through the data connection
        j = json.loads(arfctl("--json", "stats", d.url("/")).stdout)
        self.assertIn("server", j)
        print(f"stats: {len(prom.splitlines())} Prometheus lines"
              f" (promtool check metrics: clean); "
              f"{len(cl)} client(s) listed")

    def test_control_socket_refuses_others(self):
        d = self.arfd
        mode = os.stat(d.control).st_mode & 0o777
        self.assertEqual(mode, 0o600)
        setpriv = shutil.which("setpriv")
        if not setpriv:
            self.skipTest("setpriv (util-linux) not installed")
        p = run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", ARFCTL,
                 "--control", d.control, "status"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"Permission denied", p.stderr)

    def test_unknown_command_and_config_check(self):
        d = self.arfd
        p = arfctl("--control", d.control, "frobnicate", check=False)
        self.assertEqual(p.returncode, 2)
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write("[server]\nlisten = 127.0.0.1:1\n[export]\nsync = maybe\n")
            f.flush()
            p = arfctl("config", "check", f.name, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"{f.name}:4:".encode(), p.stderr)
        p = arfctl("config", "check", os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "deploy", "arfd.conf"))
        self.assertIn(b"valid", p.stdout)

    def test_fsck_live_finds_regions_diverging_from_rocksdb(self):
        d = self.arfd
        make_tree(d)
        p = ctl(d, "fsck")
        self.assertIn(b"0 problems", p.stdout)
        j = ctl_json(d, "fsck")
        self.assertEqual(j["count"], 0)
        self.assertGreater(j["rocksdb_objects_compared"], 0)
        ctl(d, "scribble", "data", "100")  # a byte of a written block, not persisted
        p = ctl(d, "fsck", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"regions-diverge", p.stdout)
        print("fsck live: clean, then: " + p.stdout.decode().strip().splitlines()[-1])


def ret_prog(n):
    """Raw bytecode of `mov %r0, n; exit` (2 instructions, 16 bytes)."""
    return struct.pack("<BBhi", 0xB7, 0, 0, n) + struct.pack("<BBhi", 0x95, 0, 0, 0)


def prog_hash(code):
    """arfd's cache key: the BLAKE2b-256 of the bytes as loaded."""
    return hashlib.blake2b(code, digest_size=32).hexdigest()


def recv_frame(s):
    """One frame: (header fields, body)."""
    buf = b""
    while len(buf) < HDR.size:
        chunk = s.recv(HDR.size - len(buf))
        if not chunk:
            raise AssertionError("connection closed")
        buf += chunk
    h = HDR.unpack(buf)
    body = b""
    while len(body) < h[0] - HDR.size:
        chunk = s.recv(h[0] - HDR.size - len(body))
        if not chunk:
            raise AssertionError("connection closed")
        body += chunk
    return h, body


def raw_exec_by_hash(d, digest):
    """PROG_EXEC of a hash without loading it first, as a client that loaded
    it earlier does: (wire status, error message)."""
    with socket.create_connection(("127.0.0.1", d.port)) as s:
        hello = struct.pack("<II", 1, 0) + b"/".ljust(256, b"\0")
        s.sendall(HDR.pack(HDR.size + len(hello), 1, 0, 1, 0, 1) + hello)
        h, _ = recv_frame(s)
        assert h[4] == 0, "HELLO refused: status %d" % h[4]
        body = (struct.pack("<III", os.getuid(), os.getgid(), 0) + bytes.fromhex(digest)
                + struct.pack("<II", 0, 0))  # out_max (default), no argument
        s.sendall(HDR.pack(HDR.size + len(body), 0x131, 0, 2, 0, 0) + body)
        h, rb = recv_frame(s)
        msg = b""
        if h[4] and len(rb) >= 16:  # prog_error: u32 pc, u64 insns, bytes(msg)
            n, = struct.unpack_from("<I", rb, 12)
            msg = rb[16:16 + n]
        return h[4], msg.decode(errors="replace")


ARF_WIRE_ENOPROG = 1009  # ARF_NET_S_ARF_BASE + (ARF_ERR_MAX - ARF_ENOPROG)


class Programs(ArfdTestCase):
    """arfctl progs: the program cache as arfd holds it."""

    def exec_file(self, path, *args):
        return json.loads(arfctl("--json", "exec", path, self.arfd.url("/"), *args).stdout)

    def listed(self):
        return {p["hash"]: p for p in ctl_json(self.arfd, "progs", "list")}

    def test_list_show_disasm_unload(self):
        d = self.arfd
        tmp = tempfile.TemporaryDirectory(prefix="arf-progs-")
        self.addCleanup(tmp.cleanup)
        code = ret_prog(7)
        h7 = prog_hash(code)
        path = os.path.join(tmp.name, "ret7.bin")
        with open(path, "wb") as f:
            f.write(code)
        # an empty cache lists nothing
        self.assertEqual(ctl(d, "progs", "list").stdout, b"")
        self.assertEqual(ctl_json(d, "progs", "list"), [])

        t0 = int(time.time())
        for _ in range(2):
            self.assertEqual(self.exec_file(path)["r0"], 7)
        lines = ctl(d, "progs", "list").stdout.decode().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith(h7 + "  2 insns/16 bytes  jit  loads 2  runs 2  "
                                            "insns executed 4  last used "), lines[0])
        p = self.listed()[h7]
        self.assertEqual((p["format"], p["insns"], p["bytes"], p["loads"], p["runs"],
                          p["insns_executed"], p["failures"]), ("bytecode", 2, 16, 2, 2, 4, 0))
        # [programs] jit is on by default: compiled once when loaded
        self.assertEqual(p["engine"], "jit")
        self.assertGreater(p["native_bytes"], 0)
        self.assertGreaterEqual(p["last_used"], t0 - 1)
        self.assertLessEqual(p["last_used"], int(time.time()) + 1)

        # the counters go up with each run
        self.assertEqual(self.exec_file(path)["r0"], 7)
        p2 = self.listed()[h7]
        self.assertEqual((p2["loads"], p2["runs"], p2["insns_executed"]), (3, 3, 6))
        self.assertGreaterEqual(p2["last_used"], p["last_used"])

        # show, by a unique prefix (either case)
        out = ctl(d, "progs", "show", h7[:8].upper()).stdout.decode()
        for want in ("hash: " + h7, "format: bytecode",
                     "engine: jit (%d bytes of native code)" % p["native_bytes"],
                     "size: 2 instructions, 16 bytes",
                     "loads: 3", "runs: 3 (0 failed, 0 running now)",
                     "instructions executed: 6"):
            self.assertIn(want, out)
        j = ctl_json(d, "progs", "show", h7[:8])["program"]
        self.assertEqual((j["hash"], j["runs"]), (h7, 3))

        # disasm: mobilecode's text, which assembles back to the same bytes
        out = ctl(d, "progs", "disasm", h7[:10]).stdout.decode()
        self.assertTrue(out.startswith("# program " + h7 + ": bytecode, 2 instructions"), out)
        self.assertEqual([ln for ln in out.splitlines() if not ln.startswith("#")],
                         ["mov %r0, 7", "exit"])
        j = ctl_json(d, "progs", "disasm", h7)
        self.assertEqual(j["disassembly"], "mov %r0, 7\nexit\n")
        src = os.path.join(tmp.name, "again.s")
        with open(src, "w") as f:
            f.write(out)
        self.assertEqual(self.exec_file(src)["r0"], 7)
        self.assertEqual(list(self.listed()), [h7])  # the same hash: the same program
        # an ELF program (libarf's standard lookup) disassembles too
        self.exec_file("@lookup", "u64:1", "u32:3", "u32:0", "str:zzz", "zero:253")
        elf = [p for p in ctl_json(d, "progs", "list") if p["format"] == "elf"]
        self.assertEqual(len(elf), 1, elf)
        text = ctl(d, "progs", "disasm", elf[0]["hash"]).stdout.decode()
        body = [ln for ln in text.splitlines() if not ln.startswith("#")]
        self.assertEqual(len([ln for ln in body if not ln.endswith(":")]) +
                         len([ln for ln in body if ln.startswith("lddw")]),
                         elf[0]["insns"], text)  # lddw takes two instruction slots
        self.assertIn("exit", body)
        self.assertEqual(ctl_json(d, "progs", "list")[0]["hash"], elf[0]["hash"],
                         "most recently used first")

        # unload: gone from the list; exec by its hash answers "unknown program"
        out = ctl(d, "progs", "unload", h7[:12]).stdout.decode()
        self.assertIn("unloaded " + h7, out)
        self.assertNotIn(h7, self.listed())
        p = ctl(d, "progs", "show", h7, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"no cached program", p.stderr)
        status, msg = raw_exec_by_hash(d, h7)
        self.assertEqual(status, ARF_WIRE_ENOPROG, msg)
        self.assertIn("unknown program", msg)
        # ... and libarf loads it again
        loads = ctl_json(d, "stats")["programs"]["loads"]
        self.assertEqual(self.exec_file(path)["r0"], 7)
        p = self.listed()[h7]
        self.assertEqual((p["loads"], p["runs"], p["insns_executed"]), (1, 1, 2))
        self.assertEqual(ctl_json(d, "stats")["programs"]["loads"], loads + 1)
        print(f"progs: {h7[:16]}... listed, shown, disassembled, unloaded "
              f"(exec by hash then: {msg!r}) and reloaded")

    def test_prefix_errors(self):
        d = self.arfd
        tmp = tempfile.TemporaryDirectory(prefix="arf-progs-")
        self.addCleanup(tmp.cleanup)
        # two programs whose hashes share their first two hex digits
        seen = {}
        for n in range(100000):
            h = prog_hash(ret_prog(n))
            if h[:2] in seen:
                a, b = seen[h[:2]], n
                break
            seen[h[:2]] = n
        ha, hb = prog_hash(ret_prog(a)), prog_hash(ret_prog(b))
        for n in (a, b):
            path = os.path.join(tmp.name, f"ret{n}.bin")
            with open(path, "wb") as f:
                f.write(ret_prog(n))
            self.assertEqual(self.exec_file(path)["r0"], n)
        common = os.path.commonprefix([ha, hb])
        # ambiguous: a clear error, exit 1, and unload drops nothing
        for sub in ("show", "disasm", "unload"):
            p = ctl(d, "progs", sub, common, check=False)
            self.assertEqual(p.returncode, 1, p.stdout)
            err = p.stderr.decode()
            self.assertIn(f"arfctl: progs {sub}: hash prefix '{common}' is ambiguous: "
                          "2 cached programs match", err)
        self.assertEqual(set(self.listed()), {ha, hb})
        # one more digit is unique
        j = ctl_json(d, "progs", "show", ha[:len(common) + 1])["program"]
        self.assertEqual(j["hash"], ha)
        # unknown: exit 1
        other = next(c for c in "0123456789abcdef" if c not in (ha[0], hb[0]))
        for sub in ("show", "disasm", "unload"):
            p = ctl(d, "progs", sub, other, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"no cached program has a hash starting with '{other}'",
                          p.stderr.decode())
        # not a hash, or bad usage: exit 2
        for args in (("show", "xyz"), ("show", "0" * 65), ("show", ""), ("show",),
                     ("unload", ha, hb), ("list", "x"), ("frobnicate",), ()):
            p = ctl(d, "progs", *args, check=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
        self.assertEqual(set(self.listed()), {ha, hb})
        print(f"progs: '{common}' is ambiguous between ret{a} and ret{b}; "
              f"'{ha[:len(common) + 1]}' is unique; '{other}' is unknown")


class Offline(unittest.TestCase):
    KINDS = {
        "dangling": "dangling-entry",
        "linkcount": "link-count",
        "leakedblock": "leaked-block",
        "doubleblock": "double-block",
        "tagmismatch": "block-tag",
        "blockbytes": "block-csum",
    }

    def test_each_kind_of_damage(self):
        tmp = tempfile.TemporaryDirectory(prefix="arf-fsck-")
        self.addCleanup(tmp.cleanup)
        d = Arfd(workdir=tmp.name)
        self.addCleanup(d.stop)
        d.start()
        make_tree(d)
        # a running server's directory is refused with a clear reason
        p = arfctl("fsck", "--data-dir", d.data_dir, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"control socket", p.stderr)
        self.assertEqual(d.stop(), 0)
        p = arfctl("fsck", "--data-dir", d.data_dir)
        self.assertIn(b"0 problems", p.stdout)
        found = []
        for kind, want in self.KINDS.items():
            with self.subTest(kind=kind):
                copy = os.path.join(tmp.name, "copy-" + kind)
                shutil.copytree(d.data_dir, copy)
                what = run([INJECT, copy, kind]).stdout.decode().strip()
                p = arfctl("fsck", "--data-dir", copy, check=False)
                out = p.stdout.decode()
                self.assertEqual(p.returncode, 1, out)
                self.assertIn(want + ":", out)
                j = json.loads(arfctl("--json", "fsck", "--data-dir", copy, check=False).stdout)
                self.assertIn(want, [x["kind"] for x in j["problems"]])
                found.append(f"{kind} ({what}) -> {want}")
        print("fsck offline: healthy = 0 problems; " + "; ".join(found))


if __name__ == "__main__":
    harness.main()
