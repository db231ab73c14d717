#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Regenerates the seed corpora in tests/fuzz/corpus/ (by hand, when a format
# changes; the result is kept in the repository):
#   proto, frame, handshake  bodies and frames made with ARF's own encoders
#   mc                       conformance programs assembled to bytecode (+ their -- mem)
#   asm                      the same programs as text
#   elf                      tests/mc/elf_prog.c compiled by clang -target bpf (.elf: *.o is ignored)
#   config                   deploy/arfd.conf, the full dump of the defaults, small variants
#
#   tests/fuzz/mkcorpus.sh [CONFORMANCE_TESTS_DIR]   (default ../shared/conformance/bpf/tests)
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CONF=${1:-$SRC/../shared/conformance/bpf/tests}
OUT=$SRC/tests/fuzz/corpus
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

clang -O1 -std=gnu11 -D_GNU_SOURCE -I"$SRC/common" -I"$SRC/net" -I"$SRC/meta" \
  -I"$SRC/mobilecode" "$SRC/tests/fuzz/mkcorpus.c" "$SRC/net/proto.c" "$SRC/net/frame.c" \
  "$SRC/meta/super.c" "$SRC"/mobilecode/{asm,disasm,elf,err,helpers,interp,isa,jit,jit_guess,jit_x86,prog,run,verify,vm}.c \
  $(pkg-config --cflags --libs libelf libsodium) -o "$TMP/mkcorpus"

rm -rf "$OUT"
mkdir -p "$OUT"/{proto,frame,handshake,mc,asm,elf,config}
"$TMP/mkcorpus" proto "$OUT/proto"
"$TMP/mkcorpus" frame "$OUT/frame"
"$TMP/mkcorpus" handshake "$OUT/handshake"

# A section of a .data case file: the lines after "-- NAME" up to the next "--".
section() { awk -v s="-- $2" '$0 == s { on = 1; next } /^-- / { on = 0 } on' "$1"; }

CASES="add alu64-arith alu-bit be16 call_local div64-reg j-signed-imm jset-imm ldxb ldxh-all2
  lddw2 lock_cmpxchg32 lock_fetch_xor mod64 movsx1664-reg mul64-reg neg64 prime
  rfc9669_ldxsh rfc9669_stxdw sdiv64-imm smod32-neg-by-pos-reg stxb-all subnet swap64"
for c in $CASES; do
  f=$CONF/$c.data
  section "$f" asm >"$TMP/$c.s"
  cp "$TMP/$c.s" "$OUT/asm/$c.s"
  (cd "$OUT/mc" && "$TMP/mkcorpus" mc "$c.bin" "$TMP/$c.s" "$(section "$f" mem | tr -d ' \n')")
done
for c in output-and-unwind mem-writable; do
  f=$SRC/tests/mc/cases/$c.data
  section "$f" asm >"$TMP/$c.s"
  cp "$TMP/$c.s" "$OUT/asm/$c.s"
  (cd "$OUT/mc" && "$TMP/mkcorpus" mc "$c.bin" "$TMP/$c.s" "$(section "$f" mem | tr -d ' \n')")
done
printf 'mov %%r0, 1\nja +1\nlabel:\nexit\n# comment\nexit\n' >"$OUT/asm/labels.s"

clang -O2 -target bpf -mcpu=v3 -I/usr/include/x86_64-linux-gnu -c "$SRC/tests/mc/elf_prog.c" \
  -o "$OUT/elf/elf_prog.elf"
# the same object with its debug sections and symbols trimmed: a smaller seed
llvm-objcopy --strip-debug "$OUT/elf/elf_prog.elf" "$OUT/elf/elf_prog-nodebug.elf" 2>/dev/null ||
  rm -f "$OUT/elf/elf_prog-nodebug.elf"

cp "$SRC/deploy/arfd.conf" "$OUT/config/arfd.conf"
cat >"$OUT/config/all-keys.conf" <<'CONF'
[server]
listen = 0.0.0.0:0
socket =
data_dir = /tmp/arf-data
pid_file = /run/arfd.pid
port_file = /tmp/port
log_level = debug
spin_us = 0
workers = 4
control = auto
control_group = arf
test_hooks = yes
[export]
name = /export/a
sync = off
read_only = 1
root_squash = on
anon_uid = 65534
anon_gid = 0x10
[regions]
inodes = 1024
dir_buckets = 64
dir_entries = 1024
pages = 16
data_blocks = 0x100
dir_hash_mask = 3
test_torn_delay_us = 10
CONF
printf '; comment\n[export]\nname=/x ; inline\nREAD_ONLY = TRUE\n' >"$OUT/config/case.conf"
printf '[server]\nworkers = 65\n' >"$OUT/config/out-of-range.conf"
printf '[nosuch]\nkey = 1\n' >"$OUT/config/bad-section.conf"
du -sh "$OUT"
