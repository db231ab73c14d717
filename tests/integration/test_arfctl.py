#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfctl's file commands that change attributes and names against a real
arfd: chmod (octal), chown (UID, UID:GID, :GID), ln (a hard link, into a
directory, refused for directories, across servers and onto an existing
name), each as the server answers it (the attributes read back with stat,
the bytes read back through the link), with the error line and exit status
users see; options after the command (`arfctl stats --prometheus`, `arfctl
stat URL --json`); numbers checked whole (`--max-hops abc` is bad usage);
a failed write of standard output reported (exit 1), not lost; and the
control socket's JSON (json-c on both sides): the stats object and the
Prometheus text agree, and arfd's error answers stay valid JSON whatever
the command line held."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ArfdTestCase, arfctl, ARFCTL  # noqa: E402


def stat(d, path):
    return json.loads(arfctl("--json", "stat", d.url(path)).stdout)


class Files(ArfdTestCase):
    def put(self, path, data=b"hello, arf\n"):
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            arfctl("put", f.name, self.arfd.url(path))

    def test_chmod(self):
        d = self.arfd
        self.put("/f")
        j = json.loads(arfctl("--json", "chmod", "0640", d.url("/f")).stdout)
        self.assertEqual((j["path"], j["mode"]), ("/f", 0o640))
        self.assertEqual(stat(d, "/f")["mode"], 0o640)
        arfctl("chmod", "4755", d.url("/f"))
        self.assertEqual(stat(d, "/f")["mode"], 0o4755)
        for bad in ("999", "12345", "rwx", "-1", ""):
            p = arfctl("chmod", bad, d.url("/f"), check=False)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn(b"not an octal mode", p.stderr)
        self.assertEqual(stat(d, "/f")["mode"], 0o4755)  # bad usage changed nothing
        p = arfctl("chmod", "600", d.url("/nothing"), check=False)
        self.assertEqual((p.returncode, p.stderr), (1, b"arfctl: chmod /nothing: No such file or "
                                                      b"directory\n"))
        print("chmod: 0640 and 4755 read back by stat; bad modes exit 2; a missing file exits 1")

    def test_chown(self):
        d = self.arfd
        self.put("/f")
        j = json.loads(arfctl("--json", "chown", "1234:5678", d.url("/f")).stdout)
        self.assertEqual((j["uid"], j["gid"]), (1234, 5678))
        arfctl("chown", ":99", d.url("/f"))
        st = stat(d, "/f")
        self.assertEqual((st["uid"], st["gid"]), (1234, 99))  # the group alone
        arfctl("chown", "77", d.url("/f"))
        st = stat(d, "/f")
        self.assertEqual((st["uid"], st["gid"]), (77, 99))  # the owner alone
        for bad in ("1:", ":", "a:b", "1:2:3", "-5", "4294967295", "99999999999"):
            p = arfctl("chown", bad, d.url("/f"), check=False)
            self.assertEqual(p.returncode, 2, bad)
        self.assertEqual((stat(d, "/f")["uid"], stat(d, "/f")["gid"]), (77, 99))
        print("chown: UID:GID, :GID and UID each change what they name; 7 bad forms exit 2")

    def test_not_permitted(self):
        # a file root owns; a caller claiming uid 4321 (AUTH_SYS) is not its owner
        d = self.arfd
        self.put("/f")
        arfctl("chmod", "644", d.url("/f"))
        for args in (("chmod", "777"), ("chown", "4321")):
            p = arfctl("--uid", "4321", "--gid", "4321", *args, d.url("/f"), check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr.decode(),
                             f"arfctl: {args[0]} /f: Operation not permitted\n")
        st = stat(d, "/f")
        self.assertEqual((st["mode"], st["uid"]), (0o644, 0))
        print("chmod/chown by a non-owner: 'Operation not permitted', exit 1, nothing changed")

    def test_ln(self):
        d = self.arfd
        data = os.urandom(5000)
        self.put("/f", data)
        arfctl("mkdir", d.url("/dir"))
        j = json.loads(arfctl("--json", "ln", d.url("/f"), d.url("/g")).stdout)
        self.assertEqual((j["target"], j["link"], j["nlink"]), ("/f", "/g", 2))
        j = json.loads(arfctl("--json", "ln", d.url("/f"), d.url("/dir")).stdout)
        self.assertEqual((j["link"], j["nlink"]), ("/dir/f", 3))
        f, g, h = stat(d, "/f"), stat(d, "/g"), stat(d, "/dir/f")
        self.assertEqual({f["ino"], g["ino"], h["ino"]}, {f["ino"]})
        self.assertEqual(f["nlink"], 3)
        self.assertEqual(arfctl("cat", d.url("/dir/f")).stdout, data)
        arfctl("rm", d.url("/f"))
        self.assertEqual(arfctl("cat", d.url("/g")).stdout, data)  # the link outlives the name
        self.assertEqual(stat(d, "/g")["nlink"], 2)
        p = arfctl("ln", d.url("/g"), d.url("/dir/f"), check=False)
        self.assertEqual((p.returncode, p.stderr), (1, b"arfctl: ln /dir/f: File exists\n"))
        p = arfctl("ln", d.url("/dir"), d.url("/dir2"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"arfctl: ln /dir2: ", p.stderr)
        p = arfctl("ln", d.url("/g"), "arf://127.0.0.1:1/x", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"Invalid cross-device link", p.stderr)
        p = arfctl("ln", d.url("/g"), check=False)
        self.assertEqual(p.returncode, 2)
        print("ln: one inode under three names, bytes read through the link, nlink counted; "
              "EEXIST, a directory and another server refused")

    def test_options_after_the_command(self):
        d = self.arfd
        self.put("/f")
        j = json.loads(arfctl("stat", d.url("/f"), "--json").stdout)
        self.assertEqual(j["path"], "/f")
        prom = arfctl("stats", "--prometheus", "--control", d.control).stdout.decode()
        self.assertIn("arf_requests_total{kind=\"create\"} 1", prom)
        before = arfctl("--prometheus", "stats", "--control", d.control).stdout.decode()
        names = lambda t: [ln.rsplit(" ", 1)[0] for ln in t.splitlines()]  # noqa: E731
        self.assertEqual(names(prom), names(before))  # the same metrics either way
        j = json.loads(arfctl("progs", "list", "--json", "--control", d.control).stdout)
        self.assertIsInstance(j, list)
        # "--" ends the options: what follows is an argument, even "--json"
        p = arfctl("stat", "--", "--json", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--json: not an ARF URL", p.stderr)
        # mkdir's -p and fsck's --data-dir stay the command's
        arfctl("mkdir", "-p", d.url("/a/b"), "--json")
        self.assertEqual(stat(d, "/a/b")["type"], "directory")
        print("options after the command: stat --json, stats --prometheus, progs list --json; "
              "'--' ends them; mkdir -p kept")

    def test_numbers_checked_whole(self):
        d = self.arfd
        for opt, val in (("--max-hops", "abc"), ("--timeout-ms", "10x"), ("--uid", "-1"),
                         ("--spin-us", ""), ("--out-max", "1e6"), ("--reconnect-ms", "99999999999")):
            p = arfctl(opt, val, "ls", d.url("/"), check=False)
            self.assertEqual(p.returncode, 2, (opt, val))
            self.assertIn(f"arfctl: {opt}: '{val}' is not a number".encode(), p.stderr)
        p = arfctl("ls", d.url("/"), "--uid", check=False)
        self.assertEqual((p.returncode, p.stderr), (2, b"arfctl: --uid needs a value\n"))
        print("numeric options: 6 malformed values and a missing one exit 2 with the option named")

    def test_full_standard_output(self):
        d = self.arfd
        self.put("/f", os.urandom(3000))
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        with open("/dev/full", "wb") as full:
            for args in (("cat", d.url("/f")), ("--json", "stat", d.url("/f")),
                         ("ls", d.url("/"))):
                p = subprocess.run([ARFCTL] + list(args), stdout=full, stderr=subprocess.PIPE,
                                   timeout=60)
                self.assertEqual(p.returncode, 1, args)
                self.assertIn(b"No space left on device", p.stderr)
        print("output to /dev/full: cat, stat --json and ls exit 1 with ENOSPC, not 0")


class Control(ArfdTestCase):
    def ask(self, line):
        """One raw exchange on the control socket: the answer's bytes."""
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.arfd.control)
            s.sendall(line + b"\n")
            out = b""
            while chunk := s.recv(65536):
                out += chunk
        return out

    def test_stats_json_and_prometheus_agree(self):
        d = self.arfd
        arfctl("mkdir", "-p", d.url("/a/b/c"))
        arfctl("ls", d.url("/a/b"))
        j = json.loads(arfctl("--control", d.control, "--json", "stats").stdout)
        prom = {}
        for line in arfctl("--control", d.control, "stats", "--prometheus").stdout.decode() \
                .splitlines():
            if not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                prom[name] = float(value)
        pairs = {'arf_requests_total{kind="mkdir"}': j["requests"]["mkdir"],
                 "arf_mutations_total": j["mutations"],
                 "arf_objects_written_total": j["objects_written"],
                 "arf_connections_accepted_total": j["connections"]["accepted"],
                 "arf_one_sided_reads_total": j["one_sided"]["reads"],
                 "arf_one_sided_writes_total": j["one_sided"]["writes"],
                 "arf_inodes_free": j["inodes"]["free"],
                 "arf_data_free_bytes": j["blocks"]["free"] * 4096,
                 "arf_program_load_hits_total": j["programs"]["load_hits"]}
        self.assertEqual(j["requests"]["mkdir"], 3)
        for name, value in pairs.items():
            self.assertEqual(prom[name], value, name)
        # every kind is a label in Prometheus; JSON lists the kinds seen
        kinds = [k for k in prom if k.startswith("arf_requests_total{")]
        self.assertGreater(len(kinds), len(j["requests"]))
        print(f"stats: {len(prom)} Prometheus samples; {len(pairs)} checked equal to the JSON")

    def test_error_answers_are_json(self):
        for line in (b'frob"\\\x01\x7f x', b"progs show zz", b"progs", b"scribble data 1"):
            ans = self.ask(line)
            self.assertTrue(ans.endswith(b"\n"), ans)
            j = json.loads(ans)
            self.assertEqual(list(j), ["error"], ans)
        self.assertEqual(json.loads(self.ask(b'frob"x'))["error"], "unknown command 'frob\"x'")
        print("control socket: 4 bad command lines answered with one valid {\"error\": ...} each")


if __name__ == "__main__":
    harness.main()
