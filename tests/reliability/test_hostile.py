#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Broken and hostile peers at the socket level, against a real arfd: a
client that stops reading its replies, a flood of connections past the
server's limit, connections that never finish their handshake.  Each gets
a closed connection (or waits alone); arfd stays up and other clients are
served meanwhile.  (Malformed frames, wrong keys, out-of-range one-sided
operations and unknown operations are in tests/net/test_net.c.)"""
import os
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


if __name__ == "__main__":
    harness.main()
