#!/bin/sh
# SPDX-License-Identifier: MIT
# arf-asm from the command line: asm -> disasm -> asm gives the same bytes,
# an ELF object disassembles, errors name file and line, exit codes hold.
# usage: cli_test.sh ARF_ASM [ELF_OBJECT]
set -u
ARF_ASM=$1
OBJ=${2:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ARF_ASM" --version | grep -q '^arf-asm (ARF) [0-9]' || fail "--version"
"$ARF_ASM" --help | grep -q 'arf-asm test' || fail "--help"

cat > "$T/p.s" <<'EOS'
# a small program
mov %r0, 0
loop: add %r0, 3
jlt %r0, 10, loop
lddw %r1, 0xdeadbeef00000001
call local f
exit
f:
mov %r0, %r1
exit
EOS
"$ARF_ASM" asm "$T/p.s" -o "$T/p.bin" || fail "asm"
[ "$(wc -c < "$T/p.bin")" -eq 72 ] || fail "asm output is not 9 instructions"
"$ARF_ASM" disasm "$T/p.bin" > "$T/q.s" || fail "disasm"
grep -q '^call local fn_7$' "$T/q.s" || fail "disasm: no label for the local call"
"$ARF_ASM" asm "$T/q.s" -o "$T/q.bin" || fail "asm of the disassembly"
cmp -s "$T/p.bin" "$T/q.bin" || fail "round trip changed the bytes"
"$ARF_ASM" asm - < "$T/p.s" > "$T/r.bin" || fail "asm from stdin"
cmp -s "$T/p.bin" "$T/r.bin" || fail "stdin/stdout output differs"

printf 'mov %%r0, 0\nfoo %%r1\n' > "$T/bad.s"
"$ARF_ASM" asm "$T/bad.s" -o "$T/bad.bin" 2> "$T/err"
[ $? -eq 1 ] || fail "bad asm: exit status"
grep -q "bad.s:2: unknown mnemonic 'foo'" "$T/err" || fail "bad asm: message $(cat "$T/err")"

printf 'abc' > "$T/odd.bin"
"$ARF_ASM" disasm "$T/odd.bin" 2>/dev/null && fail "disasm of 3 bytes succeeded"
"$ARF_ASM" test "$T/missing.data" > /dev/null 2>&1
[ $? -eq 2 ] || fail "test of a missing file: exit status"
"$ARF_ASM" frobnicate > /dev/null 2>&1 && fail "unknown command accepted"

if [ -n "$OBJ" ]; then
	"$ARF_ASM" disasm "$OBJ" > "$T/o.s" || fail "disasm of $OBJ"
	grep -q '^call 1$' "$T/o.s" || fail "ELF disassembly lacks the emit call"
	grep -q 'read-only data' "$T/o.s" || fail "ELF disassembly lacks its data"
fi
echo "arf-asm command line: all checks passed"
