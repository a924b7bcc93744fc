#!/usr/bin/env bash
# Builds ib_umad_rs.ko against a kernel build directory, from a copy of the
# sources (kbuild writes objects next to the sources of an M= build, and two
# kernel flavours must not share them). Prints the .ko's path.
#   module.sh <kernel build dir> [make arguments, e.g. CLIPPY=1]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kdir=${1:?usage: module.sh <kernel build dir> [make arguments]}
shift
out=$(kbuild_dir "$kdir" module)
mkdir -p "$out"
# --checksum: unchanged sources keep their timestamps, so kbuild rebuilds
# only what changed.
rsync -a --checksum --delete --exclude '*.o' --exclude '.*.cmd' --exclude '*.ko' \
	--exclude '*.mod*' --exclude 'ib_umad_rs_bindings.rs' \
	--exclude modules.order --exclude Module.symvers \
	"$REPO_DIR/Kbuild" "$REPO_DIR/drivers" "$out/"
kbuild "$kdir" "$out" -s "$@" modules >&2
echo "$out/drivers/infiniband/core/umad_rs/ib_umad_rs.ko"
