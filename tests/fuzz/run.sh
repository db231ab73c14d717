#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build and run ARF's libFuzzer targets: the decoders of untrusted bytes.
#
#   tests/fuzz/run.sh BUILD_DIR [TARGET...]     (all targets when none named)
#
# Each target is compiled with clang -fsanitize=fuzzer,address,undefined
# from the sources listed below (Meson's compiler is gcc, which has no
# libFuzzer), then run for FUZZ_SECONDS (default 30; e.g. FUZZ_SECONDS=600
# by hand for a longer hunt) on a fresh copy of its seed corpus
# tests/fuzz/corpus/TARGET, so nothing is ever written into the source tree.
# Everything goes under BUILD_DIR/TARGET/ (binary, corpus, log, artifacts).
#
# Prints "fuzz TARGET: N executions in S s, 0 crashes" per target; on a
# crash, leak, timeout or out-of-memory it prints the end of libFuzzer's log
# and the path of the input that did it, and exits 1.  A missing clang or
# fuzzer runtime (Debian: libclang-rt-14-dev, see scripts/deps.sh) is an
# error, not a skip.
#
# Targets:
#   proto      request and reply bodies (net/proto.c) in arfd's and libarf's field orders
#   frame      frame cutting and header decoding (net/frame.c)
#   handshake  the client's parse of the server's HELLO reply (net/dial.c, shm.c),
#              the info blob and the superblock check (meta/super.c)
#   mc         the verifier and the interpreter (mobilecode/) on raw bytecode
#   jit        the JIT against the interpreter on the same inputs (mc's corpus)
#   asm        the assembler (and disassembler round trip)
#   elf        the ELF loader
#   config     arfd's configuration parser (arfd/config.c on libinih)
set -euo pipefail

ALL_TARGETS=(proto frame handshake mc jit asm elf config)

usage() {
  echo "usage: $0 BUILD_DIR [${ALL_TARGETS[*]}]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
BUILD=$1
shift
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
CLANG=${FUZZ_CC:-clang}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)

MC_SRCS="mobilecode/asm.c mobilecode/disasm.c mobilecode/elf.c mobilecode/err.c
  mobilecode/helpers.c mobilecode/interp.c mobilecode/isa.c mobilecode/jit.c
  mobilecode/jit_guess.c mobilecode/jit_x86.c mobilecode/prog.c mobilecode/run.c mobilecode/verify.c mobilecode/vm.c"

# Sources and pkg-config packages of each target (besides fuzz_TARGET.c).
target_srcs() {
  case $1 in
    proto) echo "net/proto.c" ;;
    frame) echo "net/frame.c" ;;
    handshake) echo "net/client.c net/dial.c net/frame.c net/shm.c net/tcp.c net/proto.c meta/super.c meta/hash.c" ;;
    mc | jit | asm | elf) echo "$MC_SRCS" ;;
    config) echo "arfd/config.c arfd/access.c arfd/log.c cell/etcd.c cell/auth.c cell/records.c" ;;
    *) return 1 ;;
  esac
}
target_pkgs() {
  case $1 in
    frame) echo "libsodium" ;;
    handshake) echo "libsodium libxxhash" ;;
    mc | jit | asm | elf) echo "libelf" ;;
    config) echo "inih libcurl json-c libsodium" ;;
    *) echo "" ;;
  esac
}

CFLAGS=(-g -O1 -std=gnu11 -D_GNU_SOURCE '-DARF_VERSION="fuzz"' -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -I"$SRC/common" -I"$SRC/net" -I"$SRC/meta" -I"$SRC/mobilecode" -I"$SRC/arfd" -I"$SRC/cell")

die() {
  echo "fuzz: $*" >&2
  exit 1
}

# The toolchain: clang and its libFuzzer runtime are required packages.
check_toolchain() {
  command -v "$CLANG" >/dev/null 2>&1 ||
    die "clang not found: install clang and libclang-rt-14-dev (scripts/deps.sh)"
  local d
  d=$(mktemp -d)
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
    >"$d/t.c"
  if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$d/t.c" -o "$d/t" >"$d/log" 2>&1; then
    cat "$d/log" >&2
    rm -rf "$d"
    die "clang cannot link a libFuzzer target: the fuzzer runtime is missing" \
      "(Debian package libclang-rt-14-dev, listed in scripts/deps.sh)"
  fi
  rm -rf "$d"
}

build_target() {
  local t=$1 bin=$BUILD/$t/fuzz-$t srcs pkgs flags=()
  srcs=$(target_srcs "$t") || die "unknown target '$t' (${ALL_TARGETS[*]})"
  pkgs=$(target_pkgs "$t")
  mkdir -p "$BUILD/$t"
  # Rebuild when anything it may include or compile is newer than the binary.
  if [ -x "$bin" ] && [ -z "$(find "$SRC/common" "$SRC/net" "$SRC/meta" "$SRC/mobilecode" \
    "$SRC/arfd" "$SRC/cell" "$SRC/tests/fuzz" -newer "$bin" \( -name '*.[ch]' -o -name run.sh \) \
    -print -quit)" ]; then
    return 0
  fi
  if [ -n "$pkgs" ]; then
    # shellcheck disable=SC2207
    flags=($(pkg-config --cflags --libs $pkgs)) || die "pkg-config $pkgs failed"
  fi
  local files=("$SRC/tests/fuzz/fuzz_$t.c")
  for s in $srcs; do files+=("$SRC/$s"); done
  if ! "$CLANG" "${CFLAGS[@]}" "${files[@]}" "${flags[@]}" -lpthread -o "$bin.tmp" \
    >"$BUILD/$t/build.log" 2>&1; then
    cat "$BUILD/$t/build.log" >&2
    die "$t: build failed"
  fi
  mv "$bin.tmp" "$bin"
}

# The seed corpus of a target: its own, or (jit) the one whose inputs it shares.
corpus_of() {
  case $1 in
    jit) echo mc ;;
    *) echo "$1" ;;
  esac
}

run_target() {
  local t=$1 w=$BUILD/$t bin=$BUILD/$t/fuzz-$t seeds
  seeds=$SRC/tests/fuzz/corpus/$(corpus_of "$t")
  [ -d "$seeds" ] || die "$t: no seed corpus $seeds"
  rm -rf "$w/corpus" "$w/artifacts"
  mkdir -p "$w/corpus" "$w/artifacts"
  cp "$seeds"/* "$w/corpus/"
  chmod -R u+w "$w/corpus"
  local rc=0
  (
    cd "$w"
    # Our own sanitizer settings, whatever the test runner exported.
    export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:print_summary=1:allocator_may_return_null=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:print_summary=1
    exec "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2560 \
      -print_final_stats=1 -artifact_prefix="$w/artifacts/" "$w/corpus" >"$w/fuzz.log" 2>&1
  ) || rc=$?
  local runs secs found
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$w/fuzz.log" | tail -1)
  [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs in.*/\1/p' "$w/fuzz.log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$w/fuzz.log" | tail -1)
  found=$(find "$w/artifacts" -type f | sort)
  if [ "$rc" -ne 0 ] || [ -n "$found" ] || [ -z "$runs" ]; then
    echo "---- end of $w/fuzz.log ----"
    tail -n 60 "$w/fuzz.log"
    echo "----"
    if [ -n "$found" ]; then
      for f in $found; do
        echo "fuzz $t: FAILED, input saved at $f"
        echo "  reproduce: $bin $f"
      done
    else
      echo "fuzz $t: FAILED (exit status $rc), no input saved; see $w/fuzz.log"
    fi
    return 1
  fi
  echo "fuzz $t: $runs executions in ${secs:-$FUZZ_SECONDS} s, 0 crashes" \
    "(corpus $(find "$w/corpus" -type f | wc -l) inputs)"
}

check_toolchain
status=0
for t in "${TARGETS[@]}"; do
  build_target "$t"
  run_target "$t" || status=1
done
exit $status
