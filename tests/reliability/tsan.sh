#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ThreadSanitizer over the concurrent reader/writer path: builds arfd,
# arfctl, arf-itest, arf-asynctest and arf-scalebench with -fsanitize=thread
# in their own build directory, runs the torn-read test (a writer rewriting
# a file while readers read it one-sidedly), a COMMIT sent behind the
# writes by libarf's thread (arf-itest behind), libarf's asynchronous
# operations (64 in flight, torn reads through them, sequential readers
# read ahead) and readers beside writers on four request workers sharing
# the filesystem lock (scalebench mixed, getattr, lookup) over tcp and shm,
# and fails on any report from any process.
#   tests/reliability/tsan.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
b=$2
if [ ! -f "$b/build.ninja" ]; then
  meson setup "$b" "$src" -Db_sanitize=thread -Db_lundef=false --buildtype=debugoptimized >/dev/null
fi
ninja -C "$b" arfd/arfd tools/arfctl/arfctl tests/integration/arf-itest \
  tests/integration/arf-asynctest tests/integration/arf-scalebench >/dev/null
work=$(mktemp -d /tmp/arf-tsan.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT
# a configuration file of its own, never the host's /etc/arf/arfd.conf
# (no squashing: the client here is root, as in tests/lib/arfproc.py)
printf '[export]\nroot_squash = false\n' >"$work/arfd.conf"
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 log_path=$work/tsan"
"$b/arfd/arfd" --foreground -c "$work/arfd.conf" --listen 127.0.0.1:0 --socket "$work/s" \
  --data-dir "$work/data" \
  --spin-us 0 --set "server.port_file=$work/port" --set regions.data_blocks=16384 \
  --set regions.pages=1024 --set regions.inodes=16384 --set regions.dir_buckets=4096 \
  --set regions.dir_entries=16384 --set regions.test_torn_delay_us=300 \
  --set server.workers=4 --set programs.workers=2 >"$work/arfd.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "arfd did not start"; cat "$work/arfd.log"; exit 1; }
port=$(cat "$work/port")
"$b/tests/integration/arf-itest" torn "arf://127.0.0.1:$port/" 4 2
"$b/tools/arfctl/arfctl" rm "arf://127.0.0.1:$port/torn"
"$b/tests/integration/arf-itest" torn "arf+shm:///?socket=$work/s" 4 2
# a COMMIT sent by the client's thread behind the writes (libarf behind.c)
for u in "arf://127.0.0.1:$port/" "arf+shm:///?socket=$work/s"; do
  "$b/tests/integration/arf-itest" behind "$u" 6 20
  "$b/tools/arfctl/arfctl" rm "${u%%\?*}behind${u#"${u%%\?*}"}"
done
for u in "arf://127.0.0.1:$port/" "arf+shm:///?socket=$work/s"; do
  "$b/tests/integration/arf-asynctest" ops "$u" 3000
  "$b/tests/integration/arf-asynctest" torn "$u" 3
  "$b/tests/integration/arf-asynctest" seq "$u" 3
  "$b/tests/integration/arf-scalebench" "$u" 6 2 mixed --writers 2 --block 65536 --file /mixed
  "$b/tests/integration/arf-scalebench" "$u" 4 1 getattr --file /mixed
  "$b/tests/integration/arf-scalebench" "$u" 4 1 lookup --file /mixed
done
kill -TERM "$pid"
wait "$pid" || true
pid=
if ls "$work"/tsan.* >/dev/null 2>&1; then
  cat "$work"/tsan.*
  echo "FAIL: ThreadSanitizer reported races"
  exit 1
fi
echo "tsan: arfd (4 request workers) and the readers ran the torn-read test, the asynchronous" \
  "operations and readers beside writers over tcp and shm with no race reported"
