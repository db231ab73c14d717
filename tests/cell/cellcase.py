# SPDX-License-Identifier: MIT
"""What the cell's tests share: EtcdCase, a test case with an etcd of its
own (tests/lib/arfproc.py's Etcd on free loopback ports, in a temporary
directory, stopped by pid even when the test fails; started by the test),
skipped with the reason where etcd is not installed; wait_until, which
polls a condition; etcd_auth, which sets up users and roles; and JunkHttp, a peer
that is not etcd for the hostile-input tests: an HTTP server on a free
loopback port, in a thread of the test's own, that answers the Nth POST
with the Nth of its replies (the last one again once they run out);
CellCase, an EtcdCase that starts arfd members of cell CELL (each in a
network namespace of its own where the machine allows)."""
import http.server
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import arfproc  # noqa: E402
from harness import Arfd  # noqa: E402

CELL = "t1"
TTL = 2


def wait_until(cond, timeout, what):
    """Polls cond every 0.1 s: the seconds it took, or AssertionError."""
    start = time.time()
    while time.time() - start < timeout:
        if cond():
            return time.time() - start
        time.sleep(0.1)
    raise AssertionError("%s: not within %.0f s" % (what, timeout))


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


class CellCase(EtcdCase):
    def spaces(self, n):
        """n network namespaces, one per server, each with an address of its
        own; or n Nones where the machine has none (loopback ports then).
        Made before etcd starts, which then serves on their host sides too."""
        why = arfproc.netns_skip_reason()
        if why:
            print("servers on loopback ports: " + why)
            return [None] * n
        out = []
        for k in range(n):
            ns = arfproc.Netns(k)
            self.addCleanup(ns.remove)  # after the servers in it stop
            try:
                out.append(ns.create())
            except AssertionError as e:  # a namespace, but no veth pair here (run())
                for x in out + [ns]:
                    x.remove()
                print("servers on loopback ports: a veth pair could not be made: %s" % e)
                return [None] * n
        self.etcd.also_listen += [x.host_addr for x in out]
        print("servers in network namespaces at " + ", ".join(x.addr for x in out))
        return out

    def arfd(self, sid, work=None, extra=None, config=None, space=None):
        """A member of the cell; space: the Netns to run it in."""
        etcd = self.etcd.url_at(space.host_addr) if space else self.etcd.url
        conf = {"cell.etcd": etcd, "cell.name": CELL, "cell.server_id": sid,
                "cell.lease_ttl_s": str(TTL)}
        if space:  # clients come from the host side of its veth pair
            conf["export.clients"] = "127.0.0.0/8 ::1 unix %s/32" % space.host_addr
        conf.update(extra or {})
        work = work or sid
        if config:  # a configuration file of the test's own (its [volume] sections)
            os.makedirs(os.path.join(self.tmp, work), exist_ok=True)
            path = os.path.join(self.tmp, work + ".conf")
            with open(path, "w") as f:
                f.write(Arfd.CONFIG + config)
            config = path
        d = Arfd(workdir=os.path.join(self.tmp, work), extra=conf, name="arfd-" + work,
                 config=config, netns=space)
        self.addCleanup(self.stopped_clean, d)
        return d.start()

    def stopped_clean(self, d):
        """Stop d (by pid) and check that it exited cleanly, unless the test
        killed it: status 0, no sanitizer report, its lease revoked."""
        rc = d.stop()
        log = d.log()
        d.cleanup()
        self.assertIn(rc, (0, -9, None), log)
        self.assertNotIn("Sanitizer", log)
        self.assertNotIn("runtime error", log)
        if rc == 0:
            self.assertRegex(log, r"left the cell \(lease revoked\)|could not revoke|"
                                  r"cannot register")


def etcd_auth(etcd, workdir, cell):
    """Users on etcd, then its authentication on: root, "arfd" with a role
    of readwrite on /arf/CELL/, "reader" with one of read on it.  Returns
    {user: its password file (mode 0600, in workdir)}."""
    prefix = "/arf/%s/" % cell
    env = dict(os.environ, ETCDCTL_API="3")
    for cmd in (["user", "add", "root:rootpw"], ["role", "add", "arf-rw"],
                ["role", "grant-permission", "arf-rw", "--prefix=true", "readwrite", prefix],
                ["role", "add", "arf-ro"],
                ["role", "grant-permission", "arf-ro", "--prefix=true", "read", prefix],
                ["user", "add", "arfd:arfdpw"], ["user", "grant-role", "arfd", "arf-rw"],
                ["user", "add", "reader:readerpw"], ["user", "grant-role", "reader", "arf-ro"],
                ["auth", "enable"]):
        arfproc.run(["etcdctl", "--endpoints", etcd.url] + cmd, env=env)
    files = {}
    for user in ("arfd", "reader"):
        files[user] = os.path.join(workdir, user + ".pw")
        with open(files[user], "w") as f:
            f.write(user + "pw\n")
        os.chmod(files[user], 0o600)
    return files


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
