# SPDX-License-Identifier: MIT
"""A peer that is not etcd, for the cell's hostile-input tests: an HTTP
server on a free loopback port, in a thread of the test's own, that answers
the Nth POST with the Nth of its replies (the last one again once they run
out)."""
import http.server
import threading


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
