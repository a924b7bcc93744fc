#!/usr/bin/env bash
# Series (a) alone, as a user of a stable kernel would take it: the
# rdma-rc patches (series.sh's build/upstream/series/rdma-rc) applied with
# patch(1) to Debian's own 7.3 source, the tree debian-kernel.sh prepared
# with Debian's configuration, and the IB core's modules
# (drivers/infiniband/core: ib_core, ib_uverbs, ib_umad and the rest)
# built there with Debian's compiler, for Debian's image to load in place
# of its own (tools/rig/vm.sh rdma-rc). Nothing else of the series comes
# in: no crate patch, no test HCA, no ib_umad_rs. The patches touch no
# type an exported symbol takes, so the image's other modules (rdma_rxe)
# load against these. Prints the directory of the .ko files.
set -euo pipefail
source "$(dirname "$0")/../rig/lib.sh"

patches=$REPO_DIR/build/upstream/series/rdma-rc
[ -d "$patches" ] || die "no $patches: run tools/upstream/series.sh first"
eval "$(bash "$RIG_DIR/debian-kernel.sh" debian)"

# In the root, beside the prepared tree (kbuild runs there): the tree
# with the patches, an overlay on it, so that the 2 GB tree is not copied
# and stays as it is.
dir=$root/var/cache/ib_umad_rs/rdma-rc
out=$RIG_CACHE/upstream/rdma-rc
lock_dir "$out"
key=$({ cat "$0"; echo "$kdir"; ls "$patches"/0*.patch | grep -v cover-letter | xargs cat; } |
	sha256sum | cut -c1-16)
if [ "$(cat "$out/.rig-key" 2>/dev/null)" = "$key" ]; then
	cache_note warm "the rdma-rc series' IB core"
	echo "$out"
	exit 0
fi
cache_note cold "the rdma-rc series' IB core"
log "building drivers/infiniband/core of Debian's 7.3 with the rdma-rc series alone"
merged=$dir/merged
! mountpoint -q "$merged" || umount "$merged"
rm -rf "$dir" "$out"
mkdir -p "$dir"/{upper,work,merged} "$out"
mount -t overlay overlay -o "lowerdir=$kdir,upperdir=$dir/upper,workdir=$dir/work" "$merged"
trap 'umount "$merged"' EXIT
for patch in "$patches"/0*.patch; do
	[ "${patch%-cover-letter.patch}" = "$patch" ] || continue
	patch -s -p1 -d "$merged" < "$patch" || die "$(basename "$patch") does not apply to Debian's 7.3"
done
jobs=-j$(($(nproc) + 1))
kbuild "$merged" "$merged/drivers/infiniband/core" -s "$jobs" modules >&2
# Without their debugging information, as modules_install with
# INSTALL_MOD_STRIP=1 installs them (and Debian ships its own).
for ko in "$merged"/drivers/infiniband/core/*.ko; do
	strip --strip-debug -o "$out/$(basename "$ko")" "$ko"
done
echo "$key" > "$out/.rig-key"
echo "$out"
