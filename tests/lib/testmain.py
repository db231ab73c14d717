# SPDX-License-Identifier: MIT
"""The one main of ARF's Python tests: unittest, with an exit status meson
reads right.  A test that cannot run here must say SKIP (exit 77), never
pass: unittest's own main exits 0 when every test, or setUpClass, raised
SkipTest, so a suite that needs root or /dev/fuse "passed" without running.

  failures or errors                 -> 1
  every test skipped (or none ran)   -> 77, each reason printed
  otherwise                          -> 0, and the skipped ones listed

Every test script ends with `testmain.main()` (or harness.main(), which
calls it); `python3 tests/lib/testmain.py` checks these rules on itself."""
import sys
import unittest

SKIP = 77  # meson's (and automake's) code for a test that did not run


def outcome(result):
    """(exit status, lines to print) for a finished unittest result."""
    # a skip raised in setUpClass is reported against a stand-in (not a
    # TestCase), and that class's tests are neither run nor counted
    skipped = [(str(t), why) for t, why in result.skipped]
    test_skips = sum(1 for t, _ in result.skipped if isinstance(t, unittest.TestCase))
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - test_skips - bad
    lines = ["skipped: %s: %s" % s for s in skipped]
    if bad:
        return 1, lines
    if passed <= 0:
        if not skipped:
            return 1, ["no test ran (none was found)"]
        return SKIP, lines + ["SKIP: no test ran (%d skipped)" % len(skipped)]
    if skipped:
        lines.append("%d passed, %d skipped" % (passed, len(skipped)))
    return 0, lines


def main(note=None):
    """Runs the tests of __main__ (command-line arguments as unittest's) and
    exits with outcome()'s status."""
    if note:
        print(note, flush=True)
    prog = unittest.main(verbosity=2, exit=False)
    rc, lines = outcome(prog.result)
    for line in lines:
        print(line)
    sys.stdout.flush()
    sys.exit(rc)


# ---- the rules, checked on themselves ----

class _AllSkipped(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("no device")

    def test_a(self):
        pass


class _SomeSkipped(unittest.TestCase):
    def test_runs(self):
        pass

    def test_skips(self):
        self.skipTest("not here")


class _OneFails(unittest.TestCase):
    def test_fails(self):
        self.fail("as it should")

    def test_skips(self):
        self.skipTest("not here")


class _Rules(unittest.TestCase):
    def run_case(self, cls):
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(cls)
        result = unittest.TestResult()
        suite.run(result)
        return outcome(result)

    def test_class_skip_is_77(self):
        rc, lines = self.run_case(_AllSkipped)
        self.assertEqual(rc, SKIP)
        self.assertIn("no device", "\n".join(lines))

    def test_method_skips_only_is_77(self):
        class Only(unittest.TestCase):
            def test_x(self):
                self.skipTest("nothing")
        self.assertEqual(self.run_case(Only)[0], SKIP)

    def test_some_ran_is_0_and_lists_skips(self):
        rc, lines = self.run_case(_SomeSkipped)
        self.assertEqual(rc, 0)
        self.assertIn("1 passed, 1 skipped", lines)

    def test_failure_wins(self):
        self.assertEqual(self.run_case(_OneFails)[0], 1)

    def test_nothing_found_fails(self):
        class Empty(unittest.TestCase):
            pass
        self.assertEqual(self.run_case(Empty)[0], 1)


if __name__ == "__main__":
    unittest.main(defaultTest="_Rules", verbosity=2)
