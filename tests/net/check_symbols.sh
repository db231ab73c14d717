#!/bin/sh
# SPDX-License-Identifier: MIT
# The soft-NIC rule, checked on the built objects: net/'s library neither
# uses nor defines any symbol of meta/ or ops/ (arf_meta_*, arf_ops_*), and
# the only ARF symbols it needs are its own (arf_net_*), so no filesystem
# code can be reached from the soft-NIC however the library is linked.
# Usage: check_symbols.sh NM LIBARF_NET_A
set -eu
nm=$1
lib=$2
[ -f "$lib" ] || { echo "FAIL: no library at $lib"; exit 1; }

# POSIX format: "name type [value size]"; archive members show as "lib[x.o]:".
undef=$("$nm" -P -u "$lib" | awk 'NF >= 2 && $2 == "U" { print $1 }' | sort -u)
defined=$("$nm" -P -g --defined-only "$lib" | awk 'NF >= 2 { print $1 }' | sort -u)

# Sanity: nm read the library and the soft-NIC is in it.
echo "$defined" | grep -qx 'arf_net_server_start' ||
	{ echo "FAIL: arf_net_server_start not defined in $lib (did nm read it?)"; exit 1; }
echo "$defined" | grep -qx 'arf_net_read' ||
	{ echo "FAIL: arf_net_read not defined in $lib"; exit 1; }

status=0
bad=$(echo "$undef" | grep -E '^arf_(meta|ops)_' || true)
if [ -n "$bad" ]; then
	echo "FAIL: net/ uses meta/ or ops/ symbols:"; echo "$bad"; status=1
fi
bad=$(echo "$defined" | grep -E '^arf_(meta|ops)_' || true)
if [ -n "$bad" ]; then
	echo "FAIL: net/ defines meta/ or ops/ symbols:"; echo "$bad"; status=1
fi
# Any other ARF symbol it needs must be its own, defined in the archive.
for s in $(echo "$undef" | grep -E '^arf_' || true); do
	case $s in
	arf_net_*) echo "$defined" | grep -qx "$s" ||
		{ echo "FAIL: $s is used by net/ but defined nowhere in it"; status=1; } ;;
	*) echo "FAIL: net/ uses $s from outside net/"; status=1 ;;
	esac
done
[ $status -eq 0 ] && echo "ok: $(echo "$defined" | wc -l) global symbols defined, none of meta/ or ops/; $(echo "$undef" | grep -c . || true) undefined, no ARF symbol from outside net/"
exit $status
