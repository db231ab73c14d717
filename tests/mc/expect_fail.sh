#!/bin/sh
# SPDX-License-Identifier: MIT
# A command that must fail in one particular way: exit with STATUS (never
# a signal, never another status) and print MESSAGE (a fixed string) on
# standard output or standard error.  meson's should_fail passes on any
# non-zero exit, a crash included; this does not.
# usage: expect_fail.sh STATUS MESSAGE COMMAND [ARG...]
set -u
want=$1
msg=$2
shift 2
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -gt 128 ]; then
	echo "FAIL: $* died of signal $((rc - 128)), wanted exit $want:"
	echo "$out"
	exit 1
fi
if [ "$rc" -ne "$want" ]; then
	echo "FAIL: $* exited $rc, wanted $want:"
	echo "$out"
	exit 1
fi
case $out in
*"$msg"*) ;;
*)
	echo "FAIL: $* exited $rc as wanted but did not say: $msg"
	echo "$out"
	exit 1
	;;
esac
echo "ok: exit $rc: $msg"
