#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the closing 'N passed, N failed, N skipped' line of a meson test run."""
import json
import sys

passed = failed = skipped = 0
try:
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            res = r.get("result")
            if res in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif res == "SKIP":
                skipped += 1
                print(f"skipped: {r.get('name')}")
            else:
                failed += 1
                print(f"failed: {r.get('name')} ({res})")
except OSError as e:
    print(f"summary: {e}", file=sys.stderr)
    failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
