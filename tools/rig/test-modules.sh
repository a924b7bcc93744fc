#!/usr/bin/env bash
# Builds the selftests' test-only kernel modules (test_modules/ next to the
# umad selftests) against a kernel build directory, from a copy of their
# sources, and prints the path of each .ko. Prints nothing if there are none.
#   test-modules.sh <kernel build dir>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kdir=${1:?usage: test-modules.sh <kernel build dir>}
src=$REPO_DIR/tools/testing/selftests/drivers/infiniband/umad/test_modules
[ -f "$src/Makefile" ] || exit 0
out=$(kbuild_dir "$kdir" test-modules)
lock_dir "$out"
mkdir -p "$out"
rsync -a --checksum --delete --exclude '*.o' --exclude '.*.cmd' --exclude '*.ko' \
	--exclude '*.mod*' --exclude modules.order --exclude Module.symvers \
	"$src/" "$out/"
kbuild "$kdir" "$out" -s modules >&2
ls "$out"/*.ko
