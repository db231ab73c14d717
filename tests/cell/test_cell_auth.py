# SPDX-License-Identifier: MIT
"""The cell's security against a real etcd (tests/lib/arfproc.py's Etcd
and Arfd on free loopback ports, stopped by pid even when a test fails):

* authentication (--auth-token simple and jwt, tokens of 1 s): arfd's user holds a
  role with readwrite on /arf/t2/, arfctl's a read-only one.  arfd
  registers, and registers again after its lease is revoked behind its back
  once its token has long expired (the client authenticates again, nothing
  is logged as failing); arfctl cell status as the reader lists it; an
  arfd running as the reader cannot register and says etcd denied the
  permission, one with a wrong password says the authentication failed,
  and both serve their files all along; a password file of mode 0644 is
  refused by arfd and arfctl alike; a password over http:// to a host
  that is not loopback is refused at start.
* TLS (certificates made with openssl in the test's directory, etcd with
  --client-cert-auth): arfd with the CA, a client certificate and its key
  registers; arfctl with them lists it; with another CA arfctl says the
  certificate was not verified."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Arfd, arfctl  # noqa: E402
import arfproc  # noqa: E402
from cellcase import EtcdCase, etcd_auth, wait_until  # noqa: E402

CELL = "t2"
TTL = 3  # arfd renews every second; its token (1 s) has expired by the next write


class Secure(EtcdCase):
    def setUp(self):
        super().setUp()
        self.etcd.stop()  # not started yet: each test starts its own kind
        if not shutil.which("etcdctl") or not shutil.which("openssl"):
            self.skipTest("etcdctl or openssl is missing (Debian: etcd-client, openssl)")

    def secret(self, name, text, mode=0o600):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, mode)
        return path

    def etcdctl(self, *args):
        return arfproc.run(["etcdctl", "--endpoints", self.etcd.url] + list(args),
                           env=dict(os.environ, ETCDCTL_API="3"))

    def arfd(self, sid, extra):
        conf = {"cell.etcd": self.etcd.url, "cell.name": CELL, "cell.server_id": sid,
                "cell.lease_ttl_s": str(TTL)}
        conf.update(extra)
        d = Arfd(workdir=os.path.join(self.tmp, sid), extra=conf, name="arfd-" + sid)
        self.addCleanup(self.stopped_clean, d)
        return d

    def stopped_clean(self, d):
        rc = d.stop()
        log = d.log()
        d.cleanup()
        self.assertIn(rc, (0, None), log)
        self.assertNotIn("Sanitizer", log)
        self.assertNotIn("runtime error", log)

    def status(self, *opts, check=True):
        p = arfctl("--json", "cell", "status", "--etcd", self.etcd.url, "--cell", CELL, *opts,
                   check=check)
        return json.loads(p.stdout) if p.returncode == 0 else p

    def across_expiry(self, *args):
        """etcd with args (its --auth-token, tokens of 1 s) and users; arfd
        registers as "arfd", and again once its lease is revoked behind its
        back after its token expired (a write: it authenticates again on
        its own).  Returns the password files and arfctl's reader options."""
        self.etcd = arfproc.Etcd(self.tmp, name="etcd-auth", args=args)
        self.addCleanup(self.etcd.stop)
        self.etcd.start()
        pw = etcd_auth(self.etcd, self.tmp, CELL)
        reader = ["--user", "reader", "--password-file", pw["reader"]]
        a = self.arfd("a", {"cell.user": "arfd", "cell.password_file": pw["arfd"]}).start()
        wait_until(lambda: "a" in {s["id"] for s in self.status(*reader)["servers"]}, 10,
                   "a registered")
        lease = self.status(*reader)["servers"][0]["lease"]
        time.sleep(2.5)
        self.etcdctl("--user", "root:rootpw", "lease", "revoke", lease)
        wait_until(lambda: [s["lease"] for s in self.status(*reader)["servers"]]
                   not in ([], [lease]), 10, "a registered again under a new lease")
        self.assertIn("registering again", a.log())
        self.assertNotIn("cannot register", a.log())
        self.assertIn("as etcd user arfd", a.log())
        return pw, reader

    def test_jwt(self):
        key, pub = os.path.join(self.tmp, "jwt.key"), os.path.join(self.tmp, "jwt.pub")
        arfproc.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout",
                     "-out", key])
        arfproc.run(["openssl", "ec", "-in", key, "-pubout", "-out", pub])
        self.across_expiry("--auth-token",
                           "jwt,pub-key=%s,priv-key=%s,sign-method=ES256,ttl=1s" % (pub, key))

    def test_auth(self):
        # simple tokens of 1 s (etcd's default is 300 s after the last use)
        pw, reader = self.across_expiry("--auth-token", "simple", "--auth-token-ttl", "1")
        arfd_pw = pw["arfd"]

        # without a user, or with a wrong password: etcd's refusal, clearly
        p = self.status(check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"user name is empty", p.stderr)
        bad = self.secret("bad.pw", "nope")
        p = self.status("--user", "reader", "--password-file", bad, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"etcd user 'reader' could not authenticate: ", p.stderr)
        self.assertIn(b"authentication failed, invalid user ID or password", p.stderr)

        # the reader cannot write: an arfd running as it is denied, and serves
        r = self.arfd("r", {"cell.user": "reader",
                            "cell.password_file": reader[3]}).start()
        w = self.arfd("w", {"cell.user": "arfd", "cell.password_file": bad}).start()
        wait_until(lambda: "cannot register 'r'" in r.log(), 10, "r's refusal logged")
        wait_until(lambda: "cannot register 'w'" in w.log(), 10, "w's refusal logged")
        self.assertIn("etcdserver: permission denied (gRPC code 7)", r.log())
        self.assertIn("etcd user 'arfd' could not authenticate", w.log())
        self.assertIn("serving continues", w.log())
        for d in (r, w):
            arfctl("ls", d.url("/"))
        self.assertEqual([s["id"] for s in self.status(*reader)["servers"]], ["a"])

        # a password file others may read is refused, by arfd and arfctl
        open_pw = self.secret("open.pw", "arfdpw", mode=0o644)
        why = b"etcd password file %s: group or others may read or write it (mode 0644)" % \
            open_pw.encode()
        p = self.status("--user", "reader", "--password-file", open_pw, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(why, p.stderr)
        o = self.arfd("o", {"cell.user": "arfd", "cell.password_file": open_pw})
        p = arfproc.run(o.args(), check=False, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn(why, p.stderr)
        # and a password over http:// to another host, at start
        o = self.arfd("o2", {"cell.etcd": "http://192.0.2.1:2379", "cell.user": "arfd",
                             "cell.password_file": arfd_pw})
        p = arfproc.run(o.args() + ["--check-config"], check=False, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"the password of user 'arfd' would cross the network in clear; "
                      b"use https://", p.stderr)

    def certs(self):
        """ca.crt signed server.crt (for 127.0.0.1) and client.crt; other.crt
        is a CA that signed nothing here."""
        d = os.path.join(self.tmp, "pki")
        os.mkdir(d)

        def openssl(*args):
            arfproc.run(["openssl"] + list(args))
        key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for ca in ("ca", "other"):
            openssl("req", "-x509", *key, "-subj", "/CN=arf test %s" % ca, "-days", "1",
                    "-keyout", os.path.join(d, ca + ".key"), "-out", os.path.join(d, ca + ".crt"))
        ext = os.path.join(d, "ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
        for name in ("server", "client"):
            openssl("req", *key, "-subj", "/CN=%s" % name, "-keyout",
                    os.path.join(d, name + ".key"), "-out", os.path.join(d, name + ".csr"))
            openssl("x509", "-req", "-in", os.path.join(d, name + ".csr"), "-CA",
                    os.path.join(d, "ca.crt"), "-CAkey", os.path.join(d, "ca.key"),
                    "-CAcreateserial", "-days", "1", "-extfile", ext, "-out",
                    os.path.join(d, name + ".crt"))
        return {n: os.path.join(d, n) for n in ("ca.crt", "other.crt", "server.crt", "server.key",
                                                "client.crt", "client.key")}

    def test_tls(self):
        f = self.certs()
        self.etcd = arfproc.Etcd(self.tmp, name="etcd-tls", tls={
            "cert": f["server.crt"], "key": f["server.key"], "ca": f["ca.crt"],
            "client_ca": f["ca.crt"], "client_cert": f["client.crt"],
            "client_key": f["client.key"]})
        self.addCleanup(self.etcd.stop)
        self.etcd.start()
        self.assertTrue(self.etcd.url.startswith("https://"))
        a = self.arfd("a", {"cell.ca_file": f["ca.crt"], "cell.cert_file": f["client.crt"],
                            "cell.key_file": f["client.key"]}).start()
        mine = ["--cert", f["client.crt"], "--key", f["client.key"]]
        wait_until(lambda: [s["id"] for s in self.status("--cacert", f["ca.crt"], *mine)
                            ["servers"]] == ["a"], 10, "a registered over TLS")
        arfctl("ls", a.url("/"))
        # another CA: etcd's certificate is not verified, and arfctl says so
        p = self.status("--cacert", f["other.crt"], *mine, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"etcd's certificate is not one the CA file vouches for", p.stderr)
        self.assertIn(b"SSL certificate problem", p.stderr)
        # no client certificate: etcd ends the handshake, an error, not a crash
        p = self.status("--cacert", f["ca.crt"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(p.stderr.startswith(b"arfctl: cell status: etcd https://"), p.stderr)
        # a CA file with an http:// endpoint is a mistake, said at once
        p = subprocess.run([harness.ARFCTL, "cell", "status", "--etcd", "http://127.0.0.1:1",
                            "--cell", CELL, "--cacert", f["ca.crt"]], capture_output=True,
                           timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"a CA or certificate file needs https://", p.stderr)


if __name__ == "__main__":
    harness.main()
