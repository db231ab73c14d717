# SPDX-License-Identifier: MIT
"""The processes ARF's tests and benchmarks start, in one place: arfd on a
free port with a private socket, data directory and configuration file;
arf-fuse mounts; NFS-Ganesha (with rpcbind) for the benchmarks; etcd for
the cell's tests, and network namespaces (veth pairs) that give a cell's
servers an address each.

Every process is started here as a child, so its pid is known, and is
stopped by that pid -- SIGTERM, then SIGKILL -- never by name; every mount
is unmounted (lazily) and its daemon reaped, also when a test or benchmark
fails.  Starting arfd never reads the host's /etc/arf/arfd.conf: arfd gets
`-c` with a file of the harness's own (see Arfd.CONFIG), so a test runs the
same on a machine where ARF is installed and configured.

Used by tests/integration/harness.py (which adds the unittest side),
tests/fuse/fusetest.py, the reliability and security tests, and bench/.
The built programs come from $ARF_BUILD (default: build/ beside tests/),
or from the build directory given to each class."""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("ARF_BUILD", os.path.join(ROOT, "build")))


def arfd_bin(build=None):
    return os.path.join(build or BUILD, "arfd", "arfd")


def arf_fuse_bin(build=None):
    return os.path.join(build or BUILD, "fuse", "arf-fuse")


class ProcError(RuntimeError):
    """A process did not come up, or exited early; the message ends with
    the tail of its log."""


# ---------------------------------------------------------------- the machine

def rdma_devices():
    """The RDMA devices the kernel offers (what ibv_get_device_list reads),
    and why there are none."""
    d = "/sys/class/infiniband"
    try:
        devs = sorted(os.listdir(d))
    except OSError as e:
        return [], f"{d}: {e.strerror} (this kernel has no RDMA)"
    return devs, "" if devs else f"{d} is empty (no RDMA device)"


RDMA_DEVICES, RDMA_WHY = rdma_devices()
# The transports every data-path test runs over: verbs too where the
# machine has an RDMA device (real or soft-RoCE).
TRANSPORTS = ("tcp", "shm") + (("rdma",) if RDMA_DEVICES else ())
# rdma needs an address on an RDMA-capable interface (soft-RoCE binds to a
# netdev): $ARF_TEST_RDMA_ADDR names it
RDMA_ADDR = os.environ.get("ARF_TEST_RDMA_ADDR", "127.0.0.1")


def free_port():
    """A tcp port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, host="127.0.0.1"):
    with socket.socket() as s:
        s.settimeout(0.5)
        try:
            s.connect((host, port))
            return True
        except OSError:
            return False


def tail(path, n=4000):
    """The last n characters of a log file ("" if it cannot be read)."""
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")[-n:]
    except OSError:
        return ""


def wait_for(cond, timeout, what, proc=None, log_path=None):
    """Polls cond() until it is true; ProcError if proc exits first or the
    time runs out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ProcError("%s exited with %d:\n%s" % (what, proc.returncode, tail(log_path)))
        if cond():
            return
        time.sleep(0.02)
    raise ProcError("%s did not come up in %ds:\n%s" % (what, timeout, tail(log_path)))


def stop_proc(proc, sig=signal.SIGTERM, timeout=30):
    """Stops a child by its pid: sig, then SIGKILL after timeout seconds.
    Returns its exit status (None if there was none)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    return proc.returncode


def alive(pid):
    """True while pid runs (a zombie nobody has reaped yet has finished)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid, timeout=10):
    deadline = time.time() + timeout
    while alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def kill_pid(pid):
    """SIGTERM, then SIGKILL, to a process that is not our child (a mount's
    daemon after it forked)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if wait_gone(pid):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def cpu_seconds(pid):
    """utime + stime of pid so far, or NaN."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def run(args, check=True, timeout=600, input=None, env=None):
    """Runs a command to completion; with check, AssertionError (with both
    outputs' tails) unless it exits 0."""
    p = subprocess.run(args, capture_output=True, timeout=timeout, input=input, env=env)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\nstdout: %s\nstderr: %s" % (
            " ".join(args), p.returncode, p.stdout.decode(errors="replace")[-3000:],
            p.stderr.decode(errors="replace")[-3000:]))
    return p


# ---------------------------------------------------------------- arfd

# small regions keep each test's arfd light; sizes are still ample for the tests
SMALL = {
    "regions.inodes": "65536",
    "regions.dir_buckets": "32768",
    "regions.dir_entries": "65536",
    "regions.pages": "4096",
    "regions.data_blocks": "131072",
}


class Arfd:
    """One arfd process with its own data directory, port, socket, control
    socket and configuration file.

    extra: {"section.key": value} given as --set (after everything else, so
    it wins); regions: the region sizes (SMALL unless given); rdma: also
    listen on rdma (None: where the machine has a device); sync: export.sync
    (default false, arfd's default: unstable writes until a COMMIT; None: as
    the configuration says); build: where arfd was built (default
    $ARF_BUILD), or bin: the arfd to run; config: a configuration file of
    the test's own to read instead of CONFIG (written to workdir/arfd.conf
    at each start); env: arfd's environment."""

    # The configuration file every harness arfd reads instead of
    # /etc/arf/arfd.conf.  A file's defaults are arfd.conf(5)'s, which
    # differ from the embedded single-host ones in root_squash; the tests
    # are written for a root client that is root (the embedded default),
    # and those that test squashing set it.
    CONFIG = ("# written by tests/lib/arfproc.py: this arfd reads this file and no other\n"
              "[export]\n"
              "root_squash = false\n")

    def __init__(self, workdir=None, sync=False, extra=None, spin_us=0, build=None,
                 regions=None, rdma=None, name="arfd", config=None, bin=None, env=None,
                 netns=None):
        self._tmp = None
        # netns: a Netns to run in, listening on its address (else loopback)
        self.netns = netns
        self.addr = netns.addr if netns else "127.0.0.1"
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="arf-it-")
            workdir = self._tmp.name
        os.makedirs(workdir, exist_ok=True)
        self.name = name
        self.bin = bin or arfd_bin(build)
        self.env = env
        self.workdir = workdir
        self.data_dir = os.path.join(workdir, "data")
        self.socket = os.path.join(workdir, "arfd.sock")
        self.control = os.path.join(workdir, "arfd.ctl")
        self.port_file = os.path.join(workdir, "port")
        self.log_path = os.path.join(workdir, "arfd.log")
        self.own_config = config is None
        self.config = config or os.path.join(workdir, "arfd.conf")
        self.sync = sync
        self.extra = dict(SMALL if regions is None else regions)
        self.extra.update(extra or {})
        self.spin_us = spin_us
        self.proc = None
        self.port = None
        self.keep_port = False
        self._log = None
        if rdma is None:
            rdma = bool(RDMA_DEVICES) and not netns  # RDMA_ADDR is this namespace's
        self.rdma_port = free_port() if rdma else None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def args(self):
        """arfd's command line (the harness's configuration file written first)."""
        if self.own_config:
            with open(self.config, "w") as f:
                f.write(self.CONFIG)
        listen = "%s:%d" % (self.addr, self.port if self.keep_port else 0)
        args = [self.bin, "--foreground", "-c", self.config, "--listen", listen,
                "--socket", self.socket, "--data-dir", self.data_dir,
                "--spin-us", str(self.spin_us),
                "--set", "server.port_file=" + self.port_file,
                "--set", "server.control=" + self.control]
        if self.sync is not None:
            args += ["--set", "export.sync=" + ("true" if self.sync else "false")]
        if self.rdma_port:
            args += ["--rdma-listen", "%s:%d" % (RDMA_ADDR, self.rdma_port)]
        for k, v in self.extra.items():
            args += ["--set", f"{k}={v}"]
        return args

    def start(self, timeout=30):
        """Starts arfd and waits until it serves (its port file is written);
        ProcError, with the log's tail, if it exits or takes too long."""
        if os.path.exists(self.port_file):  # a restart: wait for the new port
            os.unlink(self.port_file)
        args = self.args()
        if self.netns:  # ip execs arfd in the namespace: the pid is arfd's
            args = ["ip", "netns", "exec", self.netns.name] + args
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=self.env)

        def port_written():
            try:
                with open(self.port_file) as f:
                    txt = f.read().strip()
            except OSError:
                return False
            if txt:
                self.port = int(txt)
            return bool(txt)
        try:
            wait_for(port_written, timeout, self.name, self.proc, self.log_path)
        except ProcError:
            self.stop()
            raise
        return self

    def log(self):
        return tail(self.log_path)

    def url(self, path="/", transport="tcp"):
        if transport == "tcp":
            return f"arf://{self.addr}:{self.port}{path}"
        if transport == "rdma":
            return f"arf+rdma://{RDMA_ADDR}:{self.rdma_port}{path}"
        return f"arf+shm://{path}?socket={self.socket}"

    def restart(self, kill=False):
        """Stop (SIGTERM, or SIGKILL) and start again on the same port and
        socket, as a restarted server would be."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.keep_port = True
        return self.start()

    def kill(self):
        """SIGKILL: no clean shutdown."""
        stop_proc(self.proc, signal.SIGKILL)
        self._close_log()

    def stop(self):
        """SIGTERM (SIGKILL after 30 s); returns arfd's exit status."""
        rc = stop_proc(self.proc)
        self._close_log()
        return rc

    def _close_log(self):
        if self._log:
            self._log.close()
            self._log = None

    def cleanup(self):
        self.stop()
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    def stats(self):
        """The server's counters from its control socket, or None."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(10)
                s.connect(self.control)
                s.sendall(b"stats\n")
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            return json.loads(data)
        except (OSError, ValueError):
            return None


# ---------------------------------------------------------------- mounts

def fuse_skip_reason(build=None):
    """Why arf-fuse mounts cannot be made here, or None."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE in this kernel or container)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not accessible"
    if not os.path.exists(arf_fuse_bin(build)):
        return "arf-fuse was not built (libfuse3 not found at configure time)"
    if os.geteuid() != 0:
        return "FUSE tests mount as root (allow_other, setuid checks, mount.arf)"
    return None


def _mountinfo():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            yield fields[4].replace("\\040", " "), fields[fields.index("-") + 1]


def mounted(path):
    """True if path is a mount point in this namespace (no stat of it, which
    would wait on a daemon that is not serving yet)."""
    path = os.path.realpath(path)
    return any(mp == path for mp, _ in _mountinfo())


def fstype(path):
    path = os.path.realpath(path)
    kind = None
    for mp, t in _mountinfo():
        if mp == path:
            kind = t
    return kind


def unmount(path):
    """Lazy unmount; quiet if it is not mounted."""
    if mounted(path):
        subprocess.run(["fusermount3", "-u", "-z", path], capture_output=True, timeout=60)
        if mounted(path):
            subprocess.run(["umount", "-l", path], capture_output=True, timeout=60)


def find_daemon(mountpoint):
    """The pid of the arf-fuse serving mountpoint (for mounts made through
    mount(8), whose daemon the test did not start itself)."""
    mountpoint = os.path.realpath(mountpoint)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if (argv and os.path.basename(argv[0]) == b"arf-fuse" and mountpoint.encode() in argv
                and alive(int(pid))):
            return int(pid)
    return None


class Mount:
    """One arf-fuse process in the foreground (-f: the pid is ours) on its
    own mount point: a fresh directory under workdir (or the system's
    temporary directory) unless mountpoint is given."""

    def __init__(self, url, opts="", mountpoint=None, workdir=None, build=None, log_path=None):
        self.url = url
        self.opts = opts
        self.bin = arf_fuse_bin(build)
        self._tmp = None
        if mountpoint is None:
            self._tmp = tempfile.mkdtemp(prefix="arf-mnt-", dir=workdir)
            mountpoint = self._tmp
        os.makedirs(mountpoint, exist_ok=True)
        self.path = mountpoint
        self.proc = None
        self._log = None
        self.log_path = log_path or os.path.join(
            tempfile.gettempdir(), "arf-fuse-%d-%s.log" % (os.getpid(),
                                                           os.path.basename(mountpoint)))
        self.returncode = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self, timeout=30):
        """Mounts and waits until the mount answers; on failure unmounts,
        stops the daemon and raises ProcError."""
        args = [self.bin, self.url, self.path, "-f"]
        if self.opts:
            args += ["-o", self.opts]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: mounted(self.path), timeout, "arf-fuse", self.proc, self.log_path)
            os.stat(self.path)  # waits for INIT: the mount now answers
        except BaseException:
            self.stop()
            raise
        return self

    def log(self):
        return tail(self.log_path)

    def p(self, *names):
        return os.path.join(self.path, *names)

    def stop(self):
        """Unmounts and waits for the daemon (SIGTERM, SIGKILL if it lingers);
        returns its exit status.  Safe to call twice."""
        if self.proc is None:
            return self.returncode
        unmount(self.path)
        try:
            self.returncode = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.returncode = stop_proc(self.proc, timeout=20)
        if self._log:
            self._log.close()
            self._log = None
        self.proc = None
        if self._tmp:
            try:
                os.rmdir(self._tmp)
            except OSError:
                pass
        return self.returncode

    def remount(self):
        """Unmount and mount again (nothing of the file data stays cached)."""
        tmp, self._tmp = self._tmp, None  # keep the directory
        self.stop()
        self._tmp = tmp
        return self.start()


# ---------------------------------------------------------------- NFS-Ganesha

class Ganesha:
    """rpcbind (unless one already serves 127.0.0.1:111: then it is not
    ours to stop) and ganesha.nfsd on 127.0.0.1 with free NFS and MOUNT
    ports: a MEM export (/mem) for metadata and a VFS export (/vfs) of
    vfs_dir for data, and with disk_dir a VFS export (/vfsdisk) of that
    directory too.  Both stopped by pid in stop()."""

    def __init__(self, work, vfs_dir, log=print, disk_dir=None):
        self.work = work
        self.vfs_dir = vfs_dir
        self.disk_dir = disk_dir
        self.say = log
        self.conf = os.path.join(work, "ganesha.conf")
        self.log_path = os.path.join(work, "ganesha.log")
        self.pidfile = os.path.join(work, "ganesha.pid")
        self.proc = None
        self.rpcbind = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self):
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self):
        if port_open(111):
            self.say("rpcbind: one already serves port 111; using it (not ours to stop)")
        else:
            with open(os.path.join(self.work, "rpcbind.log"), "ab") as err:
                self.rpcbind = subprocess.Popen(["rpcbind", "-f"], stdout=subprocess.DEVNULL,
                                                stderr=err)
            wait_for(lambda: port_open(111), 20, "rpcbind", self.rpcbind)
            self.say("rpcbind pid %d (-f; port 111 is the one fixed port)" % self.rpcbind.pid)
        self.nfs_port = free_port()
        self.mnt_port = free_port()
        while self.mnt_port == self.nfs_port:
            self.mnt_port = free_port()
        recov = os.path.join(self.work, "ganesha-recovery")
        os.makedirs(recov, exist_ok=True)
        with open(self.conf, "w") as f:
            f.write("""NFS_CORE_PARAM {
  Bind_addr = 127.0.0.1;
  NFS_Port = %d;
  MNT_Port = %d;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  Protocols = 3, 4;
  mount_path_pseudo = true;
}
NFSV4 {
  Graceless = true;
  RecoveryBackend = fs;
  RecoveryRoot = "%s";
}
NFS_KRB5 { Active_krb5 = false; }
MEM { Inode_Size = 0; }
EXPORT_DEFAULTS { Access_Type = RW; Squash = No_Root_Squash; SecType = sys; }
EXPORT {
  Export_Id = 1; Path = /mem; Pseudo = /mem; Protocols = 3, 4; Transports = TCP;
  FSAL { Name = MEM; }
}
EXPORT {
  Export_Id = 2; Path = "%s"; Pseudo = /vfs; Protocols = 3, 4; Transports = TCP;
  FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
""" % (self.nfs_port, self.mnt_port, recov, self.vfs_dir))
            if self.disk_dir:
                f.write("""EXPORT {
  Export_Id = 3; Path = "%s"; Pseudo = /vfsdisk; Protocols = 3, 4; Transports = TCP;
  FSAL { Name = VFS; }
}
""" % self.disk_dir)
        args = ["ganesha.nfsd", "-F", "-L", self.log_path, "-f", self.conf, "-p", self.pidfile,
                "-N", "NIV_EVENT"]
        with open(self.log_path + ".out", "ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        wait_for(lambda: port_open(self.nfs_port) and port_open(self.mnt_port), 60,
                 "ganesha.nfsd", self.proc, self.log_path)
        self.say("ganesha.nfsd pid %d: NFS 127.0.0.1:%d, MOUNT %d (Graceless)" % (
            self.proc.pid, self.nfs_port, self.mnt_port))

    def url(self, export, version=3, extra=""):
        """A libnfs URL of export ("mem", "vfs" or "vfsdisk")."""
        u = "nfs://127.0.0.1/%s?version=%d&nfsport=%d" % (export, version, self.nfs_port)
        if version == 3:
            u += "&mountport=%d" % self.mnt_port
        return u + extra

    def stop(self):
        stop_proc(self.proc, timeout=20)
        stop_proc(self.rpcbind, timeout=20)


# ---------------------------------------------------------------- etcd

ETCD_BIN = os.environ.get("ARF_TEST_ETCD", "/usr/bin/etcd")


def etcd_skip_reason():
    """Why a test that needs etcd cannot run here ("" if it can)."""
    if not os.access(ETCD_BIN, os.X_OK):
        return "%s is missing (Debian: etcd-server; scripts/deps.sh installs it)" % ETCD_BIN
    return ""


class Etcd:
    """One etcd (a single member) on free loopback ports, with its data
    directory in workdir, stopped by pid.  restart(wipe=True) starts it
    again on the same client port with an empty data directory: an etcd
    that lost everything.  args: more of etcd's flags (--auth-token-ttl 1);
    tls: {"cert", "key", "ca"} files to serve https:// with (ca: the one
    that signed cert, which the health check trusts), and "client_ca" to
    ask clients for a certificate it signed (--client-cert-auth; the health
    check then shows "client_cert" and "client_key")."""

    def __init__(self, workdir, name="etcd", args=(), tls=None):
        self.workdir = workdir
        self.name = name
        self.extra_args = list(args)
        self.tls = tls
        self.port = free_port()
        self.peer_port = free_port()
        self.data_dir = os.path.join(workdir, name + ".data")
        self.log_path = os.path.join(workdir, name + ".log")
        self.proc = None
        self._log = None
        self.also_listen = []  # more addresses to serve clients on (Netns.host_addr)

    @property
    def url(self):
        return self.url_at("127.0.0.1")

    def url_at(self, addr):
        return "%s://%s:%d" % ("https" if self.tls else "http", addr, self.port)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def _tls_args(self):
        if not self.tls:
            return []
        args = ["--cert-file", self.tls["cert"], "--key-file", self.tls["key"]]
        if self.tls.get("client_ca"):
            args += ["--client-cert-auth", "--trusted-ca-file", self.tls["client_ca"]]
        return args

    def _context(self):
        if not self.tls:
            return None
        ctx = ssl.create_default_context(cafile=self.tls["ca"])
        if self.tls.get("client_ca"):
            ctx.load_cert_chain(self.tls["client_cert"], self.tls["client_key"])
        return ctx

    def start(self, timeout=30):
        peer = "http://127.0.0.1:%d" % self.peer_port
        args = [ETCD_BIN, "--name", self.name, "--data-dir", self.data_dir,
                "--listen-client-urls", ",".join([self.url] + [self.url_at(a) for a in
                                                               self.also_listen]),
                "--advertise-client-urls", self.url,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "%s=%s" % (self.name, peer)] + self._tls_args() + \
            self.extra_args
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)

        def healthy():
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1,
                                            context=self._context()) as r:
                    return json.loads(r.read()).get("health") == "true"
            except (OSError, ValueError):
                return False
        try:
            wait_for(healthy, timeout, self.name, self.proc, self.log_path)
        except ProcError:
            self.stop()
            raise
        return self

    def stop(self):
        rc = stop_proc(self.proc)
        if self._log:
            self._log.close()
            self._log = None
        return rc

    def restart(self, wipe=False):
        self.stop()
        if wipe:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        return self.start()


# ---------------------------------------------------------------- network namespaces

_NETNS_WHY = None


def netns_skip_reason():
    """Why network namespaces cannot be had here ("" when they can: root,
    iproute2, and a namespace made and removed once to see)."""
    global _NETNS_WHY
    if _NETNS_WHY is None:
        probe = "arfprobe%d" % os.getpid()
        if os.geteuid() != 0:
            _NETNS_WHY = "network namespaces need root"
        elif not shutil.which("ip"):
            _NETNS_WHY = "ip (iproute2) is missing"
        elif subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode:
            _NETNS_WHY = "ip netns add failed: no network namespaces here"
        else:
            subprocess.run(["ip", "netns", "del", probe], capture_output=True)
            _NETNS_WHY = ""
    return _NETNS_WHY


def _addrs_in_use():
    """The IPv4 addresses of this namespace's interfaces (leaked test pairs
    included) and the networks its routes lead to."""
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True,
                         text=True).stdout
    return {w.split("/")[0] for line in out.splitlines() for w in line.split()[3:4]}


_SWEPT = False


def sweep_stale_netns():
    """Remove the namespaces of test runs that were killed before their
    cleanup (meson's timeout: SIGTERM to the test's process group, SIGKILL
    0.5 s later): named arf<pid>_<k> by Netns, their pid gone and no process
    left inside.  Deleting a namespace deletes its veth pair.  Returns the
    names removed."""
    gone = []
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(r"arf(\d+)_(\d+)", name)
        if not m or os.path.exists("/proc/%s" % m.group(1)):
            continue  # not a test's, or its creator (or a namesake) lives
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True,
                              text=True).stdout.split()
        if pids:
            continue
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        gone.append(name)
    return gone


class Netns:
    """A network namespace of the test's own, joined to this one by a veth
    pair: host_addr on this side, addr inside, a /30 of 198.18.0.0/15 (the
    range RFC 2544 keeps for benchmark networks, on no real network)
    picked from the pid and k (a test's k-th namespace), and past any /30
    an interface here uses already (another run's, a leaked one); lo is up
    inside.  Traffic stays on the pair.  remove() deletes the namespace and
    the pair, and goes on past what is already gone (after a failed create
    too)."""

    def __init__(self, k):
        # the whole pid, so that a stale namespace's creator can be looked
        # for (sweep_stale_netns); "arfh" + 7 digits + "_" + k fits an
        # interface name's 15 characters
        tag = "%d_%d" % (os.getpid(), k)
        self.name = "arf" + tag
        self.host_if, self.ns_if = "arfh" + tag, "arfn" + tag
        used = _addrs_in_use()
        block = (os.getpid() * 8 + k * 977) % 32768
        for _ in range(32768):
            base = (198 << 24) | (18 << 16) | (block * 4)
            quad = lambda n: ".".join(str((n >> s) & 255) for s in (24, 16, 8, 0))  # noqa: E731
            self.host_addr, self.addr = quad(base + 1), quad(base + 2)
            if self.host_addr not in used and self.addr not in used:
                break
            block = (block + 1) % 32768

    def create(self):
        global _SWEPT
        if not _SWEPT:  # once a process: what killed runs left
            _SWEPT = True
            for name in sweep_stale_netns():
                print("removed %s, a namespace left by a killed test run" % name)
        ns = ["ip", "netns", "exec", self.name]
        for cmd in (["ip", "netns", "add", self.name],
                    ["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if],
                    ["ip", "link", "set", self.ns_if, "netns", self.name],
                    ["ip", "addr", "add", self.host_addr + "/30", "dev", self.host_if],
                    ["ip", "link", "set", self.host_if, "up"],
                    ns + ["ip", "addr", "add", self.addr + "/30", "dev", self.ns_if],
                    ns + ["ip", "link", "set", self.ns_if, "up"],
                    ns + ["ip", "link", "set", "lo", "up"]):
            run(cmd)
        return self

    def remove(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)


# ---------------------------------------------------------------- groups

class Group:
    """Everything a run started (objects with stop()), stopped in reverse
    order by stop_all, which goes on past a failure to stop one."""

    def __init__(self, log=print):
        self.items = []
        self.say = log

    def add(self, obj):
        self.items.append(obj)
        return obj

    def stop_all(self):
        for obj in reversed(self.items):
            try:
                obj.stop()
            except Exception as e:  # keep stopping the rest
                self.say("cleanup of %s: %s" % (type(obj).__name__, e))
        self.items = []
