# SPDX-License-Identifier: MIT
"""arfd in a cell against a real etcd (tests/lib/arfproc.py's Etcd and
Arfd, each on free loopback ports with a data directory of its own,
stopped by pid even when a test fails): two arfd register under leases and
`arfctl cell status` lists both, with a volume record put by etcdctl; a
killed arfd disappears after its lease's TTL (2 s here), a stopped one at
once (its lease revoked); etcd restarted with its data, and with none,
mid-run: arfd serves on and is listed again; etcd down at arfd's start:
arfd serves, says why it is not registered, and registers once etcd is up;
[cell] checked at start; arfctl against a peer that is not etcd: a clear
message, exit 1.  Volumes (docs/volumes.md): arfd records those it serves
(online, offline at a clean stop, another server's record left alone);
LOCATE answers from each server's watched copy, with etcd down too; a
client of a stale location is sent on ("moved") or told the server is
down.  Mount points across servers: three servers' volumes under one
FUSE mount, with a tar extraction and a verifying fio job across them; a
mount point on one server naming a
volume on another is crossed over tcp, shm and a FUSE mount; a killed
server keeps only the callers of its volume waiting (64 of them on a hard
mount), not the rest of the tree.  These last three run each server in a
network namespace of its own, joined to the test's by a veth pair (an
address each, as on three hosts), where the machine allows; on loopback
ports otherwise."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ARFCTL, Arfd, arfctl  # noqa: E402
import arfproc  # noqa: E402
import cellcase  # noqa: E402
from cellcase import CellCase, JunkHttp, wait_until  # noqa: E402

CELL = cellcase.CELL
TTL = cellcase.TTL


def status(etcd, check=True):
    p = arfctl("--json", "cell", "status", "--etcd", etcd.url, "--cell", CELL, check=check)
    return json.loads(p.stdout) if p.returncode == 0 else None


def servers(etcd):
    s = status(etcd, check=False)
    return {x["id"]: x for x in s["servers"]} if s else None


def volumes(etcd):
    s = status(etcd, check=False)
    return {v["name"]: (v["server"], v["state"], v["version"]) for v in s["volumes"]} if s else {}


class Cell(CellCase):
    def test_two_servers_lease_and_stop(self):
        self.etcd.start()
        a, b = self.arfd("a"), self.arfd("b")
        wait_until(lambda: set(servers(self.etcd) or ()) == {"a", "b"}, 15, "a and b listed")
        s = servers(self.etcd)
        self.assertEqual((s["a"]["address"], s["a"]["port"]), ("127.0.0.1", a.port))
        self.assertEqual((s["b"]["address"], s["b"]["port"]), ("127.0.0.1", b.port))
        self.assertNotEqual(s["a"]["lease"], s["b"]["lease"])
        # a volume record (issue 18's volumes are not built: etcdctl puts one) is listed
        rec = {"name": "root", "server": "a", "state": "online", "version": 1}
        arfproc.run(["etcdctl", "--endpoints", self.etcd.url, "put",
                     "/arf/%s/volumes/root" % CELL, json.dumps(rec)],
                    env=dict(os.environ, ETCDCTL_API="3"))
        st = status(self.etcd)
        self.assertEqual([(v["name"], v["server"], v["state"], v["version"]) for v in st["volumes"]],
                         [("root", "a", "online", 1)])
        text = arfctl("cell", "status", "--etcd", self.etcd.url, "--cell", CELL).stdout.decode()
        self.assertIn("servers: 2", text)
        self.assertIn("volumes: 1", text)
        self.assertRegex(text, r"\n  a +127\.0\.0\.1 +%d " % a.port)
        # killed: no revoke, the record goes when the lease runs out
        b.kill()
        t0 = time.time()
        gone = wait_until(lambda: set(servers(self.etcd) or ("x",)) == {"a"}, TTL + 8,
                          "killed b gone")
        self.assertGreater(gone + 0.2, TTL / 3, "b vanished before its lease could expire")
        print("killed arfd gone from the cell after %.1f s (TTL %d s)" % (gone, TTL))
        # a keeps renewing well past the TTL
        time.sleep(max(0, TTL + 0.5 - (time.time() - t0)))
        self.assertEqual(set(servers(self.etcd)), {"a"})
        # stopped (SIGTERM): it revokes its lease and is gone at once
        self.assertEqual(a.stop(), 0)
        self.assertEqual(servers(self.etcd), {})
        self.assertIn("left the cell (lease revoked)", a.log())

    def test_etcd_restart(self):
        self.etcd.start()
        a = self.arfd("a")
        wait_until(lambda: "a" in (servers(self.etcd) or {}), 15, "a listed")
        lease = servers(self.etcd)["a"]["lease"]
        # down longer than the TTL, then back with its data: etcd keeps the
        # lease (and extends it); arfd serves throughout and renews it again
        self.etcd.stop()
        time.sleep(TTL + 1)
        arfctl("ls", a.url("/"))
        p = arfctl("cell", "status", "--etcd", self.etcd.url, "--cell", CELL, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"arfctl: cell status: etcd %s/v3/kv/range: " % self.etcd.url.encode(),
                      p.stderr)
        self.etcd.start()
        wait_until(lambda: "a" in (servers(self.etcd) or {}), 10, "a listed after a restart")
        time.sleep(TTL + 1)  # still there past a TTL: the renewals work again
        self.assertEqual(servers(self.etcd)["a"]["lease"], lease)
        self.assertIn("cannot renew the lease of 'a'", a.log())
        # back with nothing (its data lost): arfd registers again, a new lease
        self.etcd.restart(wipe=True)
        took = wait_until(lambda: "a" in (servers(self.etcd) or {}), 10,
                          "a registered again in an empty etcd")
        self.assertNotEqual(servers(self.etcd)["a"]["lease"], lease)
        self.assertEqual(servers(self.etcd)["a"]["port"], a.port)
        self.assertIn("is gone", a.log())
        arfctl("ls", a.url("/"))
        print("etcd restarted empty: arfd registered again in %.1f s" % took)

    def test_etcd_down_at_start(self):
        # etcd not started yet: arfd serves at once, and says why it is not registered
        a = self.arfd("a")
        arfctl("ls", a.url("/"))
        wait_until(lambda: "cannot register 'a'" in a.log(), 10, "the reason logged")
        self.assertIn("Failed to connect to 127.0.0.1 port %d" % self.etcd.port, a.log())
        self.assertIn("serving continues", a.log())
        self.etcd.start()
        took = wait_until(lambda: "a" in (servers(self.etcd) or {}), 10, "a registered late")
        print("etcd up after arfd: registered %.1f s later" % took)

    def test_two_servers_one_id(self):
        # the second arfd with a's id waits, and says who holds the id
        self.etcd.start()
        a = self.arfd("a")
        wait_until(lambda: "a" in (servers(self.etcd) or {}), 15, "a listed")
        a2 = self.arfd("a", work="a2")
        wait_until(lambda: "is held in cell" in a2.log(), 10, "the conflict logged")
        self.assertEqual(servers(self.etcd)["a"]["port"], a.port)
        # once a is gone, a2 takes the id
        a.stop()
        wait_until(lambda: (servers(self.etcd) or {}).get("a", {}).get("port") == a2.port, 10,
                   "a2 registered")

    def test_volume_records(self):
        """arfd records the volumes it serves (docs/volumes.md): its root one
        under [cell] root_volume, each [volume NAME] and each made by
        arfctl vol create (withdrawn by vol rm), online on this server; offline at a clean stop, online again at the next start; a
        record that names another server is left alone, with a warning."""
        self.etcd.start()
        a = self.arfd("a", extra={"cell.root_volume": "root"}, config="[volume proj]\n")
        wait_until(lambda: len(volumes(self.etcd)) == 2, 15, "a's volumes recorded")
        self.assertEqual(volumes(self.etcd), {"root": ("a", "online", 1),
                                              "proj": ("a", "online", 1)})
        text = arfctl("cell", "status", "--etcd", self.etcd.url, "--cell", CELL).stdout.decode()
        self.assertIn("volumes: 2", text)
        # b serves a volume of the same name: a's record stays
        b = self.arfd("b", config="[volume proj]\n")
        wait_until(lambda: "recorded on server 'a'" in b.log(), 15, "b's warning")
        self.assertIn("volume 'proj' is recorded on server 'a' (online), not on 'b'", b.log())
        self.assertEqual(volumes(self.etcd)["proj"], ("a", "online", 1))
        self.assertEqual(a.stop(), 0)
        self.assertEqual(volumes(self.etcd), {"root": ("a", "offline", 2),
                                              "proj": ("a", "offline", 2)})
        a.start()
        wait_until(lambda: volumes(self.etcd)["proj"][1] == "online", 15, "online again")
        wait_until(lambda: volumes(self.etcd)["root"][1] == "online", 15, "root online again")
        self.assertEqual(volumes(self.etcd), {"root": ("a", "online", 3),
                                              "proj": ("a", "online", 3)})
        # a volume made while serving (arfctl vol create) is recorded too,
        # the others' records untouched
        arfctl("--control", a.control, "vol", "create", "made")
        wait_until(lambda: "made" in volumes(self.etcd), 15, "the made volume recorded")
        self.assertEqual(volumes(self.etcd), {"root": ("a", "online", 3),
                                              "proj": ("a", "online", 3),
                                              "made": ("a", "online", 1)})
        # and removed (arfctl vol rm): its record goes, the others stay
        arfctl("--control", a.control, "vol", "rm", "made")
        wait_until(lambda: "made" not in volumes(self.etcd), 15, "the made volume withdrawn")
        self.assertEqual(volumes(self.etcd), {"root": ("a", "online", 3),
                                              "proj": ("a", "online", 3)})
        # [cell] root_volume that a [volume] section names too is refused
        p = arfproc.run([a.bin, "-c", a.config, "--check-config", "--set",
                         "cell.etcd=" + self.etcd.url, "--set", "cell.name=" + CELL,
                         "--set", "cell.root_volume=proj"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"[cell] root_volume = proj: the name of a [volume proj] section too",
                      p.stderr)

    def test_locate(self):
        """LOCATE (arfctl vol locate): any arfd of the cell says where a
        volume lives, from its copy of the records (a watch), so a client
        needs no etcd credentials; with etcd down the copy still answers;
        a volume whose server stopped shows offline and not live."""
        self.etcd.start()
        a = self.arfd("a", extra={"cell.root_volume": "root"}, config="[volume proj]\n")
        b = self.arfd("b")
        wait_until(lambda: len(volumes(self.etcd)) == 2, 15, "a's volumes recorded")

        def where(vol, via, check=True):
            p = arfctl("--json", "vol", "locate", vol, via.url("/"), check=check)
            return json.loads(p.stdout) if p.returncode == 0 else p

        wait_until(lambda: where("proj", b)["live"], 15, "b's copy has proj")
        got = where("proj", b)
        self.assertEqual((got["server"], got["address"], got["port"], got["state"], got["here"],
                          got["in_cell"]), ("a", "127.0.0.1", a.port, "online", False, True))
        self.assertTrue(where("proj", a)["here"])
        self.assertEqual(where("root", b)["server"], "a")
        p = where("nope", b, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"no such volume", p.stderr)
        # a client goes where it was told
        url = "arf://%s:%d/?volume=proj" % (got["address"], got["port"])
        arfctl("mkdir", url.replace("/?", "/found?"))
        self.assertIn(b"found", arfctl("ls", url).stdout)
        # etcd down: the copy answers
        self.etcd.stop()
        self.assertEqual(where("proj", b)["port"], a.port)
        self.etcd.start()
        # a stopped (cleanly): its volumes offline, a no longer live
        self.assertEqual(a.stop(), 0)
        wait_until(lambda: where("proj", b)["state"] == "offline", 15, "b sees proj offline")
        got = where("proj", b)
        self.assertEqual((got["live"], got["port"]), (False, 0))
        text = arfctl("vol", "locate", "proj", b.url("/")).stdout.decode()
        self.assertEqual(text, "proj: offline, on server 'a' (not live in the cell), record "
                               "version 2\n")

    def test_moved(self):
        """A volume that the cell records on another server: the server
        asked sends the client there (EREMOTE, "moved"), and libarf goes;
        a stale copy of the volume on the server asked is not served; once
        the volume's server is down, the client is told so."""
        self.etcd.start()
        a = self.arfd("a", config="[volume proj]\n")
        wait_until(lambda: "proj" in volumes(self.etcd), 15, "proj recorded on a")
        b = self.arfd("b", config="[volume proj]\n[volume other]\n")
        wait_until(lambda: "other" in volumes(self.etcd), 15, "b's volumes recorded")
        arfctl("mkdir", "arf://127.0.0.1:%d/on-a?volume=proj" % a.port)
        stale = "arf://127.0.0.1:%d/?volume=proj" % b.port
        # b's copy of the records may lag a moment behind etcd
        wait_until(lambda: b"on-a" in arfctl("ls", stale, check=False).stdout, 15,
                   "b sends proj's clients to a")
        p = arfctl("--stats", "ls", "arf+shm:///?socket=%s&volume=proj" % b.socket)
        self.assertIn(b"on-a", p.stdout)
        # b's own volume, and its root one, are served by b
        arfctl("ls", "arf://127.0.0.1:%d/?volume=other" % b.port)
        arfctl("ls", b.url("/"))
        self.assertEqual(a.stop(), 0)
        wait_until(lambda: b"not live in the cell" in arfctl("ls", stale, check=False).stderr,
                   15, "the client told a is down")
        p = arfctl("ls", stale, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"volume 'proj' is on server 'a', which is not live in the cell", p.stderr)

    def test_mount_point_across_servers(self):
        """A mount point on a's root volume naming proj, which b serves:
        clients of a (tcp, shm, a FUSE mount) cross it to b, located
        through a's copy of the records; once b stops, only what is
        behind the mount point fails (EHOSTDOWN), the rest of the tree
        keeps working.  Each server has an address of its own (a network
        namespace) where the machine allows."""
        sa, sb = self.spaces(2)
        self.etcd.start()
        a = self.arfd("a", extra={"cell.root_volume": "root"}, space=sa)
        b = self.arfd("b", config="[volume proj]\n", space=sb)
        wait_until(lambda: "proj" in volumes(self.etcd), 15, "proj recorded on b")
        wait_until(lambda: arfctl("--json", "vol", "locate", "proj", a.url("/"),
                                  check=False).returncode == 0, 15, "a's copy has proj")
        arfctl("vol", "mkmount", a.url("/proj"), "proj")
        src = os.path.join(self.tmp, "src")
        with open(src, "w") as f:
            f.write("on b\n")
        arfctl("put", src, a.url("/proj/via-tcp"))
        arfctl("put", src, "arf+shm:///proj/via-shm?socket=%s" % a.socket)
        on_b = b.url("/?volume=proj")
        self.assertEqual(sorted(arfctl("ls", on_b).stdout.split()), [b"via-shm", b"via-tcp"])
        self.assertEqual(arfctl("cat", a.url("/proj/via-shm")).stdout, b"on b\n")
        why = arfproc.fuse_skip_reason()
        m = None
        if not why:
            m = arfproc.Mount(a.url("/"), workdir=self.tmp)
            self.addCleanup(m.stop)
            m.start()
            with open(m.p("proj/via-mount"), "w") as f:
                f.write("through the mount\n")
            self.assertEqual(arfctl("cat", on_b.replace("/?", "/via-mount?")).stdout,
                             b"through the mount\n")
        self.assertEqual(b.stop(), 0)
        # a's copy of the records may lag a moment behind etcd
        wait_until(lambda: b"host is down" in arfctl("ls", a.url("/proj"),
                                                     check=False).stderr.lower(),
                   15, "crossing to proj told b is down")
        self.assertEqual(arfctl("ls", a.url("/proj"), check=False).returncode, 1)
        self.assertIn(b"proj", arfctl("ls", a.url("/")).stdout)
        if m:
            self.assertIn("proj", os.listdir(m.path))
            self.assertEqual(m.stop(), 0)

    def test_one_tree_of_three_servers(self):
        """Three arfd, a volume on each: one FUSE mount of a's root sees
        b's and c's volumes as one tree through mount points (c's nested
        in b's); a tar extraction and a verifying fio job run across
        them, and each file lands on its own server.  Each server has an
        address of its own (a network namespace with a veth pair) where the
        machine allows."""
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        sa, sb, sc = self.spaces(3)
        self.etcd.start()
        a = self.arfd("a", extra={"cell.root_volume": "root"}, space=sa)
        b = self.arfd("b", config="[volume home]\n", space=sb)
        c = self.arfd("c", config="[volume proj]\ndata_blocks = 65536\n", space=sc)
        for vol in ("home", "proj"):
            wait_until(lambda: arfctl("vol", "locate", vol, a.url("/"),
                                      check=False).returncode == 0, 15, "a's copy has " + vol)
        arfctl("vol", "mkmount", a.url("/home"), "home")
        arfctl("vol", "mkmount", a.url("/home/proj"), "proj")  # c's volume inside b's
        src = os.path.join(self.tmp, "tree")
        for d in ("top", "home/docs", "home/proj/src/deep"):
            os.makedirs(os.path.join(src, d))
            for i in range(20):
                with open(os.path.join(src, d, "f%d" % i), "w") as f:
                    f.write("%s %d\n" % (d, i) * (i + 1))
        os.symlink("docs/f1", os.path.join(src, "home", "link"))
        tarball = os.path.join(self.tmp, "tree.tar")
        arfproc.run(["tar", "-C", src, "-cf", tarball, "top", "home"])
        m = arfproc.Mount(a.url("/"), workdir=self.tmp)
        self.addCleanup(m.stop)
        m.start()
        arfproc.run(["tar", "-C", m.path, "-xf", tarball])
        arfproc.run(["diff", "-r", "--no-dereference", os.path.join(src, "top"), m.p("top")])
        arfproc.run(["diff", "-r", "--no-dereference", os.path.join(src, "home"), m.p("home")])
        # each file on its own server
        on = lambda d, vol: sorted(arfctl(  # noqa: E731
            "ls", d.url("/?volume=" + vol)).stdout.split())
        self.assertEqual(on(b, "home"), [b"docs", b"link", b"proj"])
        self.assertEqual(on(c, "proj"), [b"src"])
        self.assertIn(b"top", arfctl("ls", a.url("/")).stdout.split())
        # st_ino unique across the three volumes (no false hard links for tar, du, cp -a)
        inos = [os.lstat(os.path.join(d, n)).st_ino
                for d, _, ns in os.walk(m.path) for n in ns]
        self.assertEqual(len(inos), len(set(inos)))
        # fio with verification on c's volume, through two mount points
        job = m.p("home/proj/fio.dat")
        p = subprocess.run(["fio", "--name=across", "--filename=" + job, "--size=16m",
                            "--bs=64k", "--rw=randwrite", "--ioengine=psync",
                            "--verify=crc32c", "--do_verify=1", "--verify_fatal=1",
                            "--output-format=terse"], capture_output=True, timeout=300,
                           cwd=self.tmp)  # its verify state file goes there, not the source
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(b"fio.dat", arfctl("ls", c.url("/?volume=proj")).stdout)
        self.assertEqual(m.stop(), 0)

    def test_walk_past_a_server_without_programs(self):
        """arf-find by URL across a mount point to a server that runs no
        programs ([programs] enable = false): that volume is reported and
        left out, and the rest of the tree is still walked (it was all
        given up)."""
        self.etcd.start()
        a = self.arfd("a", extra={"cell.root_volume": "root"})
        b = self.arfd("b", config="[volume proj]\n", extra={"programs.enable": "false"})
        wait_until(lambda: arfctl("vol", "locate", "proj", a.url("/"),
                                  check=False).returncode == 0, 15, "a's copy has proj")
        arfctl("mkdir", a.url("/t"))
        arfctl("vol", "mkmount", a.url("/t/a0"), "proj")
        for d in ("t/m", "t/m/deep", "t/z"):
            arfctl("mkdir", a.url("/" + d))
        find = os.path.join(harness.BUILD, "tools", "arf-find", "arf-find")
        p = subprocess.run([find, a.url("/t")], capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"the server could not run the walk", p.stderr)
        got = sorted(x[len(a.url("/t")):] for x in p.stdout.decode().split())
        self.assertEqual(got, ["", "/a0", "/m", "/m/deep", "/z"])

    def test_dead_volume_blocks_only_itself(self):
        """A hard mount: with b killed, 64 processes wait on its volume
        behind a mount point, and the rest of the tree (a's root volume)
        is listed, read and written on meanwhile; SIGKILL ends the waits."""
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        sa, sb = self.spaces(2)
        self.etcd.start()
        a = self.arfd("a", extra={"cell.root_volume": "root"}, space=sa)
        b = self.arfd("b", config="[volume proj]\n", space=sb)
        wait_until(lambda: arfctl("--json", "vol", "locate", "proj", a.url("/"),
                                  check=False).returncode == 0, 15, "a's copy has proj")
        arfctl("vol", "mkmount", a.url("/proj"), "proj")
        for i in range(64):  # made by another client: the mount knows nothing of them
            arfctl("mkdir", a.url("/proj/d%d" % i))
        m = arfproc.Mount(a.url("/"), opts="hard", workdir=self.tmp)
        self.addCleanup(m.stop)
        m.start()
        with open(m.p("top"), "w") as f:
            f.write("on a\n")
        with open(m.p("proj/f"), "w") as f:  # proj reached: its connection made
            f.write("on b\n")
        for i in range(64):
            os.stat(m.p("proj/d%d" % i))
        b.kill()
        # each looks up a name no cache can answer, in a directory of its own
        # (the kernel runs one lookup at a time in a directory)
        waiters = [subprocess.Popen(["stat", m.p("proj/d%d/none" % i)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for i in range(64)]
        try:
            time.sleep(2)
            self.assertEqual([w.poll() for w in waiters], [None] * 64, "not waiting on b")
            t0 = time.time()
            # in processes of their own, so that a wait fails the test rather
            # than hanging it
            run = lambda *cmd: subprocess.run(cmd, capture_output=True, timeout=20)  # noqa: E731
            self.assertIn(b"top", run("ls", m.path).stdout)
            self.assertEqual(run("cat", m.p("top")).stdout, b"on a\n")
            run("sh", "-c", "echo written while b is dead > " + m.p("top2"))
            self.assertEqual(arfctl("cat", a.url("/top2")).stdout, b"written while b is dead\n")
            took = time.time() - t0
            print("the rest of the tree served in %.2f s with 64 waiting on a dead volume" % took)
            self.assertLess(took, 10)
        finally:
            for w in waiters:
                w.kill()
            deadline = time.time() + 30
            for w in waiters:
                w.wait(timeout=max(1, deadline - time.time()))
        self.assertEqual(m.stop(), 0)

    def test_config(self):
        d = Arfd(workdir=os.path.join(self.tmp, "c"))
        self.addCleanup(d.cleanup)
        for extra, why in (({"cell.etcd": "http://127.0.0.1:1"}, "[cell] needs both etcd and name"),
                           ({"cell.name": CELL}, "[cell] needs both etcd and name"),
                           ({"cell.etcd": "127.0.0.1:2379", "cell.name": CELL},
                            "expected http://HOST:PORT"),
                           ({"cell.etcd": "http://x:1", "cell.name": "a/b"}, "1 to 63 of")):
            args = [d.bin, "-c", d.config, "--check-config"] + sum(
                (["--set", "%s=%s" % kv] for kv in extra.items()), [])
            d.args()  # writes the harness's configuration file
            p = arfproc.run(args, check=False)
            self.assertEqual(p.returncode, 1, extra)
            self.assertIn(why.encode(), p.stderr)
        # without [cell]: no cell, nothing about one in the log
        d.start()
        arfctl("ls", d.url("/"))
        self.assertNotIn("cell '", d.log())

    def test_arfctl_hostile(self):
        junk = JunkHttp([(200, b"<html>I am not etcd</html>")])
        self.addCleanup(junk.stop)
        url = junk.url
        p = arfctl("cell", "status", "--etcd", url, "--cell", CELL, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.decode(),
                         "arfctl: cell status: etcd %s/v3/kv/range: the reply is not a JSON "
                         "object (unexpected character): '<html>I am not etcd</html>'\n" % url)
        for args, code in ((["--cell", "a/b"], 2), (["--etcd", "nope", "--cell", CELL], 2),
                           ([], 2), (["--cell"], 2)):
            p = subprocess.run([ARFCTL, "cell", "status", "--config", "/dev/null"] + args,
                               capture_output=True, timeout=30)
            self.assertEqual(p.returncode, code, (args, p.stderr))
            self.assertTrue(p.stderr.startswith(b"arfctl: cell"), p.stderr)


class StaleNamespaces(unittest.TestCase):
    def test_killed_runs_namespaces_are_swept(self):
        """A test killed by meson's timeout (SIGKILL 0.5 s after SIGTERM)
        leaves its namespace and veth pair; the next Netns.create removes
        those whose creator is gone and that hold no process, and leaves a
        live run's alone."""
        why = arfproc.netns_skip_reason()
        if why:
            self.skipTest(why)
        dead = 1
        while os.path.exists("/proc/%d" % dead) or dead == os.getpid():
            dead += 1
        stale = arfproc.Netns(9)
        stale.name, stale.host_if = "arf%d_9" % dead, "arfh%d_9" % dead
        stale.ns_if = "arfn%d_9" % dead
        live = arfproc.Netns(8)  # this process's: its creator lives
        for ns in (stale, live):
            self.addCleanup(ns.remove)
            ns.create()
        gone = arfproc.sweep_stale_netns()
        self.assertIn(stale.name, gone)
        self.assertNotIn(live.name, gone)
        names = subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                               text=True).stdout
        self.assertNotIn(stale.name + " ", names + " ")
        self.assertNotIn(stale.host_if + "@", links)  # the pair went with it
        self.assertIn(live.name, names)


if __name__ == "__main__":
    harness.main()
