#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Real tools on an arf-fuse mount: cp -a of /usr/include in and back out
(diff -r identical, modes and mtimes kept), tar create and extract, git
init/add/commit/fsck, make of a small C project, and fio writing with
crc32c verification and reading it back verified."""
import os
import shutil
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetest  # noqa: E402
from fusetest import FuseTestCase, run  # noqa: E402

# /usr/include is the tree; ARF_FUSE_TREE may point elsewhere (or to a subset)
TREE = os.environ.get("ARF_FUSE_TREE", "/usr/include")


def tree_meta(root):
    """path -> (type and mode, mtime_ns for non-links, size, link target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, root)
            link = os.readlink(full) if stat.S_ISLNK(st.st_mode) else None
            mtime = None if link is not None else st.st_mtime_ns
            out[rel] = (st.st_mode, mtime, st.st_size if not stat.S_ISDIR(st.st_mode) else 0,
                        link)
    return out


class CopyTree(FuseTestCase):
    def test_cp_a_in_and_out(self):
        if not os.path.isdir(TREE):
            self.skipTest("%s is missing" % TREE)
        dst = self.mnt.p("include")
        run(["cp", "-a", TREE, dst], timeout=900)
        out = tempfile.mkdtemp(prefix="arf-cp-out-")
        self.addCleanup(shutil.rmtree, out, True)
        back = os.path.join(out, "include")
        run(["cp", "-a", dst, back], timeout=900)
        run(["diff", "-r", "--no-dereference", TREE, dst], timeout=900)
        run(["diff", "-r", "--no-dereference", TREE, back], timeout=900)
        want = tree_meta(TREE)
        for name, got in (("mount", tree_meta(dst)), ("copied back", tree_meta(back))):
            with self.subTest(tree=name):
                self.assertEqual(set(got), set(want))
                bad = [k for k in want if got[k] != want[k]]
                self.assertEqual(bad[:10], [], "modes/mtimes differ for %d entries" % len(bad))
        print("copied %d entries" % len(want))


class Tar(FuseTestCase):
    def test_tar_create_and_extract(self):
        src = self.mnt.p("src")
        os.makedirs(os.path.join(src, "a", "b"))
        for i in range(200):
            with open(os.path.join(src, "a" if i % 2 else "a/b", "f%d" % i), "wb") as f:
                f.write(os.urandom(i * 97))
        os.symlink("a/b", os.path.join(src, "link"))
        os.utime(os.path.join(src, "a", "f1"), ns=(10**9, 2 * 10**9))
        archive = self.mnt.p("t.tar")
        run(["tar", "--format=posix", "-C", src, "-cf", archive, "."])  # pax: ns mtimes
        dst = self.mnt.p("dst")
        os.mkdir(dst)
        run(["tar", "-C", dst, "-xpf", archive])
        run(["diff", "-r", "--no-dereference", src, dst])
        self.assertEqual(tree_meta(src), tree_meta(dst))
        # and a compressed archive written and listed on the mount
        run(["tar", "-C", src, "-czf", self.mnt.p("t.tgz"), "."])
        names = run(["tar", "-tzf", self.mnt.p("t.tgz")]).stdout.decode().split()
        self.assertIn("./a/b/f0", names)


class Git(FuseTestCase):
    def test_git_init_add_commit(self):
        repo = self.mnt.p("repo")
        os.mkdir(repo)
        env = ["env", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t",
               "GIT_COMMITTER_EMAIL=t@e", "HOME=" + repo]
        git = env + ["git", "-C", repo]
        run(git + ["init", "-q"])
        for i in range(50):
            with open(os.path.join(repo, "file%d.txt" % i), "w") as f:
                f.write("line %d\n" % i * (i + 1))
        os.makedirs(os.path.join(repo, "sub", "dir"))
        with open(os.path.join(repo, "sub", "dir", "x.c"), "w") as f:
            f.write("int x;\n")
        run(git + ["add", "-A"])
        run(git + ["commit", "-q", "-m", "first"])
        with open(os.path.join(repo, "file1.txt"), "a") as f:
            f.write("more\n")
        run(git + ["commit", "-q", "-am", "second"])
        log = run(git + ["log", "--oneline"]).stdout.decode().strip().split("\n")
        self.assertEqual(len(log), 2)
        run(git + ["fsck", "--strict"])
        self.assertEqual(run(git + ["status", "--porcelain"]).stdout, b"")
        run(git + ["gc", "-q"])
        run(git + ["fsck", "--strict"])


class Make(FuseTestCase):
    def test_make_small_c_project(self):
        proj = self.mnt.p("proj")
        os.mkdir(proj)
        files = {
            "Makefile": ("CFLAGS = -O1 -Wall\n"
                         "hello: main.o greet.o\n\t$(CC) -o $@ $^\n"
                         "%.o: %.c greet.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n"
                         "clean:\n\trm -f hello *.o\n"),
            "greet.h": "const char *greet(void);\n",
            "greet.c": "#include \"greet.h\"\nconst char *greet(void) { return \"hello\"; }\n",
            "main.c": ("#include <stdio.h>\n#include \"greet.h\"\n"
                       "int main(void) { puts(greet()); return 0; }\n"),
        }
        for name, text in files.items():
            with open(os.path.join(proj, name), "w") as f:
                f.write(text)
        run(["make", "-C", proj, "-j2"])
        self.assertEqual(run([os.path.join(proj, "hello")]).stdout, b"hello\n")
        # nothing to do the second time; a touched source rebuilds
        out = run(["make", "-C", proj]).stdout.decode()
        self.assertIn("up to date", out)
        with open(os.path.join(proj, "greet.c"), "w") as f:
            f.write("#include \"greet.h\"\nconst char *greet(void) { return \"again\"; }\n")
        os.utime(os.path.join(proj, "greet.c"), None)
        run(["make", "-C", proj])
        self.assertEqual(run([os.path.join(proj, "hello")]).stdout, b"again\n")
        run(["make", "-C", proj, "clean"])
        self.assertEqual(sorted(os.listdir(proj)), sorted(files))


class Fio(FuseTestCase):
    def test_fio_write_verify_then_read_verify(self):
        fio = shutil.which("fio")
        if not fio:
            self.skipTest("fio is not installed (apt-get install fio)")
        f = self.mnt.p("fio.dat")
        common = ["--name=v", "--filename=" + f, "--size=32m", "--bs=64k",
                  "--ioengine=psync", "--verify=crc32c", "--do_verify=1",
                  "--verify_fatal=1", "--randrepeat=1"]
        # writes, then reads everything back verifying each block's crc32c
        run([fio] + common + ["--rw=randwrite"], timeout=600)
        # a second, separate pass only reading and verifying what the first wrote
        run([fio] + common + ["--rw=randwrite", "--verify_only"], timeout=600)
        # and 1 MiB sequential blocks the same way
        seq = ["--name=s", "--filename=" + f, "--size=32m", "--bs=1m", "--ioengine=psync",
               "--verify=crc32c", "--verify_fatal=1", "--rw=write"]
        run([fio] + seq, timeout=600)
        run([fio] + seq + ["--verify_only"], timeout=600)


if __name__ == "__main__":
    fusetest.main()
