#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfctl's management commands against a real arfd: status, stats (JSON
and Prometheus), clients, exports, checkpoint, config check, the control
socket's permission check, and fsck — live (with the regions compared to
RocksDB) and offline on a stopped server's data directory, finding each
kind of damage that arf-inject puts into RocksDB, and none on a healthy
filesystem."""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
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
        self.assertTrue(ex[0]["sync"])
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
