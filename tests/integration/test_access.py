#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Access control against a real arfd: the export's client list, the shared
secret (challenge-response; a wrong or missing secret is refused with a
clear message and nothing else), who gets region keys (one_sided =
all|root|none), root squashing, and shm peers that claim another identity
(they act as what SO_PEERCRED says)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Arfd, arfctl, run, ARFCTL  # noqa: E402


def started(testcase, **extra):
    d = Arfd(extra={k.replace("__", "."): v for k, v in extra.items()})
    testcase.addCleanup(d.cleanup)
    d.start()
    return d


def stats_of(*args):
    j = json.loads(arfctl("--json", "--stats", *args).stdout)
    return j["stats"]


class Clients(unittest.TestCase):
    def test_client_list(self):
        d = started(self, export__clients="10.9.9.0/24")
        for t in ("tcp", "shm"):
            p = arfctl("status", d.url("/", t), check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"not in this export's clients list", p.stderr, p.stderr)
        self.assertIsNone(d.proc.poll())
        d2 = started(self, export__clients="127.0.0.1/32")
        arfctl("status", d2.url("/", "tcp"))
        p = arfctl("status", d2.url("/", "shm"), check=False)
        self.assertIn(b"not in this export's clients list", p.stderr)
        d3 = started(self, export__clients="::1, unix")
        arfctl("status", d3.url("/", "shm"))
        p = arfctl("status", d3.url("/", "tcp"), check=False)
        self.assertIn(b"clients list", p.stderr)
        print("clients: 10.9.9.0/24 refuses loopback; 127.0.0.1/32 takes tcp, not shm; "
              "'::1, unix' takes shm, not 127.0.0.1")


class Secret(unittest.TestCase):
    def write_secret(self, name, text, mode=0o600):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="arf-secret-")
        self.addCleanup(self.tmp.cleanup)

    def test_challenge_response(self):
        good = self.write_secret("good", "correct horse battery staple\n")
        bad = self.write_secret("bad", "something else\n")
        d = started(self, export__secret_file=good, export__one_sided="root")
        for t in ("tcp", "shm"):
            p = arfctl("status", d.url("/", t), check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"needs the shared secret", p.stderr, p.stderr)
            p = arfctl("--secret-file", bad, "status", d.url("/", t), check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"wrong shared secret", p.stderr, p.stderr)
            arfctl("--secret-file", good, "mkdir", "-p", d.url("/s/" + t, t))
            # the secret proves root on the client: region keys, one-sided reads
            s = stats_of("--secret-file", good, "stat", d.url("/s/" + t, t))
            self.assertGreater(s["one_sided_reads"], 0, s)
        self.assertIsNone(d.proc.poll())
        print("secret: none or wrong refused on tcp and shm; right one accepted, with region keys")

    def test_secret_file_must_be_private(self):
        loose = self.write_secret("loose", "s3cret\n", 0o644)
        d = Arfd(extra={"export.secret_file": loose})
        self.addCleanup(d.cleanup)
        with self.assertRaises(RuntimeError) as cm:
            d.start()
        self.assertIn("readable by others", str(cm.exception))

    def test_servers_secret_is_not_the_clients(self):
        """[cell] move_secret_file keys the cell's credential tokens: the
        secret clients hold ([export] secret_file) must not be it, even in
        another file."""
        one = self.write_secret("one", "s3cret\n", 0o600)
        two = self.write_secret("two", "s3cret\n", 0o600)
        d = Arfd(extra={"export.secret_file": one, "cell.move_secret_file": two})
        self.addCleanup(d.cleanup)
        with self.assertRaises(RuntimeError) as cm:
            d.start()
        self.assertIn("holds the same secret as [export] secret_file", str(cm.exception))


class OneSided(unittest.TestCase):
    def test_who_gets_region_keys(self):
        # root (the default): root on the client host gets keys -- over tcp
        # libarf connects from a reserved port, over shm the kernel says
        # uid 0; an unprivileged user, over tcp or shm, gets none and is
        # served by requests (which check permissions)
        setpriv = shutil.which("setpriv")
        if not setpriv:
            self.skipTest("setpriv (util-linux) not installed")
        nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        d = started(self)
        os.chmod(d.workdir, 0o755)
        os.chmod(d.socket, 0o777)
        arfctl("mkdir", d.url("/k"))
        for t in ("tcp", "shm"):
            s = stats_of("stat", d.url("/k", t))
            self.assertGreater(s["one_sided_reads"], 0, (t, s))
            self.assertEqual(s["requests"], 0, (t, s))
            p = run(nobody + [ARFCTL, "--json", "--stats", "stat", d.url("/k", t)])
            s = json.loads(p.stdout)["stats"]
            self.assertEqual(s["one_sided_reads"], 0, (t, s))
            self.assertGreater(s["requests"], 0, (t, s))
        # a root client that asks for no reserved port is not proven root
        s = stats_of("--no-resvport", "stat", d.url("/k", "tcp"))
        self.assertEqual(s["one_sided_reads"], 0, s)
        d2 = started(self, export__one_sided="none")
        arfctl("mkdir", d2.url("/k"))
        for t in ("tcp", "shm"):
            s = stats_of("stat", d2.url("/k", t))
            self.assertEqual(s["one_sided_reads"], 0, s)
        d3 = started(self, export__one_sided="all")
        arfctl("mkdir", d3.url("/k"))
        p = run(nobody + [ARFCTL, "--json", "--stats", "stat", d3.url("/k", "tcp")])
        self.assertGreater(json.loads(p.stdout)["stats"]["one_sided_reads"], 0)
        print("one_sided=root (default): root over tcp (reserved port) and shm one-sided, "
              "uid 65534 and a root client from an unprivileged port requests only; "
              "none: requests only; all: uid 65534 one-sided too")


class Identity(unittest.TestCase):
    def test_root_squash(self):
        # Squashed requests act as anon_uid/anon_gid (4321/4322 here, so
        # that they cannot be taken for nobody): what a squashed root makes
        # is theirs, root's directory refuses it, and root's 0600 file stays
        # closed to it over every transport.
        d = started(self)  # not squashed yet: root sets the scene
        arfctl("mkdir", d.url("/pub"))
        run([harness.ITEST, "setattr", d.url("/pub"), "1777", "0", "0"])
        arfctl("put", "-", d.url("/secret"), input=b"root's secret\n")
        run([harness.ITEST, "setattr", d.url("/secret"), "600", "0", "0"])
        d.extra.update({"export.root_squash": "true", "export.anon_uid": "4321",
                        "export.anon_gid": "4322"})
        d.restart()
        for t in harness.TRANSPORTS:
            p = arfctl("mkdir", d.url("/x-" + t, t), check=False)
            self.assertEqual(p.returncode, 1, (t, p.stderr))
            self.assertIn(b"Permission denied", p.stderr)
            arfctl("put", "-", d.url("/pub/made-" + t, t), input=b"squashed\n")
            st = harness.arfctl_json("stat", d.url("/pub/made-" + t, t))
            self.assertEqual((st["uid"], st["gid"]), (4321, 4322), (t, st))
            p = arfctl("cat", d.url("/secret", t), check=False)
            self.assertEqual(p.returncode, 1, (t, p.stdout))
            self.assertNotIn(b"secret", p.stdout)
            self.assertIn(b"Permission denied", p.stderr)
        d2 = started(self)  # the harness's configuration, as the embedded one, does not squash
        arfctl("put", "-", d2.url("/mine"), input=b"root's\n")
        self.assertEqual(harness.arfctl_json("stat", d2.url("/mine"))["uid"], 0)
        print("root_squash: root's files made as 4321:4322 (anon_uid/gid), root's directory "
              "and 0600 file refused over %s" % ", ".join(harness.TRANSPORTS))

    def test_shm_peer_cannot_claim_root(self):
        setpriv = shutil.which("setpriv")
        if not setpriv:
            self.skipTest("setpriv (util-linux) not installed")
        d = started(self)
        arfctl("mkdir", d.url("/rootonly"))  # 0755, owned by root
        os.chmod(d.workdir, 0o755)
        os.chmod(d.socket, 0o777)
        nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        # over shm the kernel says who the peer is: claiming uid 0 does not help
        p = run(nobody + [ARFCTL, "--uid", "0", "--gid", "0", "mkdir", d.url("/rootonly/x", "shm")],
                check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn(b"mkdir /rootonly/x: Permission denied", p.stderr)  # connected, refused
        # root itself, over the same socket, may (the refusal was the identity)
        arfctl("--uid", "0", "--gid", "0", "mkdir", d.url("/rootonly/x", "shm"))
        print("shm: a peer with uid 65534 claiming uid 0 was refused (acts as 65534)")


if __name__ == "__main__":
    harness.main()
