#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""arfd's rdma_listen, end to end with the real daemon and arfctl.

Without an RDMA device (or without rdma-core): arfd asked to serve rdma
beside tcp warns, naming the reason, and serves tcp; arfctl over
arf+rdma:// fails at once saying rdma is not available; arfd asked to
serve rdma alone refuses to start with the reason.  With a device and
$ARF_TEST_RDMA_ADDR (an address on the RDMA interface): arfd serves tcp
and rdma at once and arfctl lists the export over both.  With a device and
no address: SKIP (77), saying so.

Usage: test_arfd_rdma.py ARFD ARFCTL
"""
import os
import re
import subprocess
import sys
import tempfile
import time

ARFD, ARFCTL = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)


def start(tmp, *extra):
    """arfd in the foreground on a free tcp port; returns (proc, log path)."""
    log = os.path.join(tmp, "arfd.log")
    port_file = os.path.join(tmp, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    args = [ARFD, "-f", "--data-dir", os.path.join(tmp, "data"), "--socket", "",
            "--set", "server.control=", "--set", "server.port_file=" + port_file,
            "--set", "regions.data_blocks=1024", "--set", "regions.inodes=1024",
            "--set", "regions.dir_buckets=1024", "--set", "regions.dir_entries=1024",
            "--set", "regions.pages=256", "--set", "export.clients=*"] + list(extra)
    f = open(log, "w")
    p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT)
    f.close()
    for _ in range(600):
        if os.path.exists(port_file) or p.poll() is not None:
            break
        time.sleep(0.05)
    return p, log


def stop(p):
    if p.poll() is None:
        p.terminate()
        p.wait(timeout=30)


def ctl(url):
    return subprocess.run([ARFCTL, "ls", url], capture_output=True, text=True, timeout=60)


def main():
    with tempfile.TemporaryDirectory(prefix="arf-rdma-") as tmp:
        p, log = start(tmp, "--listen", "127.0.0.1:0", "--rdma-listen", "127.0.0.1:0")
        text = open(log).read()
        served = p.poll() is None
        m = re.search(r"not serving rdma: (.*); serving tcp only", text)
        if m:
            why = m.group(1)
            print("arfd without rdma: " + m.group(0))
            check("no RDMA device" in why or "built without rdma-core" in why,
                  "the warning names the reason: " + why)
            check(served, "arfd serves tcp although rdma is unavailable:\n" + text)
            if served:
                port = open(os.path.join(tmp, "port")).read().strip()
                r = ctl("arf://127.0.0.1:%s/" % port)
                check(r.returncode == 0, "arfctl ls over tcp: " + r.stderr)
                check(re.search(r"on tcp 127\.0\.0\.1:\d+, incarnation", text) is not None,
                      "the startup line names tcp alone:\n" + text)
            r = ctl("arf+rdma://127.0.0.1/")
            print("arfctl over arf+rdma: " + r.stderr.strip())
            check(r.returncode != 0 and "the rdma transport is not available" in r.stderr
                  and why in r.stderr, "arfctl over arf+rdma:// says why not: " + r.stderr)
            stop(p)
            # rdma alone: nothing would be served, so arfd refuses to start
            p, log = start(tmp, "--listen", "", "--rdma-listen", ":0")
            p.wait(timeout=60)
            text = open(log).read()
            print("arfd with rdma alone: " + text.strip().splitlines()[-1])
            check(p.returncode == 1, "arfd with rdma alone exits 1, not %s" % p.returncode)
            check("nothing to serve on" in text and why in text,
                  "arfd with rdma alone says why:\n" + text)
        else:
            stop(p)
            addr = os.environ.get("ARF_TEST_RDMA_ADDR", "")
            if not addr:
                print("verbs skipped: an RDMA device exists; set ARF_TEST_RDMA_ADDR to an "
                      "address on its interface to run arfd over rdma")
                return 77
            p, log = start(tmp, "--listen", "127.0.0.1:0", "--rdma-listen", addr + ":0")
            text = open(log).read()
            m = re.search(r"rdma \[?([^\s\]]+)\]?:(\d+), incarnation", text)
            check(p.poll() is None and m is not None, "arfd serves rdma:\n" + text)
            if m:
                host = "[%s]" % addr if ":" in addr else addr
                r = ctl("arf+rdma://%s:%s/" % (host, m.group(2)))
                check(r.returncode == 0, "arfctl ls over rdma: " + r.stderr)
            stop(p)
    print("%s: %d failure(s)" % ("FAIL" if failures else "ok", failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
