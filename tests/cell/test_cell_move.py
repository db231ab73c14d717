# SPDX-License-Identifier: MIT
"""arfctl vol move (issue 18 point 4) against a real etcd and real arfd
(tests/lib/arfproc.py, stopped by pid even when a test fails), on loopback
ports: a volume made on server a moves to server b while a FUSE mount
crosses into it through a mount point with a verifying fio job running,
readers over tcp and shm (a's socket) read a file over and over (a new
client each time), and two mounts, over tcp and over shm, read a file they
hold open through the move; the fio job finishes with its data verified,
every fsync'd append is there, every read gives the file's bytes, the record names b (one version more), a's copy is gone and its
clients are sent on; b serves it after a restart, and it moves back.
Refusals: a receiver without the cell's move secret, one with another
secret (the MAC is wrong: nothing staged there), the root volume, an
arfd.conf section's volume, a volume or server the cell does not have,
the server itself, a sender without the secret, bad usage; clients
without the secret holding sessions open or resetting them hold no move
up.  Two servers moving a volume each to the other at once: both land.
A client connected with a user's credential token (the cell's) keeps that
user's rights through its volume's move and across a mount point into
another server's volume.
etcd away: a move is refused before anything is sent; etcd stopped during
a move: the volume ends on the one server its record names.  The stream as
an attacker sends it (tests/security/rawwire.py): steps without a session,
wrong and replayed MACs, a second sender, paths out of the staging
directory, truncated bodies; the server serves on with nothing staged."""
import fcntl
import hashlib
import hmac
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "security"))
from cellcase import CELL, CellCase, wait_until  # noqa: E402
from harness import ITEST, arfctl  # noqa: E402
import arfproc  # noqa: E402
import rawwire  # noqa: E402
from test_mount_identity import ioctl_cred_code  # noqa: E402

OP_VOLUME_IN = 0x12c
CHALLENGE, BEGIN, FILE, DATA, KEEP, END, DONE, ABORT = range(8)
S_ACCES, S_INVAL, S_BUSY = 5, 10, 19


def volumes(etcd):
    p = arfctl("--json", "cell", "status", "--etcd", etcd.url, "--cell", CELL, check=False)
    if p.returncode:
        return {}
    return {v["name"]: (v["server"], v["state"], v["version"])
            for v in json.loads(p.stdout)["volumes"]}


def live(etcd):
    p = arfctl("--json", "cell", "status", "--etcd", etcd.url, "--cell", CELL, check=False)
    return {x["id"] for x in json.loads(p.stdout)["servers"]} if p.returncode == 0 else set()


class Move(CellCase):
    def secret(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, 0o600)
        return path

    def made(self, a, name="proj"):
        arfctl("--control", a.control, "vol", "create", name)
        wait_until(lambda: volumes(self.etcd).get(name, ("",))[0] == "a", 15,
                   name + " recorded on a")

    def piped(self, argv):
        """A process with pipes to and from it, killed (by pid) and its pipes
        closed when the test ends, however it ends."""
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def done():
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdin.close()
            p.stdout.close()
        self.addCleanup(done)
        return p

    def move(self, a, name, to, check=True):
        return arfctl("--json", "--control", a.control, "vol", "move", name, to, check=check)

    def test_move_in_use(self):
        """proj moves from a to b under a fio job through a mount point,
        fsync'd appends, readers over tcp and shm (a new client each read),
        and two mounts (tcp and shm to a) reading a file they hold open
        through the move; then back."""
        sec = self.secret("move.secret", "the servers' own")
        self.etcd.start()
        a = self.arfd("a", extra={"cell.move_secret_file": sec, "cell.root_volume": "root"})
        b = self.arfd("b", extra={"cell.move_secret_file": sec})
        self.made(a)
        big = os.urandom(3 << 20)
        src = os.path.join(self.tmp, "big")
        with open(src, "wb") as f:
            f.write(big)
        arfctl("put", src, a.url("/big?volume=proj"))
        arfctl("vol", "mkmount", a.url("/proj"), "proj")
        why = arfproc.fuse_skip_reason()
        m = fio = None
        if why:
            print("no mount, no fio job: " + why)
        else:
            m = arfproc.Mount(a.url("/"), workdir=self.tmp)
            self.addCleanup(m.stop)
            m.start()
            with open(m.p("proj/before"), "w") as f:
                f.write("written before the move\n")
            fio = subprocess.Popen(
                ["fio", "--name=move", "--filename=" + m.p("proj/fio.dat"), "--size=24m",
                 "--bs=64k", "--rw=randwrite", "--ioengine=psync", "--verify=crc32c",
                 "--do_verify=1", "--verify_fatal=1", "--output-format=terse", "--fsync=16",
                 "--loops=2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                cwd=self.tmp)
            self.addCleanup(lambda: fio.poll() is None and fio.kill())
            # a second mount, over shm on a's socket
            m2 = arfproc.Mount(a.url("/", "shm"), workdir=self.tmp,
                               mountpoint=os.path.join(self.tmp, "mnt-shm"))
            self.addCleanup(m2.stop)
            m2.start()
        # readers, each read a new client: over tcp to a, and over shm on a's socket
        stop = threading.Event()
        reads = {"tcp": [0, []], "shm": [0, []], "mount tcp": [0, []], "mount shm": [0, []]}

        def open_reader(kind, path):
            # one client through the move (the mount's): the file opened once,
            # the kernel's cached pages dropped before each read
            fd = os.open(path, os.O_RDONLY)
            try:
                while not stop.is_set():
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    try:
                        got = os.pread(fd, len(big) + 1, 0)
                    except OSError as e:
                        reads[kind][1].append(str(e))
                        continue
                    if got != big:
                        reads[kind][1].append("%d bytes, not the file's" % len(got))
                    else:
                        reads[kind][0] += 1
            finally:
                os.close(fd)

        def reader(kind, url):
            while not stop.is_set():
                p = arfctl("cat", url, check=False)
                if p.returncode or p.stdout != big:
                    reads[kind][1].append((p.returncode, len(p.stdout), p.stderr[-300:]))
                else:
                    reads[kind][0] += 1
        # and a writer that appends line after line, each made durable (fsync)
        # before the next: every line it was told is durable must be there
        synced = [0]

        def committer():
            i = 0
            while not stop.is_set():
                i += 1
                with open(m.p("proj/counter"), "a") as f:
                    f.write("value %d\n" % i)
                    f.flush()
                    os.fsync(f.fileno())
                synced[0] = i
        ts = [threading.Thread(target=reader, args=("tcp", a.url("/big?volume=proj"))),
              threading.Thread(target=reader, args=(
                  "shm", "arf+shm:///big?socket=%s&volume=proj" % a.socket))]
        if m:
            ts += [threading.Thread(target=committer),
                   threading.Thread(target=open_reader, args=("mount tcp", m.p("proj/big"))),
                   threading.Thread(target=open_reader, args=("mount shm", m2.p("proj/big")))]
        for t in ts:
            t.start()
        try:
            time.sleep(1.5)
            before = volumes(self.etcd)["proj"]
            out = json.loads(self.move(a, "proj", "b").stdout)
            time.sleep(1.5)
        finally:
            stop.set()
            for t in ts:
                t.join(60)
        print("vol move: %s" % out)
        print("reads during the run: %s; values made durable: %s" % (
            ", ".join("%s %d" % (k, v[0]) for k, v in reads.items()), synced[0]))
        self.assertEqual(out["server"], "b")
        self.assertGreater(out["bytes_sent"], len(big))
        self.assertLess(out["pause_seconds"], out["seconds"])
        for kind in ("tcp", "shm") + (("mount tcp", "mount shm") if m else ()):
            self.assertEqual(reads[kind][1], [], kind)
            self.assertGreater(reads[kind][0], 0, kind)
        after = volumes(self.etcd)["proj"]
        self.assertEqual(after, ("b", "online", before[2] + 1))
        # a's copy gone, b serves it, a's clients are sent on
        self.assertFalse(os.path.exists(os.path.join(a.data_dir, "volumes", "proj")))
        names = lambda d: [v["volume"] for v in json.loads(arfctl(  # noqa: E731
            "--json", "--control", d.control, "vol", "list").stdout)["volumes"]]
        self.assertNotIn("proj", names(a))
        self.assertIn("proj", names(b))
        self.assertEqual(arfctl("cat", b.url("/big?volume=proj")).stdout, big)
        self.assertEqual(arfctl("cat", a.url("/big?volume=proj")).stdout, big)
        if fio:
            fout, _ = fio.communicate(timeout=300)
            self.assertEqual(fio.returncode, 0, fout)
            with open(m.p("proj/before")) as f:
                self.assertEqual(f.read(), "written before the move\n")
            self.assertEqual(arfctl("cat", b.url("/counter?volume=proj")).stdout,
                             b"".join(b"value %d\n" % i for i in range(1, synced[0] + 1)))
            with open(m.p("proj/after"), "w") as f:
                f.write("written after the move\n")
            self.assertEqual(arfctl("cat", b.url("/after?volume=proj")).stdout,
                             b"written after the move\n")
            self.assertIn(b"fio.dat", arfctl("ls", b.url("/?volume=proj")).stdout)
        # b serves it after a restart, from its own data directory
        b.restart()
        self.assertEqual(arfctl("cat", b.url("/big?volume=proj")).stdout, big)
        wait_until(lambda: volumes(self.etcd).get("proj", ("",))[0] == "b", 15,
                   "proj still recorded on b")
        # and back to a, where the name is free again
        back = json.loads(self.move(b, "proj", "a").stdout)
        self.assertEqual(back["server"], "a")
        self.assertEqual(volumes(self.etcd)["proj"][0], "a")
        self.assertEqual(arfctl("cat", a.url("/big?volume=proj")).stdout, big)
        if m:
            with open(m.p("proj/after")) as f:
                self.assertEqual(f.read(), "written after the move\n")
            with open(m2.p("proj/after")) as f:
                self.assertEqual(f.read(), "written after the move\n")
            self.assertEqual(m.stop(), 0)
            self.assertEqual(m2.stop(), 0)
        for d in (a, b):
            self.assertNotIn("Sanitizer", d.log())

    def test_token_follows(self):
        """A tool holding a connection made with a user's credential token
        (arf-fuse's ARF_IOC_CRED, as arf-grep gets one) keeps that user's
        rights when its volume moves to another server and when it crosses
        into a volume of another server: in a cell whose servers share the
        move secret the token is the cell's.  Before, it failed with
        EREMOTE after the move, and crossed into another server's volume as
        the anonymous user."""
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        sec = self.secret("move.secret", "the servers' own")
        self.etcd.start()
        a = self.arfd("a", extra={"cell.move_secret_file": sec, "cell.root_volume": "root"})
        b = self.arfd("b", extra={"cell.move_secret_file": sec})
        c = self.arfd("c", extra={"cell.move_secret_file": self.secret("other", "another")})
        self.made(a)
        arfctl("vol", "mkmount", a.url("/proj"), "proj")
        os.chmod(self.tmp, 0o755)  # uid 1000 walks to the mount
        m = arfproc.Mount(a.url("/"), workdir=self.tmp)
        self.addCleanup(m.stop)
        m.start()
        with open(m.p("proj/mine"), "w") as f:
            f.write("uid 1000's own\n")
        os.chown(m.p("proj/mine"), 1000, 1000)
        os.chmod(m.p("proj/mine"), 0o600)
        as_user = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"]
        p = subprocess.run(as_user + ["/usr/bin/python3", "-c",
                            "import os, sys\n" + ioctl_cred_code(m.p("proj/mine"))],
                           capture_output=True, text=True, timeout=30)
        got = json.loads(p.stdout)
        tok = got["token"]
        self.assertEqual(struct.unpack_from("<I", bytes.fromhex(tok))[0], 2, "the cell's token")

        def holder(url, token, path="/proj/mine"):  # run by the user: no reserved port
            h = self.piped(as_user + [ITEST, "holder", url, token, path])
            return h, h.stdout.readline().strip()

        def ask(h):
            h.stdin.write("read\n")
            h.stdin.flush()
            return h.stdout.readline().strip()

        h, hello = holder(a.url("/"), tok)
        self.assertEqual(hello, "connected")
        self.assertEqual(ask(h), "ok uid 1000's own")
        anon, hello = holder(a.url("/"), "-")
        self.assertEqual(hello, "connected")
        self.assertRegex(ask(anon), "^err 13 ")  # the token is what reads it
        self.move(a, "proj", "b")
        wait_until(lambda: volumes(self.etcd).get("proj", ("",))[0] == "b", 15, "proj on b")
        # the same client, its connection to proj on a shut: sent on to b,
        # with the token
        self.assertEqual(ask(h), "ok uid 1000's own")
        self.assertRegex(ask(anon), "^err 13 ")
        # a new client of a crosses the mount point into b's volume with it
        h2, hello = holder(a.url("/"), tok)
        self.assertEqual(ask(h2), "ok uid 1000's own")
        # it lasts through b's restart (its ten minutes bound it, not an incarnation)
        b.restart()
        self.assertEqual(ask(h), "ok uid 1000's own")
        # forged, or checked by a server with another secret: refused at the handshake
        forged = bytearray(bytes.fromhex(tok))
        forged[4] = forged[5] = 0  # uid 1000 -> uid 0
        h3, hello = holder(b.url("/?volume=proj"), bytes(forged).hex())
        self.assertRegex(hello, "^err .*not minted in this cell")
        h4, hello = holder(c.url("/"), tok)
        self.assertRegex(hello, "^err .*not minted in this cell")
        # ... and a walk crossing into a volume there goes on without it
        arfctl("--control", c.control, "vol", "create", "other")
        wait_until(lambda: volumes(self.etcd).get("other", ("",))[0] == "c", 15,
                   "other recorded on c")
        arfctl("vol", "mkmount", a.url("/other"), "other")
        pub = os.path.join(self.tmp, "pub")
        with open(pub, "w") as f:
            f.write("anyone's\n")
        arfctl("put", pub, c.url("/pub?volume=other"))
        h8, hello = holder(a.url("/"), tok, "/other/pub")
        self.assertEqual((hello, ask(h8)), ("connected", "ok anyone's"))
        # made by hand with the servers' secret, as a member could: the
        # bounds a member's clock and host cannot stretch
        key = hashlib.blake2b(b"the servers' own", digest_size=32).digest()
        ckey = hashlib.blake2b(b"arf cell credential token v2: " + CELL.encode(), key=key,
                               digest_size=32).digest()
        host = [x["address"] for x in json.loads(arfctl(
            "--json", "cell", "status", "--etcd", self.etcd.url, "--cell", CELL).stdout)["servers"]
            if x["id"] == "b"][0]

        def minted(expires, host_of):
            body = struct.pack("<IIII16IQ8s16s", 2, 1000, 1000, 0, *([0] * 16), int(expires),
                               hashlib.blake2b(host_of.encode(), digest_size=8).digest(),
                               bytes(10) + b"\xff\xff" + socket.inet_aton("127.0.0.1"))
            return (body + hmac.new(ckey, body, hashlib.sha512).digest()[:32]).hex()
        url = b.url("/?volume=proj")
        h5, hello = holder(url, minted(time.time() + 600, host), "/mine")
        self.assertEqual((hello, ask(h5)), ("connected", "ok uid 1000's own"))
        h6, hello = holder(url, minted(time.time() + 3600, host))
        self.assertRegex(hello, "^err .*lasts longer than tokens do")
        h7, hello = holder(url, minted(time.time() + 600, "10.9.9.9"))
        self.assertRegex(hello, "^err .*another server's own host")
        # a mount over shm (no peer address) hands out the server's token
        m2 = arfproc.Mount(a.url("/", "shm"), workdir=self.tmp,
                           mountpoint=os.path.join(self.tmp, "mnt-shm"))
        self.addCleanup(m2.stop)
        m2.start()
        with open(m2.p("own"), "w") as f:
            f.write("root's\n")
        p = subprocess.run(as_user + ["/usr/bin/python3", "-c",
                                      "import os, sys\n" + ioctl_cred_code(m2.p("own"))],
                           capture_output=True, text=True, timeout=30)
        shm_tok = bytes.fromhex(json.loads(p.stdout)["token"])
        self.assertEqual(struct.unpack_from("<I", shm_tok)[0], 1, "the server's token")
        for x in (h, anon, h2):
            x.stdin.close()
            self.assertEqual(x.wait(30), 0)

    def test_locks_move(self):
        """A volume's byte-range locks move with it: a lock held through
        one mount excludes another mount's at once on the new server (the
        table came with the volume: no grace period, nothing to reclaim
        first), its holder writes on without EIO, and once it lets go the
        other mount takes it.  Before, the new server started a grace
        period (30 s here) with no locks in its table, and the other
        mount's attempt waited until the holder's libarf reclaimed."""
        why = arfproc.fuse_skip_reason()
        if why:
            self.skipTest(why)
        sec = self.secret("move.secret", "the servers' own")
        self.etcd.start()
        locks = {"locks.lease_s": "90", "locks.grace_s": "30"}
        a = self.arfd("a", extra=dict(locks, **{"cell.move_secret_file": sec,
                                                "cell.root_volume": "root"}))
        b = self.arfd("b", extra=dict(locks, **{"cell.move_secret_file": sec}))
        self.made(a)
        arfctl("vol", "mkmount", a.url("/proj"), "proj")
        mounts = []
        for k in range(2):
            m = arfproc.Mount(a.url("/"), workdir=self.tmp,
                              mountpoint=os.path.join(self.tmp, "mnt%d" % k))
            self.addCleanup(m.stop)
            m.start()
            mounts.append(m)
        with open(mounts[0].p("proj/lk"), "w") as f:
            f.write("x" * 4096)
        # the other mount locks and unlocks another file: a lease and no
        # lock, listed in the store, which must not make the receiver wait
        with open(mounts[1].p("proj/other"), "w") as f:
            fcntl.lockf(f, fcntl.LOCK_EX, 1, 0)
            fcntl.lockf(f, fcntl.LOCK_UN, 1, 0)
        holder = self.piped([sys.executable, "-c", (
            "import fcntl, os, sys\n"
            "fd = os.open(%r, os.O_RDWR)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX, 100, 0)\n"
            "print('held', flush=True)\n"
            "sys.stdin.readline()\n"
            "try:\n"
            "    os.pwrite(fd, b'after the move', 0)\n"
            "    os.fsync(fd)\n"
            "    print('wrote', flush=True)\n"
            "except OSError as e:\n"
            "    print('error', e, flush=True)\n"
            "sys.stdin.readline()\n") % mounts[0].p("proj/lk")])

        def said():
            ready = select.select([holder.stdout], [], [], 120)[0]
            self.assertTrue(ready, "the lock holder said nothing for 120 s")
            return holder.stdout.readline().strip()
        self.assertEqual(said(), "held")

        def try_lock():
            """The other mount, not waiting: 'taken' or 'busy', and how long."""
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-c", (
                "import fcntl, os\n"
                "fd = os.open(%r, os.O_RDWR)\n"
                "try:\n"
                "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 50)\n"
                "    print('taken')\n"
                "except BlockingIOError:\n"
                "    print('busy')\n") % mounts[1].p("proj/lk")],
                capture_output=True, text=True, timeout=120)
            return p.stdout.strip(), time.monotonic() - t0

        self.assertEqual(try_lock()[0], "busy")
        self.move(a, "proj", "b")
        wait_until(lambda: volumes(self.etcd).get("proj", ("",))[0] == "b", 15, "proj on b")
        show = json.loads(arfctl("--json", "--control", b.control, "vol", "show", "proj").stdout)
        self.assertEqual((show["locks"]["locks"], show["locks"]["grace_s"]), (1, 0), show)
        got, secs = try_lock()
        self.assertEqual(got, "busy")
        self.assertLess(secs, 20, "waited as for a grace period")  # the holder renews at 30 s
        holder.stdin.write("\n")
        holder.stdin.flush()
        self.assertEqual(said(), "wrote")
        holder.stdin.write("\n")
        holder.stdin.flush()
        self.assertEqual(holder.wait(30), 0)
        self.assertEqual(try_lock()[0], "taken")
        print("moved with its lock: the other mount's attempt answered busy in %.2f s" % secs)

    def test_refusals(self):
        """Each refusal says why, and leaves the volume served where it was
        with nothing staged on the receiver."""
        sec = self.secret("move.secret", "the servers' own")
        other = self.secret("other.secret", "not the same")
        self.etcd.start()
        a = self.arfd("a", extra={"cell.move_secret_file": sec},
                      config="[volume sect]\n")
        self.arfd("b", extra={"cell.move_secret_file": other})
        c = self.arfd("c")
        d = self.arfd("d", extra={"cell.move_secret_file": sec})
        self.made(a)
        hostname = os.path.join(self.tmp, "h")
        with open(hostname, "w") as f:
            f.write("a small file\n")
        arfctl("put", hostname, a.url("/h?volume=proj"))
        wait_until(lambda: {"a", "b", "c", "d"} <= live(self.etcd), 15, "four servers live")
        cases = [
            (("proj", "b"), "permission denied (is its [cell] move_secret_file the same?)"),
            (("proj", "c"), "permission denied (is its [cell] move_secret_file the same?)"),
            (("proj", "a"), "'a' is not another server of the cell"),
            (("proj", "nosuch"), "server 'nosuch' is not live in the cell"),
            (("nosuch", "d"), "no volume 'nosuch' on this server"),
            (("root", "d"), "root volume"),
            (("sect", "d"), "arfd.conf's ([volume sect])"),
        ]
        for args, msg in cases:
            p = self.move(a, *args, check=False)
            self.assertEqual(p.returncode, 1, (args, p.stdout, p.stderr))
            self.assertIn(msg, p.stderr.decode(), args)
            self.assertEqual(volumes(self.etcd)["proj"][0], "a")
            self.assertEqual(arfctl("cat", a.url("/h?volume=proj")).stdout,
                             b"a small file\n")
        for srv in ("b", "c"):  # nothing staged on a receiver that refused
            vols = os.path.join(self.tmp, srv, "data", "volumes")
            self.assertEqual([n for n in os.listdir(vols) if "proj" in n]
                             if os.path.isdir(vols) else [], [], srv)
        p = arfctl("--control", a.control, "vol", "move", "proj", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"vol move NAME SERVER", p.stderr)
        # a sender without the secret
        arfctl("--control", c.control, "vol", "create", "cvol")
        p = self.move(c, "cvol", "d", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"no [cell] move_secret_file", p.stderr)
        # clients without the secret asking d for nonces, one holding its
        # session open and others gone at once (reset): none holds d up
        held = rawwire.Wire("tcp", d.port)
        self.assertEqual(held.hello()[0], 0)
        held.send(OP_VOLUME_IN, rawwire.cred() + struct.pack("<I", CHALLENGE))
        self.assertEqual(held.recv()[0], 0)
        for _ in range(5):
            w = rawwire.Wire("tcp", d.port)
            self.assertEqual(w.hello()[0], 0)
            w.send(OP_VOLUME_IN, rawwire.cred() + struct.pack("<I", CHALLENGE))
            w.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            w.s.close()
        # after all that, the move that may happen does
        out = json.loads(self.move(a, "proj", "d").stdout)
        self.assertEqual(out["server"], "d")
        self.assertEqual(arfctl("cat", d.url("/h?volume=proj")).stdout,
                         b"a small file\n")
        held.s.close()


    def test_crossing_moves(self):
        """a sends pa to b while b sends pb to a: both land (each receiver's
        END takes its volumes' lock, which a sender holds only to look its
        volume up and to let it go), and each volume is served meanwhile."""
        sec = self.secret("move.secret", "the servers' own")
        self.etcd.start()
        a = self.arfd("a", extra={"cell.move_secret_file": sec})
        b = self.arfd("b", extra={"cell.move_secret_file": sec})
        src = os.path.join(self.tmp, "big")
        with open(src, "wb") as f:
            f.write(os.urandom(16 << 20))
        for d, vol in ((a, "pa"), (b, "pb")):
            arfctl("--control", d.control, "vol", "create", vol)
            arfctl("put", src, d.url("/big?volume=" + vol))
        wait_until(lambda: {"pa", "pb"} <= set(volumes(self.etcd)) and
                   {"a", "b"} <= live(self.etcd), 15, "both recorded")
        res = {}

        def go(d, vol, to):
            t = time.monotonic()
            res[vol] = (self.move(d, vol, to, check=False), time.monotonic() - t)
        ts = [threading.Thread(target=go, args=(a, "pa", "b")),
              threading.Thread(target=go, args=(b, "pb", "a"))]
        for t in ts:
            t.start()
        for _ in range(5):
            self.assertEqual(arfctl("ls", a.url("/?volume=pa")).returncode, 0)
            self.assertEqual(arfctl("ls", b.url("/?volume=pb")).returncode, 0)
        for t in ts:
            t.join(120)
        for vol, (p, took) in res.items():
            self.assertEqual(p.returncode, 0, (vol, p.stderr))
            print("%s moved in %.1f s" % (vol, took))
        recs = volumes(self.etcd)
        self.assertEqual((recs["pa"][0], recs["pb"][0]), ("b", "a"))
        with open(src, "rb") as f:
            want = f.read()
        self.assertEqual(arfctl("cat", a.url("/big?volume=pa")).stdout, want)
        self.assertEqual(arfctl("cat", b.url("/big?volume=pb")).stdout, want)

    def test_etcd_away(self):
        """A move is a change, and changes wait while etcd is away: with etcd
        stopped, vol move is refused before anything is sent (the volume
        serves on from the servers' copies of the cell); etcd stopped during
        a move leaves the volume on one server only, the one its record
        names once etcd is back; with etcd back, the move goes."""
        sec = self.secret("move.secret", "the servers' own")
        self.etcd.start()
        a = self.arfd("a", extra={"cell.move_secret_file": sec})
        b = self.arfd("b", extra={"cell.move_secret_file": sec})
        self.made(a)
        src = os.path.join(self.tmp, "big")
        with open(src, "wb") as f:
            f.write(os.urandom(64 << 20))
        arfctl("put", src, a.url("/big?volume=proj"))
        with open(src, "rb") as f:
            want = f.read()
        wait_until(lambda: {"a", "b"} <= live(self.etcd), 15, "both live")
        served = lambda d: "proj" in [v["volume"] for v in json.loads(arfctl(  # noqa: E731
            "--json", "--control", d.control, "vol", "list").stdout)["volumes"]]
        self.etcd.stop()
        p = self.move(a, "proj", "b", check=False)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn(b"etcd cannot be asked", p.stderr)
        self.assertEqual(arfctl("cat", a.url("/big?volume=proj")).stdout, want)
        self.assertTrue(served(a))
        self.assertFalse(served(b))
        self.assertEqual([n for n in os.listdir(os.path.join(b.data_dir, "volumes"))
                          if "proj" in n] if os.path.isdir(os.path.join(b.data_dir, "volumes"))
                         else [], [])
        # etcd gone in the middle of a move (after its first round began)
        self.etcd.start()
        wait_until(lambda: {"a", "b"} <= live(self.etcd), 15, "both live again")
        res = {}
        t = threading.Thread(target=lambda: res.setdefault("p", self.move(a, "proj", "b",
                                                                          check=False)))
        t.start()
        time.sleep(0.3)
        self.etcd.stop()
        t.join(120)
        print("vol move with etcd stopped 0.3 s in: rc %d, %s" % (
            res["p"].returncode, res["p"].stderr.decode().strip()[-200:]))
        self.etcd.start()
        wait_until(lambda: "proj" in volumes(self.etcd), 15, "etcd back")
        on = volumes(self.etcd)["proj"][0]
        self.assertEqual(on, "b" if res["p"].returncode == 0 else "a")
        holder = b if on == "b" else a
        other = a if on == "b" else b
        wait_until(lambda: served(holder) and not served(other), 15,
                   "proj served by %s alone" % on)
        self.assertEqual(arfctl("cat", a.url("/big?volume=proj")).stdout, want)
        if on == "a":  # and now it goes
            self.assertEqual(json.loads(self.move(a, "proj", "b").stdout)["server"], "b")
            self.assertEqual(arfctl("cat", b.url("/big?volume=proj")).stdout, want)

    def test_release_elsewhere(self):
        """vol release NAME SERVER: NAME.readonly made on another server from
        a snapshot (NAME serves on here), read-only there, its record naming
        that server; released again, replaced there under a reader; a
        replica this server held first is let go and its clients sent on;
        served again after the receiver's restart; refused without the
        secret, for a replica's name and where the record names a third
        server."""
        sec = self.secret("move.secret", "the servers' own")
        self.etcd.start()
        a = self.arfd("a", extra={"cell.move_secret_file": sec})
        b = self.arfd("b", extra={"cell.move_secret_file": sec})
        c = self.arfd("c")
        self.made(a)
        src = os.path.join(self.tmp, "f")
        for v in (1, 2, 3):
            with open(src + str(v), "wb") as f:
                f.write(b"version %d\n" % v + os.urandom(1 << 20))
        arfctl("put", src + "1", a.url("/f?volume=proj"))
        wait_until(lambda: {"a", "b", "c"} <= live(self.etcd), 15, "three live")
        # a local replica first: clients reach it on a
        arfctl("--control", a.control, "vol", "release", "proj")
        wait_until(lambda: volumes(self.etcd).get("proj.readonly", ("",))[0] == "a", 15,
                   "the local replica recorded")
        ro_a = a.url("/f?volume=proj.readonly")
        with open(src + "1", "rb") as f:
            v1 = f.read()
        self.assertEqual(arfctl("cat", ro_a).stdout, v1)
        # now to b: the record goes to b, a's replica goes, a's clients are sent on
        arfctl("put", src + "2", a.url("/f?volume=proj"))
        out = json.loads(arfctl("--json", "--control", a.control, "vol", "release", "proj",
                                "b").stdout)
        self.assertEqual((out["server"], out["released_from"]), ("b", "proj"))
        self.assertEqual(volumes(self.etcd)["proj.readonly"][0], "b")
        with open(src + "2", "rb") as f:
            v2 = f.read()
        self.assertEqual(arfctl("cat", b.url("/f?volume=proj.readonly")).stdout, v2)
        self.assertEqual(arfctl("cat", ro_a).stdout, v2)  # sent on to b
        names = lambda d: [v["volume"] for v in json.loads(arfctl(  # noqa: E731
            "--json", "--control", d.control, "vol", "list").stdout)["volumes"]]
        self.assertNotIn("proj.readonly", names(a))
        self.assertIn("proj.readonly", names(b))
        p = arfctl("put", src + "3", b.url("/g?volume=proj.readonly"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"Read-only file system", p.stderr)
        # released again: replaced on b under a reader holding it open
        arfctl("put", src + "3", a.url("/f?volume=proj"))
        with open(src + "3", "rb") as f:
            v3 = f.read()
        stop = threading.Event()
        bad = []

        def reader():
            while not stop.is_set():
                p = arfctl("cat", b.url("/f?volume=proj.readonly"), check=False)
                if p.returncode or p.stdout not in (v2, v3):
                    bad.append((p.returncode, p.stderr[-200:]))
        t = threading.Thread(target=reader)
        t.start()
        try:
            time.sleep(0.3)
            arfctl("--control", a.control, "vol", "release", "proj", "b")
            time.sleep(0.3)
        finally:
            stop.set()
            t.join(60)
        self.assertEqual(bad, [])
        self.assertEqual(arfctl("cat", b.url("/f?volume=proj.readonly")).stdout, v3)
        self.assertEqual(arfctl("cat", a.url("/f?volume=proj")).stdout, v3)
        b.restart()
        self.assertEqual(arfctl("cat", b.url("/f?volume=proj.readonly")).stdout, v3)
        p = arfctl("put", src + "3", b.url("/g?volume=proj.readonly"), check=False)
        self.assertIn(b"Read-only file system", p.stderr)
        # refusals
        self.made(a, "other")
        for args, msg in ((("proj", "c"), b"the cell records proj.readonly on server 'b'"),
                          (("other", "c"), b"move_secret_file the same?"),
                          (("proj.readonly", "b"), b"is a replica"),
                          (("proj", "nosuch"), b"not live in the cell")):
            p = arfctl("--control", a.control, "vol", "release", *args, check=False)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn(msg, p.stderr, args)
        arfctl("--control", c.control, "vol", "create", "cv")
        p = arfctl("--control", c.control, "vol", "release", "cv", "b", check=False)
        self.assertIn(b"no [cell] move_secret_file", p.stderr)
        self.assertEqual(volumes(self.etcd)["proj.readonly"][0], "b")
        self.assertNotIn("other.readonly", names(c))
        self.assertNotIn("other.readonly", volumes(self.etcd))

    def test_dropped_after_end(self):
        """The connection between the servers fails once the receiver has
        the volume, before the record is flipped (server.test_move_drop):
        the receiver keeps it and serves it once the flip lands; nothing is
        lost (it used to let its copy go while the sender flipped the
        record and deleted its own: the volume was gone from both)."""
        sec = self.secret("move.secret", "the servers' own")
        self.etcd.start()
        a = self.arfd("a", extra={"cell.move_secret_file": sec, "server.test_move_drop": "true"})
        b = self.arfd("b", extra={"cell.move_secret_file": sec})
        self.made(a)
        src = os.path.join(self.tmp, "f")
        with open(src, "wb") as f:
            f.write(os.urandom(2 << 20))
        with open(src, "rb") as f:
            want = f.read()
        arfctl("put", src, a.url("/f?volume=proj"))
        wait_until(lambda: {"a", "b"} <= live(self.etcd), 15, "both live")
        out = json.loads(self.move(a, "proj", "b").stdout)
        self.assertEqual(out["server"], "b")
        self.assertEqual(volumes(self.etcd)["proj"][0], "b")
        wait_until(lambda: arfctl("cat", b.url("/f?volume=proj"), check=False).stdout == want,
                   15, "b serves proj")
        self.assertEqual(arfctl("cat", a.url("/f?volume=proj")).stdout, want)
        self.assertIn("test_move_drop", a.log())

    def test_hostile_stream(self):
        """ARF_OP_VOLUME_IN sent by hand: without a session, with a wrong
        MAC, a replayed one, from a second connection, with paths that leave
        the staging directory and with truncated bodies: each refused, the
        session ended where the MAC is wrong, nothing left staged, and the
        server serves on."""
        text = "the servers' own"
        sec = self.secret("move.secret", text)
        self.etcd.start()
        d = self.arfd("d", extra={"cell.move_secret_file": sec})
        wait_until(lambda: "d" in live(self.etcd), 15, "d live")
        key = hashlib.blake2b(text.encode(), digest_size=32).digest()

        def req(step, fields=b""):
            return rawwire.cred() + struct.pack("<I", step) + fields

        def mac(nonce, counter, body):
            msg = nonce + struct.pack("<Q", counter) + body[len(rawwire.cred()):]
            return hmac.new(key, msg, hashlib.sha512).digest()[:32]

        def conn():
            w = rawwire.Wire("tcp", d.port)
            st, _ = w.hello()
            self.assertEqual(st, 0)
            return w

        def call(w, body):
            w.send(OP_VOLUME_IN, body)
            return w.recv()

        begin = rawwire.name("evil") + rawwire.name("x") + rawwire.name("") + struct.pack("<I", 0)
        w = conn()
        # no session yet
        self.assertEqual(call(w, req(BEGIN, begin) + b"\0" * 32)[0], S_INVAL)
        st, nonce = call(w, req(CHALLENGE))
        self.assertEqual((st, len(nonce)), (0, 32))
        # a second connection gets a session of its own (asking holds nothing up)
        w2 = conn()
        st2, nonce2 = call(w2, req(CHALLENGE))
        self.assertEqual((st2, len(nonce2)), (0, 32))
        # a wrong MAC ends the session; so does the shared secret's key
        self.assertEqual(call(w, req(BEGIN, begin) + b"\0" * 32)[0], S_ACCES)
        self.assertEqual(call(w, req(FILE, rawwire.name("x") + struct.pack("<QQ", 1, 0)) +
                              b"\0" * 32)[0], S_INVAL)
        # with the secret: BEGIN, then paths out of the staging directory
        st, nonce = call(w, req(CHALLENGE))
        body = req(BEGIN, begin)
        self.assertEqual(call(w, body + mac(nonce, 1, body))[0], 0)
        self.assertEqual(call(w, body + mac(nonce, 1, body))[0], S_ACCES)  # replayed
        st, nonce = call(w, req(CHALLENGE))
        self.assertEqual(call(w, body + mac(nonce, 1, body))[0], 0)
        # one volume taken at a time: the second session, proven, waits its turn
        other = req(BEGIN, rawwire.name("evil2") + rawwire.name("y") + rawwire.name("") +
                    struct.pack("<I", 0))
        self.assertEqual(call(w2, other + mac(nonce2, 1, other))[0], S_BUSY)
        w2.s.close()
        n = 2
        for bad in ("../../evil", "datalog/../../x", "/etc/passwd", ".hidden", "volume.conf",
                    "a/b", "datalog/", "x" * 200):
            body = req(FILE, rawwire.name(bad) + struct.pack("<QQ", 0, 0))
            st, _ = call(w, body + mac(nonce, n, body))
            n += 1
            self.assertNotEqual(st, 0, bad)
        for cut in (req(DATA, struct.pack("<Q", 0)), req(KEEP, struct.pack("<I", 5)),
                    req(FILE, b"\x05\0\0\0ab")):
            st, _ = call(w, cut + mac(nonce, n, cut))
            n += 1
            self.assertNotEqual(st, 0, cut)
        # a file kept from a round before that there was not, or more kept than it has
        for size, keep in ((8, 4), (4, 8), (1 << 41, 0)):
            body = req(FILE, rawwire.name("CURRENT") + struct.pack("<QQ", size, keep))
            self.assertNotEqual(call(w, body + mac(nonce, n, body))[0], 0, (size, keep))
            n += 1
        # DATA with no FILE, a KEEP naming what is not there
        body = req(DATA, struct.pack("<Q", 0) + rawwire.name("abc"))
        self.assertNotEqual(call(w, body + mac(nonce, n, body))[0], 0)
        n += 1
        body = req(KEEP, struct.pack("<I", 1) + rawwire.name("CURRENT") + struct.pack("<Q", 9))
        self.assertNotEqual(call(w, body + mac(nonce, n, body))[0], 0)
        n += 1
        vols = os.path.join(d.data_dir, "volumes")
        self.assertTrue(os.path.isdir(os.path.join(vols, "+evil.in")))
        w.s.close()  # the sender gone: what it staged goes
        wait_until(lambda: not os.path.exists(os.path.join(vols, "+evil.in")), 10,
                   "the staging directory removed")
        for bad in (os.path.join(d.data_dir, "evil"), os.path.join(vols, "x")):
            self.assertFalse(os.path.exists(bad), bad)
        self.assertEqual(arfctl("ls", d.url("/")).returncode, 0)
        self.assertNotIn("evil", [v["volume"] for v in json.loads(arfctl(
            "--json", "--control", d.control, "vol", "list").stdout)["volumes"]])


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
