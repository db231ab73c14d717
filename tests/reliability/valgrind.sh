#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# arfd under valgrind (memcheck) for a short workload over tcp and shm:
# builds arfd and arfctl without sanitizers in their own build directory,
# runs arfctl's commands against it, stops it with SIGTERM, and fails on any
# memcheck error or definite leak.
#   tests/reliability/valgrind.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
b=$2
command -v valgrind >/dev/null || { echo "FAIL: valgrind is not installed (scripts/deps.sh)"; exit 1; }
if [ ! -f "$b/build.ninja" ]; then
  meson setup "$b" "$src" --buildtype=debugoptimized -Dtests=false >/dev/null
fi
ninja -C "$b" arfd/arfd tools/arfctl/arfctl >/dev/null
work=$(mktemp -d /tmp/arf-vg.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT
# a configuration file of its own, never the host's /etc/arf/arfd.conf
# (no squashing: the client here is root, as in tests/lib/arfproc.py)
printf '[export]\nroot_squash = false\n' >"$work/arfd.conf"
valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
  --log-file="$work/vg.log" \
  "$b/arfd/arfd" --foreground -c "$work/arfd.conf" --listen 127.0.0.1:0 --socket "$work/s" \
  --data-dir "$work/data" \
  --spin-us 0 --set "server.port_file=$work/port" --set regions.data_blocks=4096 \
  --set regions.pages=512 --set regions.inodes=4096 --set regions.dir_buckets=1024 \
  --set regions.dir_entries=4096 >"$work/arfd.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "arfd did not start under valgrind"; cat "$work/arfd.log" "$work/vg.log"; exit 1; }
port=$(cat "$work/port")
ctl="$b/tools/arfctl/arfctl"
head -c 300000 /dev/urandom >"$work/blob"
n=0
for url in "arf://127.0.0.1:$port" "arf+shm://"; do
  q=""
  [ "$url" = "arf+shm://" ] && q="?socket=$work/s"
  t=$([ "$url" = "arf+shm://" ] && echo shm || echo tcp)
  "$ctl" mkdir -p "$url/v-$t/a/b$q"
  for i in 1 2 3 4 5; do "$ctl" put "$work/blob" "$url/v-$t/a/b/f$i$q"; n=$((n + 1)); done
  "$ctl" cat "$url/v-$t/a/b/f3$q" | cmp - "$work/blob"
  "$ctl" ls "$url/v-$t/a/b$q" >/dev/null
  "$ctl" --json --stats stat "$url/v-$t/a/b/f1$q" >/dev/null
  "$ctl" mv "$url/v-$t/a/b/f1$q" "$url/v-$t/a/g$q"
  "$ctl" rm "$url/v-$t/a/b/f2$q"
  "$ctl" status "$url/$q" >/dev/null
  "$ctl" stat "$url/v-$t/nothing$q" 2>/dev/null && { echo "FAIL: stat of a missing file succeeded"; exit 1; }
done
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
pid=
summary=$(grep "ERROR SUMMARY" "$work/vg.log" || true)
if [ "$rc" -ne 0 ] || ! grep -q "ERROR SUMMARY: 0 errors" "$work/vg.log"; then
  cat "$work/vg.log" | tail -80
  echo "FAIL: arfd under valgrind exited $rc: $summary"
  exit 1
fi
echo "valgrind: arfd served $n puts and the other arfctl commands over tcp and shm; ${summary#==*== }"
