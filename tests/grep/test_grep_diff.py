# SPDX-License-Identifier: MIT
"""Differential tests of arf-grep against GNU grep 3.8 (/usr/bin/grep).

Every case is (options, patterns, files); both programs run it under
LC_ALL=C and their standard output and exit status must be identical.  The
cases cover fixed strings, BRE, ERE, anchors, bracket expressions and
classes, alternation, repetition and intervals, case folding, -w/-x, empty
lines, a missing final newline, long lines, binary data (NULs early and past
GNU grep's first 96 KiB buffer) and the output options (-n -b -c -l -L -o -q
-m -H -h -v -s -a), plus errors (exit 2) for malformed patterns.

Each local case runs three ways: arf-grep's native DFA, and the generated
eBPF program in the mobilecode interpreter (--engine=mc) with the default
slices and with 7-byte slices (so that resuming by cursor is exercised).
test_grep_remote.py (meson test grep-remote) runs the same cases on copies
of the files inside an ARF mount and by arf:// URL.

Run: ARF_BUILD=build-dir python3 tests/grep/test_grep_diff.py [-v]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import testmain  # noqa: E402
BUILD = os.path.abspath(os.environ.get("ARF_BUILD", os.path.join(HERE, "..", "..", "build")))
ARF_GREP = os.environ.get("ARF_GREP", os.path.join(BUILD, "tools", "arf-grep", "arf-grep"))
GNU_GREP = "/usr/bin/grep"
ENV = dict(os.environ, LC_ALL="C", LANG="C")
ENV.pop("GREP_COLOR", None)
ENV.pop("GREP_COLORS", None)


def make_files(d):
    """The corpus; returns {name: bytes}."""
    files = {}
    files["words.txt"] = (
        b"hello world\n"
        b"Hello World\n"
        b"HELLO, world!\n"
        b"\n"
        b"the quick brown fox jumps over the lazy dog\n"
        b"The Quick Brown Fox\n"
        b"foo bar baz\n"
        b"foobar foo_bar foo-bar\n"
        b"  leading spaces\n"
        b"trailing spaces   \n"
        b"\ttab\tseparated\tline\n"
        b"abc123 456def 7890\n"
        b"a.b*c+d?e|f(g)h[i]j{k}l\\m^n$o\n"
        b"aaa aab abb bbb\n"
        b"x\n"
        b"\n"
        b"email: someone@example.com, other@test.org\n"
        b"path/to/some/file.c:42: error: oops\n"
        b"ab\n"
        b"abab ababab\n"
        b"word-word word_word wordword\n"
        b"123-456-7890\n"
        b"last line\n"
    )
    files["noeol.txt"] = b"first line\nsecond foo line\nno newline at end foo"
    files["empty.txt"] = b""
    files["blank.txt"] = b"\n\n\n"
    long_line = (b"abcdefghij" * 12000) + b" needle " + (b"klmnopqrst" * 12000)
    files["long.txt"] = b"short one\n" + long_line + b"\n" + b"x" * 70000 + b"\nend needle\n"
    files["bin.txt"] = b"text line one\nbinary\x00data here\nmore text foo\nfoo\x00bar\n"
    lines = b"".join(b"line %06d some text foo\n" % i for i in range(12000))
    files["binlate.txt"] = lines + b"here comes a NUL\x00 foo\n" + b"after foo\n"
    files["high.txt"] = bytes(range(1, 256)).replace(b"\n", b"") + b"\n\xff\xfe foo \x80\n"
    big = b"".join(b"%d the line with words foo%d bar\n" % (i, i % 97) for i in range(20000))
    files["big.txt"] = big
    files["crlf.txt"] = b"dos line\r\nfoo\r\n\r\nend\r\n"
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    with open(os.path.join(d, "pats.txt"), "wb") as f:
        f.write(b"foo\nworld\n")
    with open(os.path.join(d, "pats_empty.txt"), "wb") as f:
        f.write(b"")
    return files


# (options, pattern args) -- pattern args include -e/-f or a bare pattern
PATTERNS = [
    # fixed strings
    (["-F"], ["foo"]), (["-F"], ["a.b*c"]), (["-F"], ["\\m^n$"]), (["-F"], ["hello"]),
    (["-F", "-i"], ["HELLO"]), (["-F"], ["-e", "foo", "-e", "dog"]), (["-F"], [""]),
    (["-F", "-x"], ["x"]), (["-F", "-w"], ["foo"]), (["-F", "-i", "-w"], ["the"]),
    (["-F"], ["needle"]), (["-F"], ["zzz-not-there"]), (["-F"], ["o"]),
    # BRE
    (["-G"], ["hel*o"]), ([], ["^the"]), ([], ["foo$"]), ([], ["^$"]), ([], ["."]),
    ([], ["a\\{2\\}"]), ([], ["ab\\{1,2\\}a"]), ([], ["\\(ab\\)\\{2,\\}"]), ([], ["x*"]),
    ([], ["[[:digit:]]\\+"]), ([], ["[[:upper:]][[:lower:]]*"]), ([], ["[^a-z ]"]),
    ([], ["\\<foo"]), ([], ["bar\\>"]), ([], ["\\bword\\b"]), ([], ["\\Boo"]),
    ([], ["a\\|b\\|z"]), ([], ["\\w\\+@\\w\\+"]), ([], ["\\s\\S"]), ([], ["*a"]),
    ([], ["a\\?b"]), ([], ["[]a]"]), ([], ["[a-]x"]), ([], ["\\.c"]), ([], ["$o"]),
    ([], ["n\\$o"]), ([], ["^\\(the\\|The\\) "]), ([], ["[[:space:]]$"]),
    ([], ["[[:punct:]][[:alpha:]]"]), ([], ["o\\{3,\\}"]), ([], ["\\(\\)"]),
    ([], ["-e", "world", "-e", "^foo"]), ([], ["-f", "pats.txt"]),
    ([], ["-f", "pats_empty.txt", "-e", "dog"]), ([], ["\\`the"]), ([], ["line\\'"]),
    # ERE
    (["-E"], ["fo+"]), (["-E"], ["(ab)+"]), (["-E"], ["^(foo|bar)"]), (["-E"], ["a|b"]),
    (["-E"], ["[0-9]{3}-[0-9]{4}"]), (["-E"], ["o{2}"]), (["-E"], ["x?y?z?$"]),
    (["-E"], ["(a|ab)(c|bcd)"]), (["-E"], ["w(or)?d"]), (["-E"], ["a{,2}b"]),
    (["-E"], ["a{1"]), (["-E"], ["{"]), (["-E"], ["a)"]), (["-E"], ["()"]), (["-E"], ["a||b"]),
    (["-E"], ["[[:alnum:]_]+@[a-z]+\\.(com|org)"]), (["-E"], ["\\(g\\)"]), (["-E"], ["^.{5}$"]),
    (["-E"], ["(^| )b+( |$)"]), (["-E"], ["[^[:print:]]"]), (["-E"], ["\\bfoo_?bar\\b"]),
    (["-E"], ["(x|y|z)*q"]), (["-E"], ["(.)(.)(.)(.)"]), (["-E"], ["foo.*bar"]),
    (["-E"], ["*b"]), (["-E"], ["+a"]), (["-E"], ["e$|^t"]),
    # case folding
    (["-i"], ["hello"]), (["-i"], ["[A-C]"]), (["-i"], ["[[:upper:]]x"]), (["-i", "-E"], ["FO{2}"]),
    (["-i"], ["[^a-z]"]), (["-y"], ["QUICK"]),
    # -i literals: the local literal search and the folding skip loop
    (["-i"], ["wOrLd"]), (["-F", "-i"], ["O W"]), (["-i"], ["THE QUICK"]), (["-F", "-i"], ["x-Y"]),
    (["-i"], ["NEEDLE"]), (["-F", "-i"], ["[a]"]), (["-i"], ["q"]), (["-i", "-E"], ["Foo"]),
    # -w / -x
    (["-w"], ["foo"]), (["-w"], ["word"]), (["-w"], ["o*"]), (["-w"], [""]), (["-x"], [""]),
    (["-x"], ["x"]), (["-x", "-E"], ["[a-z ]+"]), (["-w", "-E"], ["foo|bar"]),
    (["-w"], ["b*"]), (["-x", "-i"], ["AB"]), (["-w"], ["[0-9]*"]),
    # binary / high bytes
    ([], ["\\x"]), ([], ["[\x80-\xff]"]), ([], ["data"]), ([], ["NUL"]), ([], ["^bar"]),
]

# the table walker's start-state skip (codegen_dfa.c): alternations of
# words (pairs of bytes, either case), a pair whose second byte is the
# newline, a first byte with several followers, and too many ways out of
# the start state for a skip; against the bigger files too (SKIP_FILES)
SKIP_PATTERNS = [
    (["-E"], ["foo13 |with wordsx|19999"]), (["-E"], ["needle|end"]), (["-i", "-E"], ["fOO|Bar"]),
    (["-E"], ["o$|ne"]), (["-E"], ["fo[ox]|ba[rz]"]), (["-E"], ["here|NUL"]),
    (["-E"], ["[a-m]x|[n-z]y"]), (["-E"], ["line 0000[0-9]|text"]), (["-i", "-E"], ["X|lINE 01"]),
    (["-E"], ["a^b"]),  # nothing leaves the start state: nothing to look for
    # pairs of common bytes take a third (triples): near misses, either
    # case, word and line bounds, a newline third, overlapping words
    (["-E"], ["foo1|bax"]), (["-i", "-E"], ["tHe l|oRd"]), (["-w", "-E"], ["the|line"]),
    (["-E"], ["le$|ome t"]), (["-x", "-E"], ["foo|ab"]), (["-E"], ["abab|bab"]),
    (["-E"], ["a b|b a| aa"]), (["-E"], ["foo|bar| "]),  # a blank: straight to matched
]
SKIP_FILES = ["big.txt", "long.txt", "binlate.txt", "bin.txt", "noeol.txt", "crlf.txt"]
SKIP_OPTSETS = [[], ["-n"], ["-c"], ["-v", "-c"], ["-v", "-n", "-m", "3"], ["-n", "-a"]]

OPTSETS = [[], ["-n"], ["-c"], ["-o"], ["-v"], ["-i", "-n"], ["-l"], ["-L"], ["-b"],
           ["-o", "-b", "-n"], ["-m", "2"], ["-v", "-c"], ["-q"], ["-a"], ["-h"], ["-H"],
           ["-m", "1", "-c"], ["-v", "-n", "-m", "3"], ["-s"], ["-o", "-i"], ["-n", "-a"]]

ERRORS = [
    ([], ["\\(a"]), ([], ["a\\)"]), (["-E"], ["(a"]), ([], ["[a"]), ([], ["[[:foo:]]"]),
    ([], ["[:space:]"]), ([], ["a\\{1"]), ([], ["a\\{x\\}"]), (["-E"], ["a{2,1}"]),
    (["-E"], ["x{32768}"]), ([], ["[b-a]"]), ([], ["a\\"]), ([], ["--no-such-option", "a"]),
]


def cases(files):
    """A deterministic list of at least several hundred cases."""
    names = sorted(files)
    out = []
    # every pattern against the main corpus with a rotating option set
    for i, (popts, pargs) in enumerate(PATTERNS):
        for j in range(3):
            opts = OPTSETS[(i * 3 + j) % len(OPTSETS)]
            out.append((popts + opts, pargs, ["words.txt"]))
    # every option set against every file with a few patterns
    for k, name in enumerate(names):
        for j, opts in enumerate(OPTSETS):
            popts, pargs = [([], ["foo"]), (["-E"], ["^.?$"]), (["-F", "-i"], ["LINE"]),
                            (["-w"], ["text"]), (["-E"], ["o+ "])][(k + j) % 5]
            out.append((popts + opts, pargs, [name]))
    for i, (popts, pargs) in enumerate(SKIP_PATTERNS):
        for j, name in enumerate(SKIP_FILES):
            opts = SKIP_OPTSETS[(i + j) % len(SKIP_OPTSETS)]
            out.append((popts + opts, pargs, [name]))
            out.append((popts + opts, pargs, ["words.txt"]))
    # several files at once, -r
    for opts in OPTSETS[:8]:
        out.append((opts, ["foo"], ["words.txt", "noeol.txt", "empty.txt", "bin.txt"]))
    out.append((["-r"], ["needle"], ["."]))
    out.append((["-r", "-c"], ["foo"], ["sub"]))
    out.append((["-r", "-l"], ["foo"], ["sub/"]))
    out.append((["-r", "-h"], ["foo"], ["sub/a.txt"]))
    out.append(([], ["foo"], ["missing.txt", "words.txt"]))
    out.append((["-s"], ["foo"], ["missing.txt", "words.txt"]))
    out.append((["-q"], ["foo"], ["missing.txt", "words.txt"]))
    out.append(([], ["foo"], ["sub"]))
    out.append((["--"], ["-foo"], ["words.txt"]))
    out.append((["-e", "-bar"], [], ["words.txt"]))
    out.append((["-m", "0"], ["foo"], ["words.txt"]))
    out.append((["-c"], ["-f", "pats_empty.txt"], ["words.txt"]))
    for popts, pargs in ERRORS:
        out.append((popts, pargs, ["words.txt"]))
    return out


def run(prog, args, cwd, extra_env=None):
    env = dict(ENV)
    if extra_env:
        env.update(extra_env)
    p = subprocess.run([prog] + args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.stdout, p.returncode, p.stderr


class GrepDiff(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(ARF_GREP):
            raise unittest.SkipTest("arf-grep not built at %s" % ARF_GREP)
        if not os.path.exists(GNU_GREP):
            raise unittest.SkipTest("GNU grep missing at %s" % GNU_GREP)
        cls.dir = tempfile.mkdtemp(prefix="arfgrep-")
        cls.files = make_files(cls.dir)
        os.makedirs(os.path.join(cls.dir, "sub", "deeper"))
        with open(os.path.join(cls.dir, "sub", "a.txt"), "wb") as f:
            f.write(b"foo in a\n")
        with open(os.path.join(cls.dir, "sub", "deeper", "b.txt"), "wb") as f:
            f.write(b"no match\nfoo foo\n")
        cls.cases = cases(cls.files)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check_engine(self, engine_args, extra_env=None):
        failures = []
        for opts, pargs, files in self.cases:
            args = opts + pargs + files
            want = run(GNU_GREP, args, self.dir)
            got = run(ARF_GREP, engine_args + args, self.dir, extra_env)
            if want[:2] != got[:2]:
                failures.append("grep %s\n  gnu: rc=%d out=%r\n  arf: rc=%d out=%r err=%r" % (
                    " ".join(repr(a) for a in args), want[1], want[0][:300], got[1],
                    got[0][:300], got[2][:300]))
        print("%s: %d cases, %d identical" % (" ".join(engine_args) or "native",
                                              len(self.cases), len(self.cases) - len(failures)))
        self.assertFalse(failures, "\n".join(failures[:20]) + "\n(%d differ)" % len(failures))

    def test_native(self):
        self.check_engine([])

    def test_mc_interpreter(self):
        self.check_engine(["--engine=mc"])

    def test_mc_small_slices(self):
        self.check_engine(["--engine=mc"], {"ARF_GREP_SLICE": "7"})

    def test_jit(self):
        self.check_engine(["--engine=jit"])

    def test_jit_small_slices(self):
        self.check_engine(["--engine=jit"], {"ARF_GREP_SLICE": "7"})

    def test_cases_cover_what_the_docstring_claims(self):
        """The differential tests above can only show what the cases reach:
        judged by GNU grep's own results (not by the table's length), the
        cases match and miss (exit 0 and 1) and fail (exit 2), reach binary
        data both early and past GNU grep's first 96 KiB buffer, and use
        every output option the docstring names in a case that matches."""
        status, binary, used = {0: 0, 1: 0, 2: 0}, set(), set()
        for opts, pargs, files in self.cases:
            out, rc, err = run(GNU_GREP, opts + pargs + files, self.dir)
            status[rc] = status.get(rc, 0) + 1
            if b"binary file matches" in out + err:
                binary.update(f for f in files if f.startswith("bin"))
            if rc == 0:
                used.update(o for o in opts if o.startswith("-"))
        print("GNU grep on the %d cases: %d matched, %d did not, %d errors; binary files "
              "matched: %s" % (len(self.cases), status[0], status[1], status[2],
                              ", ".join(sorted(binary))))
        for rc in (0, 1, 2):
            self.assertGreater(status[rc], 10, "few cases exit %d: %s" % (rc, status))
        self.assertEqual(binary, {"bin.txt", "binlate.txt"})
        for opt in "-n -b -c -l -L -o -q -m -H -h -v -s -a -i -w -x -F -E -r".split():
            self.assertIn(opt, used, "no matching case uses " + opt)

    def test_explain(self):
        p = subprocess.run([ARF_GREP, "--explain", "-E", "fo+|ba[rz]"], stdout=subprocess.PIPE,
                           env=ENV)
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"call 1", p.stdout)
        p = subprocess.run([ARF_GREP, "--explain", "-F", "needle"], stdout=subprocess.PIPE,
                           env=ENV)
        self.assertIn(b"skip loop", p.stdout)

    def test_explain_start_state_skip(self):
        """The table walker skips for an alternation of words (a pair of
        bytes each and the NUL that stops: three tests, and with -v the
        newline a fourth) and not where too many bytes leave its first
        state."""
        for args, want in ((["-E", "xyzzy|needle"], b"skip: 3 tests"),
                           (["-a", "-E", "xyzzy|needle"], b"skip: 2 tests"),
                           (["-v", "-E", "xyzzy|needle"], b"skip: 4 tests"),
                           (["-i", "-E", "xyzzy|needle"], b"skip: 3 tests"),
                           (["-a", "-E", "a^b"], b"skip: 0 tests"),
                           (["-E", "a|e|i|o"], b"no start-state skip")):
            p = subprocess.run([ARF_GREP, "--explain"] + args, stdout=subprocess.PIPE, env=ENV)
            self.assertEqual(p.returncode, 0)
            self.assertIn(b"DFA table walker", p.stdout)
            self.assertIn(want, p.stdout, args)

    def test_unsupported_refused(self):
        for args in (["-A", "1"], ["-C2"], ["--color=always"], ["-P"], ["-z"], ["--include=*.c"]):
            p = subprocess.run([ARF_GREP] + args + ["a", "/dev/null"], stderr=subprocess.PIPE,
                               env=ENV)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(b"not supported", p.stderr, args)

    def test_backref_refused(self):
        p = subprocess.run([ARF_GREP, "\\(a\\)\\1", "/dev/null"], stderr=subprocess.PIPE,
                           env=ENV)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"back-references are not supported", p.stderr)


if __name__ == "__main__":
    testmain.main()
