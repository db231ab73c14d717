#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages ARF builds and runs with (as root).
# Sourced by scripts/run and scripts/test; safe to run again.
set -euo pipefail

ARF_PACKAGES=(
  build-essential meson ninja-build pkg-config git python3
  librocksdb-dev libinih-dev libsodium-dev libssl-dev libxxhash-dev libcmocka-dev libjson-c-dev
  libfuse3-dev fuse3 attr acl rsync fio groff-base systemd valgrind prometheus libelf-dev libbpf-dev clang llvm libclang-rt-14-dev libsystemd-dev
  libibverbs-dev librdmacm-dev
  libcurl4-openssl-dev etcd-server etcd-client iproute2
  debhelper dpkg-dev fakeroot
)

arf_install_deps() {
  local missing=()
  for p in "${ARF_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "arf: missing packages (${missing[*]}); run as root to install them" >&2
    return 1
  fi
  echo "arf: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  arf_install_deps
fi
