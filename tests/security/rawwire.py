#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A client of ARF's wire protocol written from net/arf_net.h and
net/arf_proto.h alone, for tests that act as an attacker: it sends what
libarf never would (claimed credentials from an ordinary port, forged
handles, malformed bodies).  Run as a script (so that a test can run it as
another user):

    rawwire.py tcp PORT|shm SOCKET  REQUESTS.json  [TOKEN_HEX]

REQUESTS.json is a list of [op, body_hex]; it prints a JSON object
{"hello": status, "hello_msg": text, "replies": [[status, body_hex], ...]}.
"""
import json
import socket
import struct
import sys

HDR = struct.Struct("<IHHQiI")  # len, op, flags, id, status, aux
OP_HELLO = 1
OP_GETATTR, OP_LOOKUP, OP_READ = 0x100, 0x101, 0x103
OP_LINK = 0x116
NET_VERSION = 1
INFO_VERSION = 1
HELLO_TOKEN = 1
S_STALE = 17


def cred(uid=0, gid=0, groups=()):
    return struct.pack("<III", uid, gid, len(groups)) + b"".join(struct.pack("<I", g)
                                                                for g in groups)


def fh(ino, gen):
    return struct.pack("<QI", ino, gen)


def name(n):
    n = n.encode()
    return struct.pack("<I", len(n)) + n


class Wire:
    def __init__(self, kind, where):
        if kind == "tcp":
            self.s = socket.create_connection(("127.0.0.1", int(where)))
        else:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.connect(where)
        self.next_id = 1

    def send(self, op, body, aux=0, flags=0):
        fid = self.next_id
        self.next_id += 1
        self.s.sendall(HDR.pack(HDR.size + len(body), op, flags, fid, 0, aux) + body)
        return fid

    def recv(self):
        h = self._exact(HDR.size)
        if h is None:
            return None, b""
        n, op, fl, fid, st, aux = HDR.unpack(h)
        return st, self._exact(n - HDR.size) or b""

    def _exact(self, n):
        b = b""
        while len(b) < n:
            try:
                c = self.s.recv(n - len(b))
            except (ConnectionResetError, OSError):
                return None
            if not c:
                return None
            b += c
        return b

    def hello(self, token=b"", path="/"):
        body = struct.pack("<II", INFO_VERSION, HELLO_TOKEN if token else 0)
        body += path.encode().ljust(256, b"\0") + token
        self.send(OP_HELLO, body, aux=NET_VERSION)
        return self.recv()


def main():
    kind, where, reqfile = sys.argv[1], sys.argv[2], sys.argv[3]
    token = bytes.fromhex(sys.argv[4]) if len(sys.argv) > 4 else b""
    with open(reqfile) as f:
        reqs = json.load(f)
    w = Wire(kind, where)
    st, body = w.hello(token)
    out = {"hello": st, "hello_msg": body.decode(errors="replace") if st else "", "replies": []}
    if st == 0:
        for op, hexbody in reqs:
            w.send(op, bytes.fromhex(hexbody))
            rst, rbody = w.recv()
            if rst is None:
                out["closed"] = True
                break
            out["replies"].append([rst, rbody.hex()])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
