# SPDX-License-Identifier: MIT
"""What the cell's tests share: EtcdCase, a test case with an etcd of its
own (tests/lib/arfproc.py's Etcd on free loopback ports, in a temporary
directory, stopped by pid even when the test fails; started by the test),
skipped with the reason where etcd is not installed; and JunkHttp, a peer
that is not etcd for the hostile-input tests: an HTTP server on a free
loopback port, in a thread of the test's own, that answers the Nth POST
with the Nth of its replies (the last one again once they run out)."""
import http.server
import os
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import arfproc  # noqa: E402


class EtcdCase(unittest.TestCase):
    def setUp(self):
        why = arfproc.etcd_skip_reason()
        if why:
            self.skipTest(why)
        tmp = tempfile.TemporaryDirectory(prefix="arf-cell-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.etcd = arfproc.Etcd(self.tmp)
        self.addCleanup(self.etcd.stop)


class JunkHttp:
    def __init__(self, replies):
        self.replies = replies  # [(HTTP status, body bytes)]
        self.count = 0
        self.lock = threading.Lock()
        junk = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with junk.lock:
                    i = min(junk.count, len(junk.replies) - 1)
                    junk.count += 1
                status, body = junk.replies[i]
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up on an oversized reply, as it should

            def log_message(self, *args):
                pass
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
