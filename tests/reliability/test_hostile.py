#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Broken and hostile peers at the socket level, against a real arfd: a
client that stops reading its replies, a flood of connections past the
server's limit, connections that never finish their handshake.  Each gets
a closed connection (or waits alone); arfd stays up and other clients are
served meanwhile.  Frames (class Frames): truncated, too short and
oversized frames, frames before the handshake, unknown net and request
operations, request bodies cut or garbled, one-sided reads with wrong keys,
regions and ranges, one-sided writes into the read-only regions, over tcp
and the UNIX socket: each gets an error status or a closed connection,
never a success, and arfd keeps serving others.  (The in-process net server
gets the same treatment in tests/net/test_net.c.)"""
import array
import json
import os
import random
import re
import resource
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import ArfdTestCase, arfctl  # noqa: E402

HDR = struct.Struct("<IHHQiI")  # len, op, flags, id, status, aux
OP_HELLO, OP_READ = 1, 2


def frame(op, ident, body=b"", aux=0):
    return HDR.pack(HDR.size + len(body), op, 0, ident, 0, aux) + body


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def hello(port):
    """Handshake by hand; returns the socket and {region id: (size, key)}."""
    s = socket.create_connection(("127.0.0.1", port))
    body = struct.pack("<II", 1, 0) + b"/".ljust(256, b"\0")
    s.sendall(frame(OP_HELLO, 0, body, aux=1))
    ln, op, flags, ident, status, aux = HDR.unpack(recv_exact(s, HDR.size))
    assert op == OP_HELLO and status == 0, (op, status)
    b = recv_exact(s, ln - HDR.size)
    n = struct.unpack_from("<I", b)[0]
    regions = {}
    for i in range(n):
        rid, fl, size, key = struct.unpack_from("<IIQQ", b, 4 + 24 * i)
        regions[rid] = (size, key)
    return s, regions


def timed_stat(url):
    t = time.time()
    arfctl("stat", url)
    return time.time() - t


class Hostile(ArfdTestCase):
    extra = {"export.one_sided": "all"}  # the hand-made hello gets region keys

    def test_client_that_stops_reading(self):
        arfctl("mkdir", self.arfd.url("/alive"))
        s, regions = hello(self.arfd.port)
        self.addCleanup(s.close)
        size, key = regions[1]  # the data region
        req = frame(OP_READ, 7, struct.pack("<IIQQ", 1, 1 << 20, key, 0), aux=1)
        s.setblocking(False)
        frames, buf, blocked_since, slowest = 0, b"", None, 0.0
        deadline = time.time() + 30
        # ask for 1 MiB reads and never read a reply, until the server stops
        # taking requests from us (its queue for us is full) for 2 s
        while time.time() < deadline:
            if not buf:
                buf = req
            try:
                buf = buf[s.send(buf):]
                if not buf:
                    frames += 1
                blocked_since = None
                continue
            except BlockingIOError:
                pass
            if blocked_since is None:
                blocked_since = time.time()
            elif time.time() - blocked_since > 2:
                break
            slowest = max(slowest, timed_stat(self.arfd.url("/alive")))
            time.sleep(0.1)
        self.assertIsNotNone(blocked_since, "the server kept reading a client that reads nothing")
        # other clients are served at once while this one is stalled
        for _ in range(5):
            slowest = max(slowest, timed_stat(self.arfd.url("/alive")))
        self.assertLess(slowest, 2.0, "another client waited on the stalled one")
        self.assertIsNone(self.arfd.proc.poll(), "arfd died")
        print(f"stalled client: {frames} x 1 MiB READs sent and never read; "
              f"the server stopped reading it, other clients' stat took at most "
              f"{slowest * 1000:.0f} ms")

    def test_connection_flood_is_bounded(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, 4096)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))
        n = min(1400, want - 100)
        socks = []
        self.addCleanup(lambda: [x.close() for x in socks])
        for _ in range(n):
            try:
                socks.append(socket.create_connection(("127.0.0.1", self.arfd.port), timeout=5))
            except OSError:
                break
        # past the limit (1024) the server closes what it accepts
        time.sleep(1.0)
        closed = 0
        for x in socks:
            x.setblocking(False)
            try:
                if x.recv(1) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        self.assertIsNone(self.arfd.proc.poll(), "arfd died under the flood")
        self.assertGreater(closed, 0, "no connection past the limit was refused")
        for x in socks:
            x.close()
        socks.clear()
        time.sleep(0.5)
        self.assertLess(timed_stat(self.arfd.url("/")), 2.0)
        print(f"flood: {n} connections opened, {closed} closed by arfd past its limit; "
              f"arfd serves afterwards")

    def test_silent_connections_expire(self):
        s = socket.create_connection(("127.0.0.1", self.arfd.port))
        self.addCleanup(s.close)
        s.settimeout(20)
        t = time.time()
        self.assertEqual(s.recv(1), b"", "a connection without a handshake was kept")
        waited = time.time() - t
        self.assertGreater(waited, 5)
        self.assertLess(timed_stat(self.arfd.url("/")), 2.0)
        print(f"silent connection closed by arfd after {waited:.1f} s without a handshake")


# ---------------------------------------------------------------- frames
# Statuses on the wire (net/arf_net.h): POSIX ones, and ARF's own as
# ARF_NET_S_ARF_BASE + (ARF_ERR_MAX - err) (common: ARF_ERR_MAX = -1000).
S_OK, S_INVAL, S_NOSYS = 0, 10, 26
S_EPROTO = 1000 + 6    # ARF_EPROTO: malformed frame or request body
S_EVERSION = 1000 + 7  # ARF_EVERSION: HELLO with another protocol version
S_EKEY = 1000 + 13     # ARF_EKEY: one-sided access refused (region, key, bounds, rights)
OP_WRITE, OP_CAS, OP_FAA = 3, 4, 5
F_REPLY = 0x1
MAX_FRAME = 16 << 20   # ARF_NET_MAX_FRAME
MAX_BATCH = 4096       # ARF_NET_MAX_BATCH
U64 = (1 << 64) - 1
TIMEOUT = 20           # seconds: any wait longer than this is a hang
HELLO_BODY = struct.pack("<II", 1, 0) + b"/".ljust(256, b"\0")

# Request kinds (net/arf_proto.h) and their fields after the credentials.
REQUESTS = {
    0x100: ["fh"], 0x101: ["fh", "name"], 0x102: ["fh", "u64", "u32"],
    0x103: ["fh", "u64", "u32"], 0x104: ["fh"], 0x105: [], 0x106: ["fh", "u32"],
    0x107: ["fh", "u64", "u32"],
    0x110: ["fh", "name", "u32", "u32"], 0x111: ["fh", "name", "u32"],
    0x112: ["fh", "name", "u32", "u64"], 0x113: ["fh", "name"], 0x114: ["fh", "name"],
    0x115: ["fh", "name", "fh", "name", "u32"], 0x116: ["fh", "fh", "name"],
    0x117: ["fh", "name", "bytes"], 0x118: ["fh", "setattr"], 0x119: ["fh", "u64", "bytes"],
    0x11a: ["fh"], 0x11b: ["fh", "u64"], 0x11c: ["fh", "bytes"],
    0x11d: ["fh", "name", "u32", "setattr", "bytes"],
    0x11e: ["fh", "u64", "fh", "u64", "u64", "u32"], 0x11f: ["fh", "u32", "u64", "u64"],
    0x120: [], 0x121: [], 0x122: ["fh", "u64", "u32"], 0x130: ["bytes"],
    0x131: ["hash", "u32", "bytes"],
    # locks: LOCK's request (client, lease, owner, pid, kind, type, flags,
    # start, end, wait id, wait ms), UNLOCK, LOCK_RENEW, LOCK_CANCEL
    0x123: ["fh", "u64", "u64", "u64", "u32", "u32", "u32", "u32", "u64", "u64", "u64", "u32"],
    0x124: ["fh", "u64", "u64", "u64", "u32", "u64", "u64"], 0x125: ["u64", "u64", "u32"],
    0x126: ["u64", "u64"],
    # LOCATE: a volume's name
    0x127: ["name"],
    # extended attributes: GET, SET, LIST, REMOVE
    0x128: ["fh", "name", "u32"], 0x129: ["fh", "name", "bytes", "u32"], 0x12a: ["fh", "u32"],
    0x12b: ["fh", "name"],
    # VOLUME_IN (vol move's stream): a step, its fields, a MAC
    0x12c: ["u32", "name", "bytes", "hash"],
}
# kinds whose body may end with one more field: CREATE, MKDIR and MKNOD's
# umask (4 bytes), which "trailing" garbage must not be mistaken for
OPTIONAL_TAIL = {0x110: 4, 0x111: 4, 0x112: 4}
PROG_OPS = (0x130, 0x131)
OP_VOLUME_IN = 0x12c
S_ACCES = 5


def header_ops():
    """The request kinds net/arf_proto.h defines ({value: name}), so that a
    kind added there is never sent as an "unknown" one."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "net",
                        "arf_proto.h")
    with open(path) as f:
        ops = dict((int(v, 16), n) for n, v in
                   re.findall(r"\b(ARF_OP_[A-Z_]+)\s*=\s*(0x[0-9a-fA-F]+)", f.read()))
    return {v: n for v, n in ops.items() if n != "ARF_OP_MAX"}


KNOWN_OPS = header_ops()
UNKNOWN_REQUESTS = tuple(op for op in (0x107, 0x108, 0x10f, 0x11b, 0x11f, 0x122, 0x12f, 0x132,
                                       0x1ff, 0x200, 0x1000, 0x7fff, 0xfffe, 0xffff)
                         if op not in KNOWN_OPS)
UNKNOWN_NET_OPS = (0, 6, 7, 0x42, 0x80, 0xff)


def rd(region, ln, key, off):
    return struct.pack("<IIQQ", region, ln, key, off)


def rmw(region, ln, key, off, a0=0, a1=0):
    return struct.pack("<IIQQQQ", region, ln, key, off, a0, a1)


def cred(rng):
    ng = rng.randrange(0, 17)
    return struct.pack("<III", 1000, 1000, ng) + b"".join(
        struct.pack("<I", rng.randrange(1 << 32)) for _ in range(ng))


def request_fields(op, rng):
    """A well-formed body for op, as [(kind, bytes)], credentials first."""
    out = [("cred", cred(rng))]
    for k in REQUESTS[op]:
        if k == "fh":
            b = struct.pack("<QI", rng.choice((1, 2, rng.randrange(1 << 64))), rng.randrange(4))
        elif k == "u32":
            b = struct.pack("<I", rng.randrange(1 << 32))
        elif k == "u64":
            b = struct.pack("<Q", rng.randrange(1 << 64))
        elif k == "setattr":
            b = bytes(rng.randrange(256) for _ in range(40))
        elif k == "hash":
            b = bytes(rng.randrange(256) for _ in range(32))
        else:  # name, bytes: u32 length + bytes
            n = bytes(rng.randrange(97, 123) for _ in range(rng.randrange(1, 40)))
            b = struct.pack("<I", len(n)) + n
        out.append((k, b))
    return out


def garbled_body(op, rng):
    """A body arfd's decoder must refuse (ARF_EPROTO) whatever its bytes:
    cut short, with bytes left over, with more than 16 groups, with a name
    of length 0 or a length prefix past the end, or plain noise whose group
    count is out of range.  Returns (how, body)."""
    fields = request_fields(op, rng)
    body = b"".join(b for _, b in fields)
    how = rng.choice(("cut", "trailing", "groups", "length", "noise"))
    if how == "length" and not any(k in ("name", "bytes") for k, _ in fields):
        how = "cut"
    if how == "cut":
        return how, body[:rng.randrange(len(body))]
    if how == "trailing":
        n = rng.randrange(1, 17)
        if n == OPTIONAL_TAIL.get(op):
            n += 1
        return how, body + bytes(rng.randrange(256) for _ in range(n))
    if how == "groups":
        return how, struct.pack("<III", 0, 0, rng.randrange(17, 1 << 32)) + body[12:]
    if how == "noise":
        noise = bytearray(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        if len(noise) >= 12:
            noise[8:12] = struct.pack("<I", rng.randrange(17, 1 << 32))
        return how, bytes(noise)
    # a name of length 0, or a length that runs past the end of the body
    idx = rng.choice([i for i, (k, _) in enumerate(fields) if k in ("name", "bytes")])
    rest = sum(len(b) for _, b in fields[idx:]) - 4
    k = fields[idx][0]
    if k == "name" and rng.random() < 0.3:
        ln = 0
    else:
        ln = rng.choice((rest + 1 + rng.randrange(4096), 0xffffffff - rng.randrange(64)))
    fields[idx] = (k, struct.pack("<I", ln) + fields[idx][1][4:])
    return how, b"".join(b for _, b in fields)


class Peer:
    """A raw connection to arfd over tcp or its UNIX socket, with the frames
    it receives cut out of the byte stream; every wait is bounded."""

    def __init__(self, d, transport):
        self.transport = transport
        if transport == "tcp":
            self.s = socket.create_connection(("127.0.0.1", d.port), timeout=TIMEOUT)
        else:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.settimeout(TIMEOUT)
            self.s.connect(d.socket)
        self.buf = b""
        self.eof = False
        self.regions = {}

    def close(self):
        self.s.close()

    def send(self, data):
        """False if arfd already closed the connection."""
        try:
            self.s.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def _fill(self):
        try:
            if self.transport == "tcp":
                data = self.s.recv(1 << 16)
            else:  # the HELLO reply brings region descriptors: close them
                data, anc, _, _ = self.s.recvmsg(1 << 16, socket.CMSG_SPACE(4 * 16))
                for level, kind, cdata in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds = array.array("i")
                        fds.frombytes(cdata[:len(cdata) - len(cdata) % fds.itemsize])
                        for fd in fds:
                            os.close(fd)
        except socket.timeout:
            raise AssertionError(f"{self.transport}: nothing from arfd in {TIMEOUT} s (a hang)")
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
        self.buf += data
        return bool(data)

    def frame(self):
        """The next frame (header tuple, body), or None once arfd closed."""
        while True:
            if len(self.buf) >= HDR.size:
                h = HDR.unpack_from(self.buf)
                if len(self.buf) >= h[0]:
                    body, self.buf = self.buf[HDR.size:h[0]], self.buf[h[0]:]
                    return h, body
            if self.eof or not self._fill():
                return None

    def hello(self):
        self.send(frame(OP_HELLO, 0, HELLO_BODY, aux=1))
        f = self.frame()
        assert f is not None and f[0][1] == OP_HELLO and f[0][4] == S_OK, f
        b = f[1]
        for i in range(struct.unpack_from("<I", b)[0]):
            rid, fl, size, key = struct.unpack_from("<IIQQ", b, 4 + 24 * i)
            self.regions[rid] = (fl, size, key)
        return self

    def replies(self, want):
        """Read until every id in want ({id: allowed statuses}) has its reply;
        returns {id: (header, body)}."""
        got = {}
        while len(got) < len(want):
            f = self.frame()
            if f is None:
                raise AssertionError(f"{self.transport}: arfd closed the connection with "
                                     f"{len(want) - len(got)} replies missing")
            h, body = f
            ident, status = h[3], h[4]
            assert ident in want and ident not in got, f"unexpected reply {h}"
            assert status in want[ident], (
                f"{self.transport}: reply to frame {ident} (op {h[1]:#x}) has status {status}, "
                f"expected one of {sorted(want[ident])}: {body[:80]!r}")
            got[ident] = f
        return got

    def closed(self):
        """Wait for arfd to close the connection; returns the frames it sent
        before, none of which may be a success."""
        frames = []
        while True:
            f = self.frame()
            if f is None:
                for h, body in frames:
                    assert h[4] != S_OK, f"{self.transport}: a success before the close: {h}"
                return frames
            frames.append(f)


class RequestTable(unittest.TestCase):
    def test_every_request_kind_has_its_fields(self):
        """The garbled bodies need each kind's fields: a kind arf_proto.h
        adds (or drops) must be added here too, not go untested."""
        missing = {hex(v): n for v, n in KNOWN_OPS.items() if v not in REQUESTS}
        stale = [hex(v) for v in REQUESTS if v not in KNOWN_OPS]
        self.assertEqual(missing, {}, "request kinds without fields in REQUESTS")
        self.assertEqual(stale, [], "REQUESTS names kinds arf_proto.h does not define")
        self.assertGreaterEqual(len(UNKNOWN_REQUESTS), 10)
        print("request kinds: %d in arf_proto.h, all with their fields; %d unknown kinds sent"
              % (len(KNOWN_OPS), len(UNKNOWN_REQUESTS)))


class Frames(ArfdTestCase):
    """Malformed, unknown and out-of-bounds frames against a real arfd."""
    extra = {"export.one_sided": "all"}  # every client gets region keys

    def setUp(self):
        super().setUp()
        self.tried = {}
        self.ident = 1000
        self.rng = random.Random(0x4152_4608)  # fixed seed: the same frames every run
        self.eproto_replies = 0  # malformed requests arfd answered with ARF_EPROTO
        self.bad_frames = 0      # frames the soft-NIC must count as bad_frames
        self.refused = 0         # one-sided operations it must count as refused
        self.hello_refused = 0   # handshakes it must count as refused connections

    def next_id(self):
        self.ident += 1
        return self.ident

    def count(self, group, n=1):
        self.tried[group] = self.tried.get(group, 0) + n

    def peer(self, transport, hello=True):
        p = Peer(self.arfd, transport)
        self.addCleanup(p.close)
        return p.hello() if hello else p

    def stats(self):
        return json.loads(arfctl("--control", self.arfd.control, "--json", "stats").stdout)

    def served(self, group):
        """arfd is up and another client is served at once."""
        self.assertIsNone(self.arfd.proc.poll(), f"arfd died after {group}")
        took = timed_stat(self.arfd.url("/hostile"))
        self.assertLess(took, 5.0, f"another client waited {took:.1f} s after {group}")

    # -- the groups; each takes the transport ("tcp" or "unix")

    def g_cut(self, tr):
        """Frames cut short, then the client's side closed: arfd closes too."""
        for i in range(24):
            ready = i % 2 == 0
            p = self.peer(tr, hello=ready)
            whole = (frame(OP_READ, self.next_id(), rd(1, 8, 1, 0), aux=1) if ready
                     else frame(OP_HELLO, 0, HELLO_BODY, aux=1))
            if i < 12:  # the header cut
                cut = whole[:self.rng.randrange(1, HDR.size)]
            else:       # the body cut
                cut = whole[:self.rng.randrange(HDR.size, len(whole))]
            p.send(cut)
            p.s.shutdown(socket.SHUT_WR)
            self.assertEqual(p.closed(), [], "a reply to half a frame")
            p.close()
            self.count("cut")
        # a header announcing the largest frame, a few bytes of it, then EOF
        for ready in (False, True):
            p = self.peer(tr, hello=ready)
            p.send(HDR.pack(MAX_FRAME, OP_READ, 0, self.next_id(), 0, 1) + b"\0" * 1000)
            p.s.shutdown(socket.SHUT_WR)
            self.assertEqual(p.closed(), [])
            p.close()
            self.count("cut")

    def g_bad_len(self, tr):
        """len smaller than the header, or beyond ARF_NET_MAX_FRAME: closed at once
        (counted in bad_frames), without waiting for the bytes announced."""
        lens = [0, 1, 4, 8, 16, 23] + [MAX_FRAME + 1, MAX_FRAME + 4096, 1 << 31, 0xffffffff]
        for ln in lens:
            for ready in (False, True):
                p = self.peer(tr, hello=ready)
                p.send(HDR.pack(ln, OP_READ, 0, self.next_id(), 0, 1) + rd(1, 8, 1, 0))
                self.assertEqual(p.closed(), [], f"len {ln}: a reply")
                p.close()
                self.bad_frames += 1
                self.count("short len" if ln < HDR.size else "oversized len")

    def g_before_hello(self, tr):
        """Anything but HELLO first: closed without a word (bad_frames)."""
        bodies = [
            (OP_READ, rd(1, 8, self.rng.randrange(1, 1 << 64), 0), 1),
            (OP_WRITE, rmw(2, 8, 1, 0) + b"x" * 8, 0),
            (OP_CAS, rmw(2, 8, 1, 0, 0, 1), 0),
            (OP_FAA, rmw(2, 8, 1, 0, 1), 0),
            (0, b"", 0), (6, b"junk", 0), (0xff, b"", 0),
            (0x100, cred(self.rng) + struct.pack("<QI", 1, 0), 0),
            (0x120, cred(self.rng), 0), (0x130, b"", 0), (0xffff, b"\0" * 64, 0),
        ]
        for op, body, aux in bodies:
            p = self.peer(tr, hello=False)
            # and a HELLO right behind: it must not be reached
            p.send(frame(op, self.next_id(), body, aux) + frame(OP_HELLO, 0, HELLO_BODY, aux=1))
            self.assertEqual(p.closed(), [], f"op {op:#x} before HELLO got a reply")
            p.close()
            self.bad_frames += 1
            self.count("before hello")
        # a HELLO flagged as a reply: clients send none
        p = self.peer(tr, hello=False)
        p.send(HDR.pack(HDR.size + len(HELLO_BODY), OP_HELLO, F_REPLY, 0, 0, 1) + HELLO_BODY)
        self.assertEqual(p.closed(), [])
        self.bad_frames += 1
        self.count("before hello")

    def g_handshake(self, tr):
        """Bad HELLOs: an error status, then closed (refused connections)."""
        cases = [
            (frame(OP_HELLO, 0, HELLO_BODY, aux=2), S_EVERSION),          # net version
            (frame(OP_HELLO, 0, HELLO_BODY, aux=0xffffffff), S_EVERSION),
            (frame(OP_HELLO, 0, struct.pack("<II", 2, 0) + HELLO_BODY[8:], aux=1),
             S_EVERSION),                                                  # request version
            (frame(OP_HELLO, 0, b"", aux=1), S_EPROTO),                    # no hello blob
            (frame(OP_HELLO, 0, HELLO_BODY[:100], aux=1), S_EPROTO),       # cut blob
        ]
        for data, want in cases:
            p = self.peer(tr, hello=False)
            p.send(data)
            got = p.closed()
            self.assertEqual([h[4] for h, _ in got], [want], f"{data[:32]!r}")
            p.close()
            self.hello_refused += 1
            self.count("bad hello")
        # a second HELLO on a ready connection: refused, the connection lives on
        p = self.peer(tr)
        ids = {}
        for _ in range(3):
            ids[self.next_id()] = {S_EPROTO}
            p.send(frame(OP_HELLO, max(ids), HELLO_BODY, aux=1))
        p.replies(ids)
        self.bad_frames += 3
        self.count("bad hello", 3)
        self.good_read(p)

    def good_read(self, p):
        """The connection still works: a well-formed read of the superblock."""
        ident = self.next_id()
        fl, size, key = p.regions[0]
        p.send(frame(OP_READ, ident, rd(0, 64, key, 0), aux=1))
        h, body = p.replies({ident: {S_OK}})[ident]
        self.assertEqual(len(body), 64)

    def g_net_ops(self, tr):
        """Unknown net operations after HELLO: ARF_EPROTO each, connection kept;
        then a frame flagged as a reply: closed."""
        p = self.peer(tr)
        want = {}
        for op in UNKNOWN_NET_OPS:
            for body in (b"", bytes(self.rng.randrange(256) for _ in range(40))):
                ident = self.next_id()
                want[ident] = {S_EPROTO}
                p.send(frame(op, ident, body, aux=self.rng.randrange(1 << 32)))
        got = p.replies(want)
        self.assertTrue(all(b.startswith(b"unknown operation") for _, b in got.values()))
        self.bad_frames += len(want)
        self.count("unknown net op", len(want))
        self.good_read(p)
        fl, size, key = p.regions[0]
        p.send(HDR.pack(HDR.size + 24, OP_READ, F_REPLY, self.next_id(), 0, 1) + rd(0, 8, key, 0))
        self.assertEqual(p.closed(), [])
        self.bad_frames += 1
        self.count("unknown net op")

    def g_request_ops(self, tr):
        """Unknown request kinds: ENOSYS behind good credentials, ARF_EPROTO
        without; and a READ request past the largest I/O: EINVAL."""
        p = self.peer(tr)
        want = {}
        for op in UNKNOWN_REQUESTS:
            for body, st in ((cred(self.rng), S_NOSYS), (b"", S_EPROTO),
                             (b"\xff" * 12, S_EPROTO)):
                ident = self.next_id()
                want[ident] = {st}
                p.send(frame(op, ident, body))
                self.eproto_replies += st == S_EPROTO
        ident = self.next_id()
        want[ident] = {S_INVAL}
        p.send(frame(0x103, ident, cred(self.rng) + struct.pack("<QIQI", 1, 0, 0, 0xffffffff)))
        p.replies(want)
        self.count("unknown request op", len(want))
        self.good_read(p)

    def g_bodies(self, tr):
        """Every request kind with bodies cut short or garbled: ARF_EPROTO
        (programs: ENOSYS too, where mobile code is off; VOLUME_IN: EACCES
        too, from a server that takes no volumes)."""
        p = self.peer(tr)
        hows = {}
        for op in sorted(REQUESTS):
            want = {}
            for _ in range(12):
                how, body = garbled_body(op, self.rng)
                hows[how] = hows.get(how, 0) + 1
                ident = self.next_id()
                want[ident] = ({S_EPROTO, S_NOSYS} if op in PROG_OPS else
                               {S_EPROTO, S_ACCES} if op == OP_VOLUME_IN else {S_EPROTO})
                p.send(frame(op, ident, body))
            got = p.replies(want)
            self.eproto_replies += sum(h[4] == S_EPROTO for h, _ in got.values())
            self.count("garbled body", len(want))
        self.good_read(p)
        return hows

    def g_reads(self, tr):
        """One-sided READs with a wrong key or region, past the end, wrapping
        2^64, malformed batches: ARF_EKEY (bad batches: ARF_EPROTO); never data."""
        p = self.peer(tr)
        rng = self.rng
        regs = p.regions
        self.assertGreaterEqual(len(regs), 3)
        want, n = {}, 0

        def send(body, aux=None, st=S_EKEY):
            nonlocal n
            ident = self.next_id()
            want[ident] = {st}
            p.send(frame(OP_READ, ident, body, aux=len(body) // 24 if aux is None else aux))
            n += 1
            if st == S_EPROTO:
                self.bad_frames += 1
            self.refused += 1

        for rid, (fl, size, key) in regs.items():
            for bad in (key ^ 1, key ^ (1 << 63), 0, U64, rng.randrange(1 << 64)):
                if bad != key:
                    send(rd(rid, 8, bad, 0))
            other = [k for r, (_, _, k) in regs.items() if r != rid][0]
            send(rd(rid, 8, other, 0))                 # another region's key
            send(rd(rid, 1, key, size))                # past the end
            send(rd(rid, 2, key, size - 1))            # straddling it
            send(rd(rid, 0, key, size + 1))            # nothing, but from past it
            if size < 0xffffffff:
                send(rd(rid, size + 1, key, 0))        # longer than the region
            send(rd(rid, 8, key, 1 << 63))
            send(rd(rid, 16, key, U64 - 7))            # off + len wraps 2^64
            send(rd(rid, 2, key, U64))
            send(rd(rid, 0xffffffff, key, U64 - 0xfffffffe))
            send(rd(rid, 0xffffffff, key, 2 * size + 1))
        for rid in {3, 15, 16, 255, 0xffffffff} - set(regs):  # no such region
            for key in (regs[0][2], regs[1][2], 0):
                send(rd(rid, 8, key, 0))
        # random ones, every one wrong in some way
        for _ in range(120):
            rid = rng.choice(sorted(regs))
            fl, size, key = regs[rid]
            kind = rng.randrange(4)
            if kind == 0:
                send(rd(rid, rng.randrange(1, 4096), key ^ rng.randrange(1, 1 << 64),
                        rng.randrange(size)))
            elif kind == 1:
                nowhere = rng.randrange(1 << 32)
                send(rd(nowhere if nowhere not in regs else 0xfffffffe, 8, key, 0))
            elif kind == 2:
                ln = rng.randrange(1, 1 << 16)
                send(rd(rid, ln, key, rng.randrange(max(0, size - ln + 1), size + (1 << 20))))
            else:
                ln = rng.randrange(1, 1 << 32)
                send(rd(rid, ln, key, rng.randrange(U64 - ln + 1, U64 + 1)))
        # batches: a good read with a bad one (no data at all), too many,
        # more than a frame can carry back, counts that do not match the body
        k0, k1 = regs[0][2], regs[1][2]
        send(rd(0, 64, k0, 0) + rd(1, 8, k1 ^ 1, 0))
        send(rd(0, 64, k0, 0) * 7 + rd(0, 8, k0, regs[0][1]))
        if regs[1][1] >= 20 << 20:
            send(rd(1, 4 << 20, k1, 0) * 5)            # 20 MiB: more than a reply frame
        send(rd(0, 8, k0, 0), aux=0, st=S_EPROTO)
        send(rd(0, 8, k0, 0), aux=2, st=S_EPROTO)
        send(rd(0, 8, k0, 0) * 2, aux=1, st=S_EPROTO)
        send(rd(0, 8, k0, 0) + b"\0" * 5, aux=1, st=S_EPROTO)
        send(b"", aux=1, st=S_EPROTO)
        send(rd(0, 8, k0, 0), aux=MAX_BATCH + 1, st=S_EPROTO)
        send(rd(0, 8, k0, 0) * (MAX_BATCH + 1), aux=MAX_BATCH + 1, st=S_EPROTO)
        send(rd(0, 8, k0, 0), aux=0xffffffff, st=S_EPROTO)
        for ident, (h, body) in p.replies(want).items():
            self.assertEqual(body, b"", f"data in a refused read {h}")
        self.count("one-sided read", n)
        self.good_read(p)

    def g_writes(self, tr):
        """One-sided WRITE, CAS and FAA into the read-only metadata and data
        regions (with their right keys), and wrong ones into the writable
        scratch region: ARF_EKEY each, and the bytes are unchanged."""
        p = self.peer(tr)
        rng = self.rng
        regs = p.regions
        ro = [r for r, (fl, _, _) in regs.items() if not fl & 1]
        rw = [r for r, (fl, _, _) in regs.items() if fl & 1]
        self.assertIn(0, ro)
        self.assertIn(1, ro)
        want, n = {}, 0

        def send(op, body):
            nonlocal n
            ident = self.next_id()
            want[ident] = {S_EKEY}
            p.send(frame(op, ident, body))
            n += 1
            self.refused += 1

        def peek(rid, off):
            ident = self.next_id()
            p.send(frame(OP_READ, ident, rd(rid, 8, regs[rid][2], off), aux=1))
            return struct.unpack("<Q", p.replies({ident: {S_OK}})[ident][1])[0]

        spots = {(0, 0), (1, 0)}
        for rid in ro:
            size = regs[rid][1]
            spots |= {(rid, 0), (rid, 8), (rid, size - 8),
                      (rid, rng.randrange(size // 8) * 8)}
        before = {s: peek(*s) for s in sorted(spots)}
        for rid, off in sorted(spots):
            key = regs[rid][2]
            v = before[(rid, off)]
            send(OP_WRITE, rmw(rid, 8, key, off) + struct.pack("<Q", v ^ U64))
            send(OP_CAS, rmw(rid, 8, key, off, v, v ^ U64))  # would succeed if allowed
            send(OP_FAA, rmw(rid, 8, key, off, 1))
        for _ in range(60):
            rid = rng.choice(ro)
            size, key = regs[rid][1], regs[rid][2]
            off = rng.randrange(size // 8) * 8
            op = rng.choice((OP_WRITE, OP_CAS, OP_FAA))
            ln = rng.randrange(1, 256) if op == OP_WRITE else 8
            send(op, rmw(rid, ln, key, off, rng.randrange(1 << 64), rng.randrange(1 << 64))
                 + (bytes(ln) if op == OP_WRITE else b""))
        for rid in rw:
            fl, size, key = regs[rid]
            for op in (OP_WRITE, OP_CAS, OP_FAA):
                tail = b"\0" * 8 if op == OP_WRITE else b""
                send(op, rmw(rid, 8, key ^ 1, 0) + tail)           # wrong key
                send(op, rmw(rid, 8, 0, 0) + tail)                 # no key
                send(op, rmw(max(regs) + 1, 8, key, 0) + tail)     # no such region
                send(op, rmw(rid, 8, key, size) + tail)            # past the end
                send(op, rmw(rid, 8, key, size - 4) + tail)        # straddling it
                send(op, rmw(rid, 8, key, U64 - 7) + tail)         # wrapping 2^64
                send(op, rmw(rid, 8, key, 1 << 63) + tail)
                for cut in sorted(rng.sample(range(40), 4)):       # body shorter than rmw
                    send(op, rmw(rid, 8, key, 0)[:cut])
            send(OP_WRITE, rmw(rid, 16, key, 0) + b"\0" * 8)      # fewer bytes than len
            send(OP_WRITE, rmw(rid, 8, key, 0) + b"\0" * 16)      # more bytes than len
            send(OP_WRITE, rmw(rid, 0xffffffff, key, 0) + b"\0" * 8)
            for op in (OP_CAS, OP_FAA):
                send(op, rmw(rid, 8, key, 4))                      # misaligned
                send(op, rmw(rid, 4, key, 0))                      # not 8 bytes
                send(op, rmw(rid, 16, key, 0))
                send(op, rmw(rid, 8, key, 0) + b"\0" * 8)          # trailing bytes
        for ident, (h, body) in p.replies(want).items():
            self.assertEqual(body, b"", f"a refused {h[1]} returned data")
        after = {s: peek(*s) for s in sorted(spots)}
        self.assertEqual(before, after, "a read-only region changed")
        self.count("one-sided write", n)
        self.good_read(p)

    def test_hostile_frames(self):
        arfctl("mkdir", self.arfd.url("/hostile"))
        s0 = self.stats()
        groups = [self.g_cut, self.g_bad_len, self.g_before_hello, self.g_handshake,
                  self.g_net_ops, self.g_request_ops, self.g_bodies, self.g_reads,
                  self.g_writes]
        hows = {}
        for tr in ("tcp", "unix"):
            for g in groups:
                r = g(tr)
                if isinstance(r, dict):
                    for k, v in r.items():
                        hows[k] = hows.get(k, 0) + v
                self.served(f"{g.__name__} over {tr}")
        s1 = self.stats()
        d_bad = s1["bad_frames"] - s0["bad_frames"]
        d_badreq = s1["bad_requests"] - s0["bad_requests"]
        d_refused = s1["one_sided"]["refused"] - s0["one_sided"]["refused"]
        d_conn = s1["connections"]["refused"] - s0["connections"]["refused"]
        self.assertGreaterEqual(d_bad, self.bad_frames, "bad_frames did not count them all")
        self.assertGreaterEqual(d_badreq, self.eproto_replies, "bad_requests too low")
        self.assertGreaterEqual(d_refused, self.refused, "one_sided.refused too low")
        self.assertGreaterEqual(d_conn, self.hello_refused, "connections.refused too low")
        # and it still stops cleanly: no sanitizer report, leaks included
        rc = self.arfd.stop()
        with open(self.arfd.log_path, "rb") as f:
            log = f.read().decode(errors="replace")
        for bad in ("runtime error:", "AddressSanitizer", "LeakSanitizer"):
            self.assertNotIn(bad, log, "a sanitizer spoke in arfd's log")
        self.assertEqual(rc, 0, "arfd did not exit cleanly on SIGTERM:\n" + log[-3000:])
        total = sum(self.tried.values())
        print("hostile frames: %d tried (%s; bodies %s) over tcp and the UNIX socket, "
              "arfd up, other clients served, clean exit; counters grew: bad_frames +%d "
              "(>= %d), bad_requests +%d (>= %d), one_sided.refused +%d (>= %d), "
              "connections.refused +%d (>= %d)" % (
                  total, ", ".join(f"{k} {v}" for k, v in self.tried.items()),
                  "/".join(f"{k} {v}" for k, v in sorted(hows.items())),
                  d_bad, self.bad_frames, d_badreq, self.eproto_replies, d_refused,
                  self.refused, d_conn, self.hello_refused))


if __name__ == "__main__":
    harness.main()
