#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/deps.sh — sourced by bench/run: install the Debian packages the
# benchmarks need and build fio with its nfs engine (libnfs) from Debian's
# own source package of the installed fio version, cached under $TOOLS.
set -euo pipefail

BENCH_PACKAGES=(
  nfs-ganesha nfs-ganesha-mem nfs-ganesha-vfs rpcbind libnfs-dev gnuplot-nox
  fio dpkg-dev python3 libaio-dev libdpdk-dev clang libelf-dev pkg-config
  rsync git tar
)

bench_install_deps() {
  local missing=()
  for p in "${BENCH_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bench: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# A private sources directory holding a deb-src twin of every deb source the
# system uses, so `apt-get source` and `apt-get build-dep` work without
# touching /etc/apt.
bench_src_apt() {
  local dir=$1
  mkdir -p "$dir/sources.list.d" "$dir/lists/partial"
  local out="$dir/sources.list.d/src.sources" f
  : >"$out"
  : >"$dir/sources.list.d/src.list"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed -e 's/^Types:.*/Types: deb deb-src/' "$f" >>"$out"
    printf '\n' >>"$out"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    grep -E '^[[:space:]]*deb[[:space:]]' "$f" |
      awk '{print; sub(/^[[:space:]]*deb[[:space:]]/, "deb-src "); print}' \
        >>"$dir/sources.list.d/src.list" || true
  done
  APT_SRC_OPTS=(-o "Dir::Etc::SourceParts=$dir/sources.list.d" -o "Dir::Etc::SourceList=/dev/null"
                -o "Dir::State::Lists=$dir/lists")
  apt-get "${APT_SRC_OPTS[@]}" update -qq >/dev/null
}

# fio with --enable-libnfs, the same version as Debian's fio; result: $TOOLS/fio/fio
bench_build_fio() {
  local tools=$1
  local ver patch
  # fio's nfs engine, patched (bench/fio-nfs-sync.patch): end_fsync and
  # fsync=N send a COMMIT, sync=1 opens O_SYNC (FILE_SYNC writes)
  patch=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fio-nfs-sync.patch
  ver="$(dpkg-query -W -f='${Version}' fio) $(sha256sum <"$patch" | cut -c1-12)"
  if [ -x "$tools/fio/fio" ] && [ "$(cat "$tools/fio/.debversion" 2>/dev/null)" = "$ver" ] &&
     "$tools/fio/fio" --enghelp 2>/dev/null | grep -qw nfs; then
    return 0
  fi
  echo "bench: building fio $ver with the nfs engine (once; cached in $tools/fio)" >&2
  local work="$tools/fio-src"
  rm -rf "$work" "$tools/fio"
  mkdir -p "$work"
  bench_src_apt "$tools/apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get "${APT_SRC_OPTS[@]}" build-dep -y -qq fio >/dev/null
  (cd "$work" && apt-get "${APT_SRC_OPTS[@]}" source -qq "fio=${ver%% *}" >/dev/null 2>&1 ||
     apt-get "${APT_SRC_OPTS[@]}" source -qq fio >/dev/null)
  local src
  src=$(find "$work" -maxdepth 1 -mindepth 1 -type d -name 'fio-*' | head -1)
  [ -n "$src" ] || { echo "bench: apt-get source fio gave no tree" >&2; return 1; }
  mv "$src" "$tools/fio"
  (cd "$tools/fio" && patch -p1 <"$patch" >patch.log 2>&1) ||
    { echo "bench: $patch does not apply; see $tools/fio/patch.log" >&2; return 1; }
  (cd "$tools/fio" && ./configure --enable-libnfs >configure.log 2>&1 &&
     make -j"$(nproc)" fio >make.log 2>&1) ||
    { echo "bench: fio build failed; see $tools/fio/configure.log and make.log" >&2; return 1; }
  "$tools/fio/fio" --enghelp | grep -qw nfs ||
    { echo "bench: the fio built has no nfs engine (libnfs-dev missing?)" >&2; return 1; }
  echo "$ver" >"$tools/fio/.debversion"
}
