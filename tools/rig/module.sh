#!/usr/bin/env bash
# Builds ib_umad_rs.ko against a kernel build directory, from a copy of the
# sources, and prints the .ko's path. For a Debian kernel's tree (in a
# build root, from debian-kernel.sh) the build is the users' own command,
# tools/build-for-debian.sh, run in that root.
#   module.sh <kernel build dir> [make arguments, e.g. CLIPPY=1]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kdir=${1:?usage: module.sh <kernel build dir> [make arguments]}
shift
# A build with make arguments (lint.sh's clippy) has its own directory: it
# does not make the plain build start over, nor replace its .ko while a boot
# copies it.
name=module
[ $# -eq 0 ] || name=module$(printf -- '-%s' "$@" | tr -c 'A-Za-z0-9-' _)
out=$(kbuild_dir "$kdir" "$name")
lock_dir "$out"
module_sources "$out"
root=$(kernel_root "$kdir")
if [ -n "$root" ]; then
	ko=$(in_build_root "$root" "${out#"$root"}/tools/build-for-debian.sh" \
		"$(cat "$kdir/include/config/kernel.release")" -- -s "$@")
	echo "$root$ko"
else
	kbuild "$kdir" "$out" -s "$@" modules >&2
	echo "$out/drivers/infiniband/core/umad_rs/ib_umad_rs.ko"
fi
