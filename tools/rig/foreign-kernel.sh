#!/usr/bin/env bash
# Builds ib_umad_rs against a 6.12 kernel this project did not configure:
# x86_64_defconfig plus the kernel's own rust.config, the IB core as modules,
# compiled with GCC (so the module's bindgen takes the GCC flag-filtering
# path). Slow (a defconfig build, ~30 min on 2 cores), so not part of
# test.sh; run it when the build files change.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

src=$(kernel_src_dir)
[ -e "$src/.rig-extracted" ] || bash "$RIG_DIR/kernel.sh" plain >/dev/null
out=$RIG_CACHE/kernel/foreign-gcc
kmake=(make CC=gcc "RUSTC=$RUST_BIN/rustc" "BINDGEN=$BINDGEN_BIN" -C "$src" "O=$out")
# An interrupted build goes on where it stopped: make is incremental, and
# the configuration is made once (.rig-configured).
if [ ! -e "$out/.rig-configured" ]; then
	rm -rf "$out"
	mkdir -p "$out"
	"${kmake[@]}" -s x86_64_defconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
		"$src/kernel/configs/rust.config" <(printf 'CONFIG_INFINIBAND=m\n') >/dev/null
	"${kmake[@]}" -s olddefconfig
	grep -qx CONFIG_RUST=y "$out/.config" || die "CONFIG_RUST did not take"
	grep -qx CONFIG_INFINIBAND=m "$out/.config" || die "CONFIG_INFINIBAND did not take"
	touch "$out/.rig-configured"
fi
if [ ! -e "$out/.rig-built" ]; then
	log "building x86_64_defconfig + rust.config with GCC in $out"
	"${kmake[@]}" -s -j"$(($(nproc) + 1))"
	touch "$out/.rig-built"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$REPO_DIR"/{Kbuild,Makefile,drivers} "$work/"
make -C "$work" KDIR="$out" CC=gcc "RUSTC=$RUST_BIN/rustc" "BINDGEN=$BINDGEN_BIN"
modinfo "$work/drivers/infiniband/core/umad_rs/ib_umad_rs.ko"
