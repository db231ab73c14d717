# SPDX-License-Identifier: MIT
"""A TCP proxy for tests: clients dial its port on 127.0.0.1, and each
connection is relayed to arfd's tcp port from a reserved source port (as
libarf dials as root, so arfd takes the peer as root-proven:
arfd/identity.c).  `silence()` makes the connections open so far drop
everything both ways while staying open -- a server that went silent
without a broken connection, as a dead path or a hung host leaves it --
and connections made after are relayed as before."""
import select
import socket
import threading


class Proxy:
    def __init__(self, port, host="127.0.0.1"):
        self.target = (host, port)
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.pairs = []  # [client socket, server socket, silent]
        self.dropped = 0  # bytes dropped on silent connections
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def url(self, path="/"):
        return "arf://127.0.0.1:%d%s" % (self.port, path)

    def _dial(self):
        s = socket.socket()
        for p in range(1023, 599, -1):
            try:
                s.bind(("127.0.0.1", p))
                break
            except OSError:
                continue
        s.connect(self.target)
        return s

    def silence(self):
        """Every connection open now drops what either side sends; returns
        how many there were."""
        with self.lock:
            for pair in self.pairs:
                pair[2] = True
            return len(self.pairs)

    def _run(self):
        while True:
            with self.lock:
                if self.stopping:
                    return
                socks = [self.lsock] + [s for pair in self.pairs for s in pair[:2]]
            r, _, _ = select.select(socks, [], [], 0.05)
            for s in r:
                if s is self.lsock:
                    c, _ = s.accept()
                    try:
                        srv = self._dial()
                    except OSError:
                        c.close()
                        continue
                    with self.lock:
                        self.pairs.append([c, srv, False])
                    continue
                with self.lock:
                    pair = next((p for p in self.pairs if s in p[:2]), None)
                if pair is None:
                    continue
                try:
                    data = s.recv(1 << 16)
                except OSError:
                    data = b""
                if not data:
                    self._drop(pair)
                    continue
                if pair[2]:
                    self.dropped += len(data)
                    continue
                other = pair[1] if s is pair[0] else pair[0]
                try:
                    other.sendall(data)
                except OSError:
                    self._drop(pair)

    def _drop(self, pair):
        with self.lock:
            if pair in self.pairs:
                self.pairs.remove(pair)
        self._close(pair)

    @staticmethod
    def _close(pair):
        # shutdown first: it sends the FIN even while another thread is in
        # a call on the socket, which close alone would wait out
        for s in pair[:2]:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def stop(self):
        with self.lock:
            self.stopping = True
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            self._close(pair)
        self.thread.join(timeout=10)
        self.lsock.close()
