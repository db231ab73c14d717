# SPDX-License-Identifier: MIT
"""The etcd client and the cell's records (tests/cell/test_etcd.c, cmocka)
against a real etcd on loopback ports of its own (tests/lib/arfproc.py's
Etcd, stopped by pid even when the test fails), and against a small HTTP
server (cellcase.py) that answers junk: each request gets the next reply of JUNK,
in the order test_etcd.c's test_junk makes its calls; and against an etcd
with authentication on (tokens of 1 s)."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arfproc  # noqa: E402
import testmain  # noqa: E402
from cellcase import EtcdCase, JunkHttp, etcd_auth  # noqa: E402

TEST_ETCD = os.path.join(arfproc.BUILD, "tests", "cell", "test-cell-etcd")

# (HTTP status, body): what the junk peer answers, request by request
JUNK = [
    (200, b"hello, I am not etcd"),
    (200, b"[1, 2, 3]"),
    (200, b"{}{}"),
    (200, b'{"kvs": [{"key": "aw=="'),
    (200, b'{"kvs": "nope"}'),
    (200, b'{"kvs": [{"key": "!!not base64!!", "value": "eA=="}]}'),
    (200, b'{"header": {"revision": "abc"}}'),
    (200, b'{"kvs": [{"key": "aw==", "mod_revision": {"x": 1}}]}'),
    (500, b"<html>oops</html>"),
    (404, b"Not Found"),
    (503, b'{"foo": 1}'),
    (403, b'{"error": "no", "message": "no", "code": 7}'),
    (200, b'{"kvs": [{"key": "aw=="}, {"key": "aw=="}]}'),
    # lease grant, keepalive, txn
    (200, b'{"ID": "zz", "TTL": "5"}'),
    (200, b'{"result": 5}'),
    (200, b'{"succeeded": true, "header": {"revision": [1]}}'),
    # watch: a stream whose first line is junk
    (200, b"garbage\n"),
    # over the client's limit of 64 MiB
    (200, b'{"kvs": "' + b"x" * (65 << 20) + b'"}'),
]


class CellClient(EtcdCase):
    def setUp(self):
        super().setUp()
        self.etcd.start()
        self.junk = JunkHttp(JUNK)
        self.addCleanup(self.junk.stop)
        self.auth = None
        if shutil.which("etcdctl"):  # else test_etcd.c skips its test_auth
            # tokens of 1 s, to expire between the test's calls
            self.auth = arfproc.Etcd(self.tmp, name="etcd-auth",
                                     args=["--auth-token", "simple", "--auth-token-ttl", "1"])
            self.addCleanup(self.auth.stop)
            self.auth.start()
            self.passwords = etcd_auth(self.auth, self.tmp, "t-auth")

    def test_client(self):
        env = dict(os.environ, ARF_TEST_ETCD_URL=self.etcd.url,
                   ARF_TEST_JUNK_URL=self.junk.url)
        if self.auth:
            env.update(ARF_TEST_AUTH_ETCD_URL=self.auth.url,
                       ARF_TEST_AUTH_PASSWORD_FILE=self.passwords["arfd"])
        p = arfproc.run([TEST_ETCD], check=False, timeout=120, env=env)
        out = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
        print(out)
        self.assertEqual(p.returncode, 0, "test-cell-etcd failed:\n" + out[-4000:])
        self.assertIn("[  PASSED  ] %d test(s)." % (10 if self.auth else 9), out)
        self.assertEqual(self.junk.count, len(JUNK), "every junk reply was asked for")


if __name__ == "__main__":
    testmain.main()
