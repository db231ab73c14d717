# SPDX-License-Identifier: MIT
"""The tool rows (issue 15): what people do to a network filesystem that
writes many small files -- extract a tar of /usr/include, `rsync -a`
/usr/share/doc, touch 10,000 files, `copy_file_range` 256 MiB, `git
clone` this repository -- on the ARF arf-fuse mount beside tmpfs (the
local limit), timed whole, with ARF's round trips per file from arfd's
counters (one-sided rounds, requests and program runs: arf-fuse is its
only client) and arfd's CPU time.  Quick mode uses smaller inputs (the
test names say which); everything is prepared untimed in the run's
tmpfs work directory and removed untimed after each row."""
import os
import shutil
import subprocess
import time

from common import ARF_WAIT, LOCAL_WAIT, Fail, cpu_seconds, log
from report import table

MIB = 1 << 20


def tool_tests(cfg):
    """(test, kind, argument) of the tool rows for a run's settings."""
    c = cfg["tools"]
    return [("tar x %s" % c["tar_src"], "tar", c["tar_src"]),
            ("rsync -a %s" % c["rsync_src"], "rsync", c["rsync_src"]),
            ("touch %d files" % c["touch"], "touch", c["touch"]),
            ("copy_file_range %d MiB" % c["copy_mib"], "copy", c["copy_mib"]),
            ("git clone (this repository%s)" % (", --depth 1" if c["git_depth"] else ""),
             "git", c["git_depth"])]


def count_entries(top):
    """Files, directories and links under top (top itself not counted)."""
    n = 0
    for _, dirs, files in os.walk(top):
        n += len(dirs) + len(files)
    return n


def sh(args, cwd=None, timeout=1800):
    p = subprocess.run(args, cwd=cwd, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise Fail("%s: exit %d: %s" % (" ".join(args[:3]), p.returncode,
                                        (p.stderr + p.stdout).decode(errors="replace")[-800:]))
    return p.stdout


class ToolRows:
    """Bench's tool rows (a part of bench.Bench)."""

    def tool_inputs(self):
        """Prepare the inputs once, in the work directory (tmpfs)."""
        c = self.cfg["tools"]
        d = os.path.join(self.work, "tool-inputs")
        os.makedirs(d, exist_ok=True)
        tar = os.path.join(d, "src.tar")
        sh(["tar", "-cf", tar, "-C", "/", c["tar_src"].lstrip("/")])
        # rsync's source: the whole directory, or (quick) its first packages
        src = c["rsync_src"]
        if c["rsync_max"]:
            sub = os.path.join(d, "rsync-src")
            os.makedirs(sub)
            n = 0
            for name in sorted(os.listdir(src)):
                if n >= c["rsync_max"]:
                    break
                sh(["cp", "-a", os.path.join(src, name), sub])
                n += 1 + count_entries(os.path.join(sub, name))
            src = sub
        repo = sh(["git", "-C", os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "rev-parse", "--show-toplevel"]).decode().strip()
        return dict(tar=tar, rsync=src, git=repo)

    def tool_prep(self, kind, arg, target):
        """What a tool needs in its target before it is timed and counted:
        the copy's source file."""
        if kind == "copy":
            block = os.urandom(MIB)
            with open(os.path.join(target, "src"), "wb") as f:
                for i in range(arg):
                    f.write(block[i % 4096:] + block[:i % 4096])

    def tool_one(self, kind, arg, inputs, target):
        """Run one tool into target (a fresh directory, tool_prep's done);
        returns (seconds, entries made, MiB copied or 0)."""
        if kind == "tar":
            t0 = time.time()
            sh(["tar", "-xf", inputs["tar"], "-C", target])
            return time.time() - t0, count_entries(target), 0
        if kind == "rsync":
            t0 = time.time()
            sh(["rsync", "-a", inputs["rsync"] + "/", os.path.join(target, "doc") + "/"])
            return time.time() - t0, count_entries(target), 0
        if kind == "touch":
            names = "\n".join("f%05d" % i for i in range(arg)).encode()
            t0 = time.time()
            p = subprocess.run(["xargs", "touch"], cwd=target, input=names, capture_output=True,
                               timeout=1800)
            el = time.time() - t0
            if p.returncode:
                raise Fail("xargs touch: " + p.stderr.decode(errors="replace")[-500:])
            return el, count_entries(target), 0
        if kind == "copy":
            src, dst = os.path.join(target, "src"), os.path.join(target, "dst")
            size = arg * MIB
            t0 = time.time()
            fi = os.open(src, os.O_RDONLY)
            fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                done = 0
                while done < size:
                    n = os.copy_file_range(fi, fo, size - done)
                    if n <= 0:
                        raise Fail("copy_file_range stopped at %d of %d" % (done, size))
                    done += n
                os.fsync(fo)
            finally:
                os.close(fi)
                os.close(fo)
            el = time.time() - t0
            if os.stat(dst).st_size != size:
                raise Fail("copy_file_range: dst has %d bytes" % os.stat(dst).st_size)
            return el, 1, arg
        if kind == "git":
            args = ["git", "clone", "-q", "--no-hardlinks"]
            if arg:
                args += ["--depth", str(arg), "file://" + inputs["git"]]
            else:
                args += [inputs["git"]]
            t0 = time.time()
            sh(args + [os.path.join(target, "repo")])
            return time.time() - t0, count_entries(target), 0
        raise ValueError(kind)

    def tool_row(self, test, kind, arg, inputs, system, meta, root, arfd=None):
        target = os.path.join(root, kind)
        os.makedirs(target)
        try:
            self.tool_prep(kind, arg, target)
            before = (self.arfd.stats(), cpu_seconds(self.arfd.pid)) if arfd else None
            secs, files, mib = self.tool_one(kind, arg, inputs, target)
            after = (self.arfd.stats(), cpu_seconds(self.arfd.pid)) if arfd else None
        finally:
            shutil.rmtree(target, ignore_errors=True)  # untimed; frees the blocks
        row = dict(section="tools", test=test, system=system, strategy="-", **meta,
                   secs=secs, files=files, mean_us=secs * 1e6 / max(files, 1))
        if mib:
            row.update(ops_s=mib / secs, mib_s=mib / secs)
        else:
            row.update(ops_s=files / secs)
        if arfd and before[0] and after[0]:
            s0, s1 = before[0], after[0]
            req = {k: v - s0["requests"].get(k, 0) for k, v in s1["requests"].items()}
            execs = sum(v for k, v in req.items() if "exec" in k)
            one = s1["one_sided"]["rounds"] - s0["one_sided"]["rounds"]
            n = max(files, 1)
            row.update(counter_source="server (arfd stats)",
                       one_sided_op=(s1["one_sided"]["reads"] - s0["one_sided"]["reads"]) / n,
                       rounds_op=(one + sum(req.values())) / n,
                       requests_op=(sum(req.values()) - execs) / n, execs_op=execs / n,
                       server_cpu_us_op=(after[1] - before[1]) * 1e6 / n)
        self.add(**row)
        log("%-22s %-34s %8.2f s %7d entries %10.0f %s%s" % (
            system, test, secs, files, row["ops_s"], "MiB/s" if mib else "entries/s",
            "  rounds/entry %.2f" % row["rounds_op"] if "rounds_op" in row else ""))

    def run_tools(self):
        tests = tool_tests(self.cfg)
        systems = [("ARF arf-fuse mount", dict(client="the tool (syscalls)", transport="tcp",
                                               wait=ARF_WAIT, caching="kernel + arf-fuse"),
                    os.path.join(self.mount.path, "tools"), True),
                   ("local tmpfs", dict(client="the tool (syscalls)", transport="-",
                                        wait=LOCAL_WAIT, caching="kernel"),
                    os.path.join(self.shm, "tools-local"), False)]
        for test, _, _ in tests:
            for system, _, _, _ in systems:
                self.expect("tools", test, system)
        inputs = self.attempt("tool inputs", self.tool_inputs)
        if not inputs:
            return
        for system, meta, root, arf in systems:
            if self.attempt(system + " tools dir", os.makedirs, root, 0o755, True) is None and \
                    not os.path.isdir(root):
                continue
            for test, kind, arg in tests:
                self.attempt("%s %s" % (system, test), self.tool_row, test, kind, arg, inputs,
                             system, meta, root, arf)
    def md_tools(self):
        rows = [r for r in self.rows if r["section"] == "tools"]
        if not rows:
            return []
        L = ["", "## Tools: tar, rsync, touch, copy_file_range, git clone", "",
             "Each tool run whole into a fresh directory on the ARF mount and on tmpfs; the "
             "inputs prepared in tmpfs first (untimed). entries/s (MiB/s for "
             "copy_file_range); per entry: the mean time and, for ARF, arfd's rounds "
             "(one-sided rounds + requests + program runs), requests, and CPU. "
             "copy_file_range on the mount is copied by arfd (COPY): the bytes do not "
             "cross the connection.", ""]
        L += table(rows, [("test", "test"), ("system", "system"), ("seconds", "secs"),
                          ("entries", "files"), ("entries/s or MiB/s", "ops_s"),
                          ("us/entry", "mean_us"), ("ARF/local", "ratio_local"),
                          ("rounds/entry", "rounds_op"), ("requests/entry", "requests_op"),
                          ("reads/entry", "one_sided_op"),
                          ("server CPU us/entry", "server_cpu_us_op")],
                   sort_by_test=[(t[0],) for t in tool_tests(self.cfg)])
        return L
