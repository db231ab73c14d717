#!/bin/sh
# SPDX-License-Identifier: MIT
# Lint a man page: any groff warning fails (groff itself exits 0 on warnings).
out=$(groff -man -ww -z "$1" 2>&1)
if [ -n "$out" ]; then
  printf '%s\n' "$out"
  exit 1
fi
echo "$1: clean"
