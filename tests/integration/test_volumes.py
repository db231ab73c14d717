#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Volumes inside one arfd (issue 18, point 1): each [volume NAME] section
of arfd.conf is a filesystem of its own (its regions, its RocksDB and data
log under DATA_DIR/volumes/NAME, its [regions] limits), served on the same
port and socket as the root volume; a client names it with ?volume=NAME
(arf-fuse: -o volume=NAME).

Checked here, over tcp and shm: the same name in three volumes holds three
contents and a listing shows its own volume's names only; one-sided reads
are counted against the volume they read; the limits are the volume's;
everything survives a restart; an unknown or malformed volume name is
refused with a message that names it; `arfctl vol list|show` and the
Prometheus text (a volume label on each volume's counters); a FUSE mount
of a volume; and arfd.conf's mistakes in [volume] sections.

Made: `arfctl vol create NAME [KEY=VALUE ...]` on a serving arfd makes a
volume that clients use at once over tcp and shm (clients of the other
volumes undisturbed), with its [regions] settings; it is served again
after a restart with its files; a name in use, a bad name, a bad setting
and a directory already there are refused with the reason, and nothing is
left of a refused one.  `arfctl vol rm [--force] NAME` removes a made
volume and its data, refused while a client is connected, while it holds
a file (without --force), and for a section's volume or the root.

Release: `arfctl vol release NAME` serves a snapshot of NAME as
NAME.readonly on the same server, read-only (EROFS) over tcp and shm, a
state of NAME that NAME's later changes leave alone; released again it is
a newer snapshot, refused while a client uses the replica; it is served
again after a restart; the root volume and a section's volume have
replicas too; a replica's name is refused to vol create and to release;
released again under a mount of the replica, the mount reconnects and goes
on with the new snapshot."""
import json
import os
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ARFD, Arfd, arfctl, arfctl_json, run  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import arfproc  # noqa: E402

CONFIG = ("# tests/integration/test_volumes.py\n"
          "[export]\n"
          "root_squash = false\n"
          "[volume proj]\n"
          "inodes = 4096\n"
          "data_blocks = 8192\n"
          "[volume home]\n")

VOLS = ("root", "proj", "home")


def text_of(*args, check=True):
    """arfctl's exit status, standard output and standard error, as text."""
    p = arfctl(*args, check=check)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def vurl(arfd, path, vol, transport="tcp"):
    """arfd's URL of path in volume vol ("root": with no query for tcp, to
    check the default is the root volume)."""
    base = arfd.url(path, transport)
    if vol == "root" and transport == "tcp":
        return base
    return base + ("&" if "?" in base else "?") + "volume=" + vol


class VolumeCase(unittest.TestCase):
    """An arfd of CONFIG's volumes, and its files by volume."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="arf-vol-")
        self.addCleanup(self.tmp.cleanup)
        conf = os.path.join(self.tmp.name, "arfd.conf")
        with open(conf, "w") as f:
            f.write(CONFIG)
        self.arfd = Arfd(workdir=os.path.join(self.tmp.name, "w"), config=conf)
        self.addCleanup(self.arfd.cleanup)
        self.arfd.start()

    def put(self, vol, name, data, transport="tcp"):
        src = os.path.join(self.tmp.name, "src")
        with open(src, "wb") as f:
            f.write(data)
        arfctl("put", src, vurl(self.arfd, "/" + name, vol, transport))

    def cat(self, vol, name, transport="tcp"):
        return text_of("cat", vurl(self.arfd, "/" + name, vol, transport))[1]

    def names(self, vol, transport="tcp"):
        return sorted(text_of("ls", vurl(self.arfd, "/", vol, transport))[1].split())

    def status(self, vol):
        out = text_of("status", vurl(self.arfd, "/", vol))[1]
        line = [x for x in out.splitlines() if x.startswith("server: ")][0]
        return json.loads(line[len("server: "):])


class Volumes(VolumeCase):
    def test_separate_filesystems(self):
        for i, vol in enumerate(VOLS):
            self.put(vol, "same", ("in %s\n" % vol).encode(), ("tcp", "shm")[i % 2])
            self.put(vol, "only-" + vol, b"x")
        for transport in ("tcp", "shm"):
            for vol in VOLS:
                self.assertEqual(self.cat(vol, "same", transport), "in %s\n" % vol)
                self.assertEqual(self.names(vol, transport), ["only-" + vol, "same"])
        # the limits are each volume's: [volume proj] inodes and data_blocks
        st = {vol: self.status(vol) for vol in VOLS}
        self.assertEqual(st["proj"]["inodes"]["total"], 4096)
        self.assertEqual(st["proj"]["blocks"]["total"], 8192)
        self.assertEqual(st["home"]["inodes"]["total"], int(harness.SMALL["regions.inodes"]))
        for vol in VOLS:
            self.assertEqual(st[vol]["volume"], vol)
            self.assertEqual(st[vol]["inodes"]["total"] - st[vol]["inodes"]["free"], 3, vol)

    def test_one_sided_reads_count_per_volume(self):
        self.put("proj", "big", os.urandom(256 << 10))
        before = {vol: self.status(vol)["one_sided_reads"] for vol in VOLS}
        for _ in range(3):
            self.cat("proj", "big")
        after = {vol: self.status(vol)["one_sided_reads"] for vol in VOLS}
        self.assertGreater(after["proj"], before["proj"])
        self.assertEqual(after["root"], before["root"])
        self.assertEqual(after["home"], before["home"])

    def test_restart_keeps_every_volume(self):
        for vol in VOLS:
            self.put(vol, "kept", vol.encode() * 1000)
        self.arfd.restart()
        for vol in VOLS:
            self.assertEqual(self.cat(vol, "kept"), vol * 1000)
        data = self.arfd.data_dir
        self.assertTrue(os.path.isdir(os.path.join(data, "volumes", "proj")))
        self.assertTrue(os.path.isdir(os.path.join(data, "volumes", "home")))

    def test_unknown_and_bad_names(self):
        rc, _, err = text_of("ls", vurl(self.arfd, "/", "nope"), check=False)
        self.assertEqual(rc, 1)
        self.assertIn("no volume 'nope' on this server", err)
        rc, _, err = text_of("ls", self.arfd.url("/") + "?volume=a/b", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("volume=NAME", err)
        # "root" names the root volume
        self.put("root", "r", b"r")
        self.assertEqual(self.cat("root", "r", "shm"), "r")
        self.assertEqual(text_of("cat", self.arfd.url("/r") + "?volume=root")[1], "r")

    def test_vol_list_show_and_metrics(self):
        ctl = ["--control", self.arfd.control]
        self.put("home", "h", b"h")
        out = arfctl_json(*ctl, "vol", "list")
        got = [(v["volume"], v["data_dir"]) for v in out["volumes"]]
        data = self.arfd.data_dir
        self.assertEqual(got, [("root", data), ("proj", os.path.join(data, "volumes", "proj")),
                               ("home", os.path.join(data, "volumes", "home"))])
        table = text_of(*ctl, "vol", "list")[1].splitlines()
        self.assertTrue(table[0].startswith("NAME"), table)
        self.assertEqual([line.split()[0] for line in table[1:]], list(VOLS))
        show = json.loads(text_of(*ctl, "vol", "show", "home")[1])
        self.assertEqual(show["volume"], "home")
        self.assertEqual(show["inodes"]["total"] - show["inodes"]["free"], 2)
        rc, _, err = text_of(*ctl, "vol", "show", "nope", check=False)
        self.assertEqual(rc, 1)
        self.assertIn("no volume 'nope' on this server", err)
        self.assertEqual(text_of(*ctl, "vol", "frobnicate", check=False)[0], 2)
        # fsck and checkpoint of one volume
        rc, out, _ = text_of(*ctl, "fsck", "--volume", "home")
        self.assertIn("volume home): 0 problems", out)
        self.assertEqual(json.loads(text_of(*ctl, "checkpoint", "--volume", "proj")[1])["ok"], True)
        rc, _, err = text_of(*ctl, "fsck", "--volume", "nope", check=False)
        self.assertEqual(rc, 1)
        self.assertIn("no volume 'nope' on this server", err)
        prom = text_of(*ctl, "--prometheus", "stats")[1].splitlines()
        for vol in VOLS:
            self.assertTrue(any(x.startswith('arf_mutations_total{volume="%s"} ' % vol)
                                for x in prom), vol)
        # the server's own metrics once, unlabelled
        self.assertEqual(len([x for x in prom if x.startswith("arf_uptime_seconds ")]), 1)

    def test_reload_reaches_every_volume(self):
        """SIGHUP: [export] changes apply to every volume; a [volume]
        section added waits for the next start, and the log says so."""
        self.put("proj", "before", b"b")
        with open(self.arfd.config, "a") as f:
            f.write("[volume later]\n")
        with open(self.arfd.config) as f:
            text = f.read().replace("root_squash = false\n",
                                    "root_squash = false\nread_only = true\n")
        with open(self.arfd.config, "w") as f:
            f.write(text)
        self.arfd.proc.send_signal(signal.SIGHUP)
        harness.arfproc.wait_for(lambda: "reloaded: read_only=1" in self.arfd.log(), 15,
                                 "the reload", self.arfd.proc, self.arfd.log_path)
        for vol in VOLS:
            rc, _, err = text_of("mkdir", vurl(self.arfd, "/after", vol), check=False)
            self.assertEqual(rc, 1, vol)
            self.assertIn("Read-only file system", err, vol)
        self.assertIn("[volume] sections take effect at the next start", self.arfd.log())
        rc, _, err = text_of("ls", vurl(self.arfd, "/", "later"), check=False)
        self.assertIn("no volume 'later' on this server", err)
        self.assertEqual(self.cat("proj", "before"), "b")

    def test_mount_a_volume(self):
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        self.put("proj", "from-arfctl", b"hello\n")
        m = arfproc.Mount(self.arfd.url("/"), opts="volume=proj", workdir=self.tmp.name)
        self.addCleanup(m.stop)
        m.start()
        with open(m.p("from-arfctl")) as f:
            self.assertEqual(f.read(), "hello\n")
        with open(m.p("from-mount"), "w") as f:
            f.write("written\n")
        self.assertEqual(sorted(os.listdir(m.path)), ["from-arfctl", "from-mount"])
        self.assertEqual(m.stop(), 0)
        self.assertEqual(self.cat("proj", "from-mount"), "written\n")
        self.assertNotIn("from-mount", self.names("root"))


class Made(VolumeCase):
    """Volumes made by arfctl vol create while arfd serves."""

    def setUp(self):
        super().setUp()
        self.ctl = ["--control", self.arfd.control]

    def idle(self, vol):
        """Wait until arfd counts no client of vol: it counts a connection
        out when it sees it closed, soon after the client (arfctl, a mount)
        has gone."""
        deadline = time.monotonic() + 30
        while json.loads(text_of(*self.ctl, "vol", "show", vol)[1])["clients"]:
            self.assertLess(time.monotonic(), deadline, "%s's clients stayed" % vol)
            time.sleep(0.05)

    def test_made_while_serving_and_after_a_restart(self):
        self.put("proj", "before", b"proj's")
        # a client of another volume (a mount), connected across the creation
        m = None
        if not arfproc.fuse_skip_reason():
            m = arfproc.Mount(self.arfd.url("/"), opts="volume=proj", workdir=self.tmp.name)
            self.addCleanup(m.stop)
            m.start()
            self.assertEqual(os.listdir(m.path), ["before"])
        rc, out, err = text_of(*self.ctl, "vol", "create", "scratch", "inodes=2048",
                               "data_blocks=4096")
        self.assertEqual(rc, 0, err)
        data = os.path.join(self.arfd.data_dir, "volumes", "scratch")
        self.assertEqual(out.strip(), "volume scratch: made and served, 2048 inodes and 4096 "
                         "data blocks, in %s" % data)
        with open(os.path.join(data, "volume.conf")) as f:
            conf = f.read()
        self.assertIn("inodes=2048\ndata_blocks=4096\n", conf)
        for i, tr in enumerate(("tcp", "shm")):
            self.put("scratch", "f%d" % i, ("made, over %s\n" % tr).encode() * 100, tr)
        for tr in ("tcp", "shm"):
            self.assertEqual(self.cat("scratch", "f0", tr), "made, over tcp\n" * 100)
            self.assertEqual(self.cat("scratch", "f1", tr), "made, over shm\n" * 100)
        self.assertEqual(sorted(text_of("ls", vurl(self.arfd, "/", "scratch"))[1].split()),
                         ["f0", "f1"])
        if m:
            with open(m.p("after"), "w") as f:
                f.write("written across it\n")
            self.assertEqual(sorted(os.listdir(m.path)), ["after", "before"])
            self.assertEqual(m.stop(), 0)
            self.assertEqual(self.cat("proj", "after"), "written across it\n")
        names = [v["volume"] for v in json.loads(text_of("--json", *self.ctl, "vol", "list")[1])
                 ["volumes"]]
        self.assertEqual(names, ["root", "proj", "home", "scratch"])
        # a second one takes the next view; both come back after a restart
        text_of(*self.ctl, "vol", "create", "second")
        self.put("second", "s", b"second's")
        self.arfd.restart()
        self.assertEqual(self.cat("scratch", "f1", "shm"), "made, over shm\n" * 100)
        self.assertEqual(self.cat("second", "s"), "second's")
        self.assertEqual(self.cat("proj", "before"), "proj's")
        show = json.loads(text_of(*self.ctl, "vol", "show", "scratch")[1])
        self.assertEqual((show["inodes"]["total"], show["blocks"]["total"]), (2048, 4096))
        print("vol create scratch on a serving arfd: used at once over tcp and shm, a client "
              "of proj (a mount) connected across it undisturbed; scratch and second served again "
              "after a restart, with their settings and files")

    def test_refused_with_the_reason(self):
        os.makedirs(os.path.join(self.arfd.data_dir, "volumes", "left"))
        cases = [
            (("proj",), 1, "volume proj exists on this server"),
            (("root",), 1, "a volume's name is 1-63 letters"),
            (("a/b",), 1, "a volume's name is 1-63 letters"),
            (("x", "inodes=lots"), 1, "inodes"),
            (("x", "colour=blue"), 1, "colour"),
            (("x", "inodes"), 2, "expected KEY=VALUE"),
            (("x", "inodes=" + "0" * 250 + "1"), 1, "a setting is at most 200 bytes"),
            (("x", "data_blocks=4000000000"), 1, "MiB, more than the"),
            (("x",) + tuple("data_blocks=%d" % n for n in range(40)), 2, "too many settings"),
            (("left",), 1, "exists already"),
        ]
        for args, want, says in cases:
            rc, _, err = text_of(*self.ctl, "vol", "create", *args, check=False)
            self.assertEqual(rc, want, (args, err))
            self.assertIn(says, err, args)
        self.assertEqual(sorted(os.listdir(os.path.join(self.arfd.data_dir, "volumes"))),
                         ["home", "left", "proj"])
        rc, _, err = text_of("ls", vurl(self.arfd, "/", "x"), check=False)
        self.assertIn("no volume 'x' on this server", err)
        # arfd serves on: the volumes it had are there
        self.put("home", "h", b"still")
        self.assertEqual(self.cat("home", "h", "shm"), "still")
        print("vol create refused, with the reason: %d cases; nothing made" % len(cases))

    def test_a_bad_volume_conf_keeps_only_that_volume_out(self):
        text_of(*self.ctl, "vol", "create", "spoilt")
        text_of(*self.ctl, "vol", "create", "fine")
        self.put("fine", "f", b"fine's")
        self.arfd.stop()
        conf = os.path.join(self.arfd.data_dir, "volumes", "spoilt", "volume.conf")
        with open(conf, "a") as f:
            f.write("inodes=lots\n")
        self.arfd.start()
        self.assertIn("volume spoilt not served: %s:4: " % conf, self.arfd.log())
        rc, _, err = text_of("ls", vurl(self.arfd, "/", "spoilt"), check=False)
        self.assertIn("no volume 'spoilt' on this server", err)
        self.assertEqual(self.cat("fine", "f", "shm"), "fine's")
        print("a volume.conf spoilt by hand: arfd serves every other volume and says why "
              "that one is not served")

    def test_rm_cut_short_is_finished_at_start(self):
        text_of(*self.ctl, "vol", "create", "cut")
        self.put("cut", "f", b"x" * 100000)
        self.arfd.stop()
        vols = os.path.join(self.arfd.data_dir, "volumes")
        # what a crash right after vol rm's rename leaves: its tombstone
        os.rename(os.path.join(vols, "cut"), os.path.join(vols, "+cut"))
        # and a vol release's, of a long name (no volume's name: still removed)
        os.makedirs(os.path.join(vols, "+" + "n" * 60 + ".readonly.new", "datalog"))
        self.arfd.start()
        self.assertIn("removed %s/+cut, left by vol rm or vol release" % vols, self.arfd.log())
        self.assertEqual(sorted(os.listdir(vols)), ["home", "proj"])
        rc, _, err = text_of("ls", vurl(self.arfd, "/", "cut"), check=False)
        self.assertIn("no volume 'cut' on this server", err)
        print("a vol rm cut short after its rename: the next start deleted the tombstone")

    def test_rm(self):
        text_of(*self.ctl, "vol", "create", "gone")
        data = os.path.join(self.arfd.data_dir, "volumes", "gone")
        self.put("gone", "f", b"a file")
        refusals = [
            (("gone",), 1, "volume gone is not empty (1 files and directories"),
            (("proj",), 1, "arfd.conf's [volume proj] section"),
            (("root",), 1, "the root volume is the server's own"),
            (("nope",), 1, "no volume 'nope' on this server"),
            (("--forse", "gone"), 2, "usage: vol rm"),
        ]
        self.idle("gone")
        for args, want, says in refusals:
            rc, _, err = text_of(*self.ctl, "vol", "rm", *args, check=False)
            self.assertEqual(rc, want, (args, err))
            self.assertIn(says, err, args)
        m = None
        if not arfproc.fuse_skip_reason():
            m = arfproc.Mount(self.arfd.url("/"), opts="volume=gone", workdir=self.tmp.name)
            self.addCleanup(m.stop)
            m.start()
            # arf-fuse holds two connections (its cached and uncached clients)
            rc, _, err = text_of(*self.ctl, "vol", "rm", "--force", "gone", check=False)
            self.assertEqual(rc, 1, err)
            self.assertIn("clients connected: unmount them first", err)
            refusals.append("a mount connected")
        self.assertEqual(self.cat("gone", "f", "shm"), "a file")  # untouched
        if m:
            self.assertEqual(m.stop(), 0)
        self.idle("gone")
        rc, out, err = text_of(*self.ctl, "vol", "rm", "--force", "gone")
        self.assertEqual(out.strip(), "volume gone: removed, with %s" % data)
        self.assertFalse(os.path.exists(data))
        self.assertEqual(sorted(os.listdir(os.path.dirname(data))), ["home", "proj"])
        for tr in ("tcp", "shm"):
            rc, _, err = text_of("ls", vurl(self.arfd, "/", "gone", tr), check=False)
            self.assertEqual(rc, 1)
            self.assertIn("no volume 'gone' on this server", err)
        names = [v["volume"] for v in json.loads(text_of("--json", *self.ctl, "vol", "list")[1])
                 ["volumes"]]
        self.assertEqual(names, ["root", "proj", "home"])
        self.assertNotIn('volume="gone"', text_of(*self.ctl, "stats", "--prometheus")[1])
        # the name can be made again (a new, empty volume), the others served on
        text_of(*self.ctl, "vol", "create", "gone")
        self.assertEqual(text_of("ls", vurl(self.arfd, "/", "gone"))[1], "")
        self.put("gone", "g", b"again", "shm")
        self.idle("gone")
        text_of(*self.ctl, "vol", "rm", "--force", "gone")
        self.put("proj", "p", b"proj's")
        self.arfd.restart()
        self.assertFalse(os.path.exists(data))
        rc, _, err = text_of("ls", vurl(self.arfd, "/", "gone"), check=False)
        self.assertIn("no volume 'gone' on this server", err)
        self.assertEqual(self.cat("proj", "p"), "proj's")
        print("vol rm: %d refusals with the reason (a file, a section, the root, no such "
              "volume, bad usage%s); --force removed it and its data, clients are told there "
              "is no such volume, the name can be made again; gone after a restart"
              % (len(refusals), ", a mount connected" if m else ""))


class Refused(unittest.TestCase):
    def test_nothing_told_to_a_client_not_allowed(self):
        """A client outside [export] clients learns nothing about volumes:
        the same refusal for a volume that exists and one that does not."""
        with tempfile.TemporaryDirectory(prefix="arf-vol-") as tmp:
            conf = os.path.join(tmp, "arfd.conf")
            with open(conf, "w") as f:
                f.write(CONFIG)
            d = Arfd(workdir=os.path.join(tmp, "w"), config=conf,
                     extra={"export.clients": "10.9.9.0/24"})
            self.addCleanup(d.cleanup)
            d.start()
            for vol in ("proj", "nope"):
                rc, _, err = text_of("ls", vurl(d, "/", vol), check=False)
                self.assertEqual(rc, 1)
                self.assertIn("not in this export's clients list", err)
                self.assertNotIn("volume", err)


class BadConfigs(unittest.TestCase):
    CASES = (
        ("[volume root]\n", "and not root"),
        ("[volume a b/c]\n", "a volume's name is"),
        ("[volume a]\n[volume a]\n", "[volume a] appears twice"),
        ("[volume a]\nlisten = 127.0.0.1:1\n", "in [volume a], which takes [regions] keys"),
        ("[volume a]\ninodes = 3\n", "out of range"),
        ("".join("[volume v%d]\n" % i for i in range(16)), "at most 15 volumes"),
        # a header after a vertical tab, which inih skips as blank (found by fuzz-config)
        ("\x0b[volume vt]\ninodes = 3\n", "out of range"),
    )

    def test_refused_with_the_reason(self):
        with tempfile.TemporaryDirectory(prefix="arf-volcfg-") as tmp:
            conf = os.path.join(tmp, "arfd.conf")
            for body, want in self.CASES:
                with open(conf, "w") as f:
                    f.write(body)
                p = run([ARFD, "-c", conf, "--check-config"], check=False)
                self.assertNotEqual(p.returncode, 0, body)
                self.assertIn(want, (p.stderr + p.stdout).decode(errors="replace"), body)
                rc, _, err = text_of("config", "check", conf, check=False)
                self.assertEqual(rc, 1, body)
                self.assertIn(want, err, body)


def arfd_has(case, vol):
    """Whether case's arfd serves volume vol."""
    return vol in [v["volume"] for v in json.loads(
        text_of("--json", *case.ctl, "vol", "list")[1])["volumes"]]


class Release(VolumeCase):
    """Read-only replicas on the same server (arfctl vol release, AFS's vos
    release; issue 18, point 5)."""

    idle = Made.idle

    def setUp(self):
        super().setUp()
        self.ctl = ["--control", self.arfd.control]

    def release(self, name, check=True):
        return text_of(*self.ctl, "vol", "release", name, check=check)

    def test_a_snapshot_served_read_only_by_its_name(self):
        text_of(*self.ctl, "vol", "create", "docs")
        big = bytes(range(256)) * 4096 * 3  # 3 MiB: data log records, not inline
        self.put("docs", "big", big)
        self.put("docs", "note", b"version 1\n")
        text_of("mkdir", vurl(self.arfd, "/sub", "docs"))
        self.put("docs", "sub/deep", b"deep\n", "shm")
        rc, out, err = self.release("docs")
        self.assertEqual(rc, 0, err)
        data = os.path.join(self.arfd.data_dir, "volumes", "docs.readonly")
        self.assertRegex(out, r"^volume docs.readonly: released from docs \(its requests "
                              r"waited \d+\.\d+ s\), read-only, in %s\n$" % data)
        # the snapshot, over tcp and shm (shm reads the regions one-sided)
        for tr in ("tcp", "shm"):
            self.assertEqual(self.names("docs.readonly", tr), ["big", "note", "sub"])
            self.assertEqual(self.cat("docs.readonly", "note", tr), "version 1\n")
            self.assertEqual(self.cat("docs.readonly", "sub/deep", tr), "deep\n")
        got = arfctl("cat", vurl(self.arfd, "/big", "docs.readonly", "shm")).stdout
        self.assertEqual(got, big)
        # read-only: every change refused, with EROFS
        for args in (("mkdir", vurl(self.arfd, "/new", "docs.readonly")),
                     ("rm", vurl(self.arfd, "/note", "docs.readonly")),
                     ("chmod", "0600", vurl(self.arfd, "/note", "docs.readonly"))):
            rc, _, err = text_of(*args, check=False)
            self.assertNotEqual(rc, 0, args)
            self.assertIn("read-only", err.lower(), args)
        with self.assertRaises(Exception):
            self.put("docs.readonly", "note", b"changed\n")
        self.assertEqual(self.cat("docs.readonly", "note"), "version 1\n")
        # the volume goes on; the replica keeps the state it was made of
        self.put("docs", "note", b"version 2\n")
        self.put("docs", "later", b"later\n")
        self.assertEqual(self.cat("docs.readonly", "note"), "version 1\n")
        self.assertNotIn("later", self.names("docs.readonly"))
        # released again: replaced by a new snapshot (no client of it now)
        self.idle("docs.readonly")
        rc, _, err = self.release("docs")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.cat("docs.readonly", "note", "shm"), "version 2\n")
        self.assertEqual(self.names("docs.readonly"), ["big", "later", "note", "sub"])
        # after a restart: served again, read-only still
        self.arfd.restart()
        self.assertEqual(self.cat("docs.readonly", "later"), "later\n")
        rc, _, err = text_of("mkdir", vurl(self.arfd, "/x", "docs.readonly"), check=False)
        self.assertIn("read-only", err.lower())
        self.assertEqual(self.cat("docs", "note"), "version 2\n")
        show = json.loads(text_of(*self.ctl, "vol", "show", "docs.readonly")[1])
        self.assertEqual(show["inodes"],
                         json.loads(text_of(*self.ctl, "vol", "show", "docs")[1])["inodes"])
        # a section's volume and the root volume have replicas too
        self.put("proj", "p", b"proj\n")
        self.put("root", "r", b"root\n")
        self.assertEqual(self.release("proj")[0], 0)
        self.assertEqual(self.release("root")[0], 0)
        self.assertEqual(self.cat("proj.readonly", "p"), "proj\n")
        self.assertEqual(self.cat("root.readonly", "r", "shm"), "root\n")
        self.assertNotIn("volumes", self.names("root.readonly"))
        print("vol release: docs.readonly served read-only (EROFS) over tcp and shm, a state "
              "of docs; made again with docs's later state; served after a restart")

    def test_replaced_under_its_clients(self):
        """Released again while a mount uses the replica: its connections
        are closed, it dials again and goes on with the new snapshot (a
        file it had open keeps its handle: a snapshot keeps inode numbers)."""
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        text_of(*self.ctl, "vol", "create", "docs")
        self.put("docs", "v", b"one\n")
        self.assertEqual(self.release("docs")[0], 0)
        m = arfproc.Mount(self.arfd.url("/"), opts="volume=docs.readonly", workdir=self.tmp.name)
        self.addCleanup(m.stop)
        m.start()
        with open(m.p("v")) as f:
            self.assertEqual(f.read(), "one\n")
        with self.assertRaises(OSError) as cm:
            with open(m.p("f"), "w") as f:
                f.write("no")
        self.assertEqual(cm.exception.errno, 30)  # EROFS
        held = open(m.p("v"))
        self.addCleanup(held.close)
        ino = os.fstat(held.fileno()).st_ino
        self.put("docs", "v", b"two\n")
        self.put("docs", "w", b"new\n")
        rc, out, err = self.release("docs")
        self.assertEqual(rc, 0, err)
        deadline = time.monotonic() + 15
        while True:  # the kernel's entry and attribute caches run out meanwhile
            try:
                with open(m.p("w")) as f:
                    if f.read() == "new\n":
                        break
            except OSError:
                pass
            self.assertLess(time.monotonic(), deadline, "the new snapshot never showed")
            time.sleep(0.2)
        self.assertEqual(os.stat(m.p("v")).st_ino, ino)
        os.pread(held.fileno(), 16, 0)  # the open file goes on (its pages may be the old ones)
        held.close()
        while True:  # opened again: the new contents (close-to-open, as NFS)
            with open(m.p("v")) as f:
                if f.read() == "two\n":
                    break
            self.assertLess(time.monotonic(), deadline, "v never showed its new contents")
            time.sleep(0.2)
        self.assertEqual(m.stop(), 0)

    def test_source_reclaims_what_a_replica_links(self):
        """A replica links the source's closed data log segments (no copy:
        a pause of milliseconds) and copies only the head.  The source then
        rewrites its files until reclamation deletes those segments: it
        unlinks them rather than recycling (overwriting) a file the replica
        links, and the replica keeps its contents, fsck-clean, also after a
        restart."""
        src = os.path.join(self.tmp.name, "data")
        first = os.urandom(1 << 20) * 8
        with open(src, "wb") as f:  # in the first segment, closed by what follows
            f.write(first)
        arfctl("put", src, self.arfd.url("/a"))
        with open(src, "wb") as f:
            f.write(os.urandom(1 << 20) * 70)
        arfctl("put", src, self.arfd.url("/b"))
        out = json.loads(text_of("--json", *self.ctl, "vol", "release", "root")[1])
        self.assertLess(out["pause_seconds"], 5)
        segs = lambda d: {n: os.stat(os.path.join(d, n)).st_ino  # noqa: E731
                          for n in os.listdir(d) if n.endswith(".seg")}
        mine = os.path.join(self.arfd.data_dir, "datalog")
        theirs = os.path.join(self.arfd.data_dir, "volumes", "root.readonly", "datalog")
        linked = {n: i for n, i in segs(theirs).items() if segs(mine).get(n) == i}
        self.assertTrue(linked, (segs(mine), segs(theirs)))
        text_of("rm", self.arfd.url("/b"))
        stats = lambda: json.loads(text_of("--json", *self.ctl, "stats")[1])  # noqa: E731
        with open(src, "wb") as f:
            f.write(os.urandom(1 << 20) * 8)
        for i in range(80):  # the source rewrites a until the linked segments die,
            with open(src, "r+b") as f:  # and heads were made of deleted ones since
                f.write(b"%08d" % i)
            arfctl("put", src, self.arfd.url("/a"))
            now = segs(mine)
            if all(now.get(n) != ino for n, ino in linked.items()) and \
                    stats()["store"]["log_recycled"] >= 3:
                break
        now = segs(mine)
        self.assertTrue(all(now.get(n) != ino for n, ino in linked.items()),
                        "the linked segments were never reclaimed")
        st = stats()["store"]
        self.assertGreater(st["log_reclaimed_bytes"], 0, st)
        self.assertGreaterEqual(st["log_recycled"], 3, st)
        self.assertEqual({n: i for n, i in segs(theirs).items() if n in linked}, linked)
        rc, out_, err = text_of(*self.ctl, "fsck", "--volume", "root.readonly")
        self.assertIn("volume root.readonly): 0 problems", out_ + err)
        got = arfctl("cat", vurl(self.arfd, "/a", "root.readonly", "shm")).stdout
        self.assertEqual(got, first)
        self.arfd.restart()  # the replica recovered from its linked segments
        got = arfctl("cat", vurl(self.arfd, "/a", "root.readonly")).stdout
        self.assertEqual(got, first)
        print("vol release of a 78 MiB root volume paused it %.3f s, linking %d segment(s); "
              "the source reclaimed %d MiB after (recycled %d), the replica intact" % (
                  out["pause_seconds"], len(linked), st["log_reclaimed_bytes"] >> 20,
                  st["log_recycled"]))

    def test_release_of_a_failed_volume(self):
        """A volume whose sync failed (nothing becomes durable any more) is
        not released: the release answers at once with the reason, and
        arfd goes on answering and stops on SIGTERM (it waited for ever)."""
        self.arfd.stop()
        bad = Arfd(workdir=os.path.join(self.tmp.name, "bad"),
                   extra={"server.test_fail_sync": "1"})
        self.addCleanup(bad.cleanup)
        bad.start()
        text_of("mkdir", bad.url("/d"), check=False)  # its sync fails
        ctl = ["--control", bad.control]
        p = arfctl(*ctl, "vol", "release", "root", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"vol release root", p.stderr)
        self.assertEqual(arfctl(*ctl, "status", check=False).returncode, 0)
        self.assertEqual(arfctl(*ctl, "checkpoint", check=False).returncode, 1)
        bad.stop()

    def test_released_while_written(self):
        """Releases while a writer changes the volume: each replica is one
        state of it (fsck finds its regions and store agree, and every file
        it holds under a name the writer renames onto is whole).  The
        writer puts each file under a name of its own and renames it into
        place: put itself truncates, then writes, so a replica taken
        between the two holds the put's empty file, one state of the volume
        as well (this test failed so once in CI)."""
        import threading
        text_of(*self.ctl, "vol", "create", "busy")
        stop = threading.Event()
        written = []

        def writer():
            i = 0
            while not stop.is_set():
                self.put("busy", "new%d" % i, (b"%06d\n" % i) * 5000)
                arfctl("mv", vurl(self.arfd, "/new%d" % i, "busy"),
                       vurl(self.arfd, "/f%d" % (i % 20), "busy"))
                written.append(i)
                i += 1
        t = threading.Thread(target=writer)
        t.start()
        try:
            for _ in range(3):
                time.sleep(0.3)
                if arfd_has(self, "busy.readonly"):
                    self.idle("busy.readonly")  # the last round's readers gone
                rc, _, err = self.release("busy")
                self.assertEqual(rc, 0, err)
                rc, out, err = text_of(*self.ctl, "fsck", "--volume", "busy.readonly")
                self.assertEqual(rc, 0, out + err)
                self.assertIn("volume busy.readonly): 0 problems", out)
                for name in self.names("busy.readonly"):
                    if name.startswith("new"):
                        continue  # a put in progress: empty, or whole
                    body = self.cat("busy.readonly", name)
                    self.assertEqual(len(body), 7 * 5000, name)
                    self.assertEqual(len(set(body.split())), 1, name)  # no mix of two writes
        finally:
            stop.set()
            t.join()
        self.assertGreater(len(written), 3)

    def test_refusals(self):
        text_of(*self.ctl, "vol", "create", "docs")
        self.assertEqual(self.release("docs")[0], 0)
        cases = [(("nosuch",), 1, "no volume 'nosuch' on this server"),
                 (("docs.readonly",), 1, "is a replica: release the volume it was made from"),
                 (("a", "b", "c"), 2, "usage"),
                 (("docs", "b"), 1, "vol release docs b: this server is in no cell"),
                 (("-x",), 2, "not a volume's name")]
        for args, want, says in cases:
            rc, _, err = text_of(*self.ctl, "vol", "release", *args, check=False)
            self.assertEqual(rc, want, (args, err))
            self.assertIn(says, err, args)
        rc, _, err = text_of(*self.ctl, "vol", "create", "x.readonly", check=False)
        self.assertEqual(rc, 1)
        self.assertIn("a replica's, which vol release makes", err)
        # nothing half made is left in volumes/
        self.assertEqual(sorted(os.listdir(os.path.join(self.arfd.data_dir, "volumes"))),
                         ["docs", "docs.readonly", "home", "proj"])
        # a volume named *.readonly that vol release did not make (from before
        # names were kept for replicas) is never replaced
        text_of(*self.ctl, "vol", "create", "legacy")
        text_of(*self.ctl, "vol", "create", "other")
        self.put("other", "work", b"years of it\n")
        self.arfd.stop()
        vols = os.path.join(self.arfd.data_dir, "volumes")
        os.rename(os.path.join(vols, "other"), os.path.join(vols, "legacy.readonly"))
        self.arfd.start()
        rc, _, err = self.release("legacy", check=False)
        self.assertEqual(rc, 1)
        self.assertIn("volume legacy.readonly is no replica vol release made", err)
        self.assertEqual(self.cat("legacy.readonly", "work"), "years of it\n")
        # no place left for another volume in this run: refused before the
        # replica it would replace goes
        for _ in range(20):
            rc, _, err = self.release("docs", check=False)
            if rc:
                break
        self.assertEqual(rc, 1)
        self.assertIn("no volume place left in this run of arfd", err)
        self.assertIn("docs.readonly", self.names("root") + [
            v["volume"] for v in json.loads(text_of("--json", *self.ctl, "vol", "list")[1])
            ["volumes"]])
        self.assertEqual(self.names("docs.readonly"), [])
        # [cell] root_volume may not be a replica's name
        conf = os.path.join(self.tmp.name, "cell.conf")
        with open(conf, "w") as f:
            f.write("[cell]\netcd = http://127.0.0.1:2379\nname = c\nroot_volume = x.readonly\n")
        rc, _, err = text_of("config", "check", conf, check=False)
        self.assertEqual(rc, 1, err)
        self.assertIn("a name ending in .readonly is a replica's", err)


if __name__ == "__main__":
    harness.main()
