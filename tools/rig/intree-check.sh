#!/usr/bin/env bash
# Drops ib_umad_rs into a copy of the kernel tree the way the top-level
# Kconfig describes (CONFIG_INFINIBAND_USER_MAD_RUST=m) and builds it there.
# A full kernel build (~6 min), so not part of test.sh; run it when the
# build files change.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

src=$(kernel_src_dir)
[ -e "$src/.rig-extracted" ] || bash "$RIG_DIR/kernel.sh" plain >/dev/null
work=$RIG_CACHE/intree
rm -rf "$work"
mkdir -p "$work"
tree=$work/linux
out=$work/build
# Hard links: cheap, and every file changed below is replaced, not edited.
cp -al "$src" "$tree"

core=drivers/infiniband/core
# The module's directory as it is, and the two lines the top-level Kconfig
# describes.
cp -r "$REPO_DIR/$core/umad_rs" "$tree/$core/"
cp --remove-destination "$src/$core/Makefile" "$tree/$core/Makefile"
echo 'obj-$(CONFIG_INFINIBAND_USER_MAD_RUST) += umad_rs/' >> "$tree/$core/Makefile"
cp --remove-destination "$src/drivers/infiniband/Kconfig" "$tree/drivers/infiniband/Kconfig"
sed -i '/^config INFINIBAND_USER_ACCESS$/i source "drivers/infiniband/core/umad_rs/Kconfig"\n' \
	"$tree/drivers/infiniband/Kconfig"

mkdir -p "$out"
kmake=("${KMAKE[@]}" -C "$tree" "O=$out")
"${kmake[@]}" -s tinyconfig
"$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
	"$RIG_DIR/kernel/base.config" <(printf 'CONFIG_INFINIBAND_USER_MAD_RUST=m\n') >/dev/null
"${kmake[@]}" -s olddefconfig
grep -qx CONFIG_INFINIBAND_USER_MAD_RUST=m "$out/.config" ||
	die "CONFIG_INFINIBAND_USER_MAD_RUST did not take"
log "building the kernel with ib_umad_rs in the tree (log in $out/build.log)"
"${kmake[@]}" -s -j"$(($(nproc) + 1))" bzImage modules > "$out/build.log" 2>&1 ||
	{ tail -50 "$out/build.log" >&2; die "the in-tree build failed"; }
modinfo "$out/$core/umad_rs/ib_umad_rs.ko"
