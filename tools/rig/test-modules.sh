#!/usr/bin/env bash
# Builds the selftests' test HCA (drivers/infiniband/sw/ib_loopback, which
# the patch series puts in the tree) out of tree against a kernel build
# directory, from a copy of its sources, and prints the path of each .ko.
#   test-modules.sh <kernel build dir>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kdir=${1:?usage: test-modules.sh <kernel build dir>}
src=$REPO_DIR/drivers/infiniband/sw/ib_loopback
[ -f "$src/Makefile" ] || exit 0
out=$(kbuild_dir "$kdir" test-modules)
lock_dir "$out"
mkdir -p "$out"
rsync -a --checksum --delete --exclude '*.o' --exclude '.*.cmd' --exclude '*.ko' \
	--exclude '*.mod*' --exclude modules.order --exclude Module.symvers \
	"$src/" "$out/"
kbuild "$kdir" "$out" -s modules >&2
ls "$out"/*.ko
