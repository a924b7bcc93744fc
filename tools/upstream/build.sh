#!/usr/bin/env bash
# Builds the kernel at every patch of the series (series.sh's work tree,
# branch "series"), in order, in the debian flavour's root with the
# kernel's own toolchain (Debian's 7.3 is built with gcc-14, rustc 1.85.1
# and bindgen 0.71.1), and checks each as Documentation/rust/ asks of a
# Rust patch: it builds with CLIPPY=1 and the kernel's lints without a
# warning in the files it touches, make rustfmtcheck is clean, and, where
# it touches rust/, make rustdoc is clean. The whole series' kernel, built
# again without CLIPPY=1, is what the series flavour boots (tools/rig/vm.sh
# series), its test HCA among its modules, with the module of each of the
# driver's steps but the last beside it (driver-steps/N-NAME.ko). The configuration is the rig's test kernel
# (tools/rig/kernel/base.config and suite.config) plus kernel.config here.
# One line per patch, then "N passed, N failed".
# The objects stay in the root, one build directory for every patch: each
# patch's build is incremental on the one before, and a patch whose tree
# (with everything before it) was checked before is not built again.
#
# --whole: the same checks once, on the whole series (every file the
# series touches), as CI runs them: each rust/kernel patch costs a crate
# and rustdoc rebuild of ~2 minutes here, which per patch would not fit
# a cold CI run. Bisectability is the default mode's.
set -euo pipefail
source "$(dirname "$0")/../rig/lib.sh"
mode=per-patch
case ${1:-} in
--whole) mode=whole ;;
"") ;;
*) die "usage: build.sh [--whole]" ;;
esac

here=$REPO_DIR/tools/upstream
work=$RIG_CACHE/upstream/work
[ -d "$work/.git" ] || die "no series work tree: run tools/upstream/series.sh first"
lock_dir "$work"
eval "$(bash "$RIG_DIR/debian-kernel.sh" debian)"

# Inside the root: the work tree, bound in, and the objects.
tree=/build/upstream/linux
outdir=/build/upstream/out
mkdir -p "$root$tree" "$root$outdir/.rig-patch"
mountpoint -q "$root$tree" || mount --bind "$work" "$root$tree"
trap 'umount "$root$tree"' EXIT
in_root() { in_build_root "$root" "$@"; }
kmake=(make -C "$tree" "O=$outdir")
jobs=-j$(($(nproc) + 1))

base=$(git -C "$work" rev-list --max-parents=0 series)
fragments=("$RIG_DIR/kernel/base.config" "$RIG_DIR/kernel/suite.config" "$here/kernel.config")
config_key=$(cat "${fragments[@]}" | sha256sum | cut -c1-16)
# A patch's result holds for its tree and these checks.
checks_key=$(sha256sum "$0" | cut -c1-16)
if [ "$(cat "$root$outdir/.rig-config" 2>/dev/null)" != "$config_key" ]; then
	log "configuring the series kernel"
	rm -rf "${root:?}$outdir"
	mkdir -p "$root$outdir/.rig-patch"
	git -C "$work" checkout -q -f series
	in_root "${kmake[@]}" -s tinyconfig
	cat "${fragments[@]}" > "$root$outdir/rig.config"
	echo "$config_key" > "$root$outdir/.rig-config"
fi
# The fragment again at each patch: an option its Kconfig does not have
# yet is dropped from .config by the build, and must come back with the
# patch that adds it (INFINIBAND_USER_MAD_RUST, with the driver's patch).
merge_config() {
	in_root "$tree/scripts/kconfig/merge_config.sh" -m -O "$outdir" "$outdir/.config" \
		"$outdir/rig.config" > /dev/null 2>&1 &&
		in_root "${kmake[@]}" -s olddefconfig
}

# One patch, or the commits from a base to one: the build (incremental),
# clippy on the files they change, rustfmtcheck, rustdoc where they touch
# rust/. Prints what failed, or nothing.
check_patch() { # commit [from]
	local commit=$1 from=${2:-$1^} logs=$root$outdir/logs why= changed where ours theirs
	mkdir -p "$logs"
	git -C "$work" checkout -q -f "$commit"
	changed=$(git -C "$work" diff --name-only "$from" "$commit")
	merge_config
	if ! in_root "${kmake[@]}" "$jobs" CLIPPY=1 bzImage modules > "$logs/build.log" 2>&1; then
		echo "does not build: $(grep -m1 -E '^error|Error [0-9]' "$logs/build.log")"
		return
	fi
	# The 7.3 kernel's own warnings (a missing SAFETY comment in
	# cpufreq.rs) are not the patch's.
	where=$(sed -n "s|^ *--> $tree/\\([^:]*\\):.*|\\1|p" "$logs/build.log")
	ours=$(grep -cxFf <(echo "$changed") <<<"$where" || true)
	theirs=$(($(grep -c . <<<"$where" || true) - ours))
	((theirs == 0)) || log "clippy: $theirs warnings rebuilt in the 7.3 kernel's own files"
	((ours == 0)) || why+="${why:+; }clippy: $ours warnings in its files"
	in_root "${kmake[@]}" rustfmtcheck > "$logs/rustfmtcheck.log" 2>&1 ||
		why+="${why:+; }rustfmtcheck: $(grep -c '^Diff in' "$logs/rustfmtcheck.log") files"
	if grep -q '^rust/' <<<"$changed"; then
		if ! in_root "${kmake[@]}" "$jobs" rustdoc > "$logs/rustdoc.log" 2>&1 ||
			grep -qE '^(warning|error)' "$logs/rustdoc.log"; then
			why+="${why:+; }rustdoc: $(grep -m1 -E '^(warning|error)' "$logs/rustdoc.log")"
		fi
	fi
	echo "$why"
}

# A result holds for its tree (with everything before it) and the checks.
checked() { # name commit [from]
	local done_file
	done_file=$root$outdir/.rig-patch/$(git -C "$work" rev-parse "$2^{tree}")-${3:+whole-}$checks_key
	if [ -e "$done_file" ]; then
		cache_note warm "series-kernel:$1"
	else
		cache_note cold "series-kernel:$1"
		rm -f "$root$outdir/.rig-boot"
		check_patch "$2" "${3:-}" > "$done_file.new"
		mv "$done_file.new" "$done_file"
	fi
	check_result "series-kernel:$1" "$(cat "$done_file")"
}

# One step of the driver (a patch that the driver's later steps follow):
# its directory built with CLIPPY=1 (objects only, on the tree that the
# whole series' build left) without a warning, and rustfmt content with
# it. Prints what failed, or nothing.
check_driver_step() { # commit
	local logs=$root$outdir/logs/$(git -C "$work" log -1 --format=%f "$1") why= ours
	mkdir -p "$logs"
	git -C "$work" checkout -q -f "$1"
	merge_config
	if ! in_root "${kmake[@]}" "$jobs" CLIPPY=1 drivers/infiniband/core/umad_rs/ \
		> "$logs/build.log" 2>&1; then
		echo "does not build: $(grep -m1 -E '^error|Error [0-9]' "$logs/build.log")"
		return
	fi
	# Its own reports: rustc's and clippy's ("--> file"), and the C
	# compiler's ("file:line:col: warning:"), in the driver's files; the
	# kernel crate rebuilt meanwhile has the 7.3 kernel's own.
	ours=$(grep -cE "^ *--> $tree/drivers/infiniband/core/umad_rs/|umad_rs/[^:]*:[0-9]+:[0-9]+: (warning|error)" \
		"$logs/build.log" || true)
	((ours == 0)) || why="clippy: $ours reports in its files"
	# shellcheck disable=SC2046 # the driver's files, one word each
	in_root rustfmt --check --edition 2021 --config-path "$tree/.rustfmt.toml" \
		$(cd "$work" && find drivers/infiniband/core/umad_rs -name '*.rs' -printf "$tree/%p\n") \
		> "$logs/rustfmt.log" 2>&1 ||
		why+="${why:+; }rustfmt: $(grep -c '^Diff in' "$logs/rustfmt.log") files"
	echo "$why"
}

# The driver's steps but its last (which the whole series has).
steps=$(git -C "$work" rev-list --reverse "$base..series" -- drivers/infiniband/core/umad_rs | head -n -1)
if [ "$mode" = whole ]; then
	log "building the kernel with the whole series with CLIPPY=1 (cold: 34 CPU-minutes, 32 minutes beside the lean 6.12 kernel's build, on an idle 2-core machine of the project's kind, 2026-11-28; after a change, what it changes)"
	checked "whole-series-$(git -C "$work" rev-list --count "$base..series")-patches" series "$base"
	# The driver's steps but its last (which the whole series has), each
	# as it builds alone.
	for commit in $steps; do
		name=driver-step:$(git -C "$work" log -1 --format=%f "$commit")
		done_file=$root$outdir/.rig-patch/$(git -C "$work" rev-parse "$commit^{tree}")-step-$checks_key
		if [ -e "$done_file" ]; then
			cache_note warm "series-kernel:$name"
		else
			cache_note cold "series-kernel:$name"
			rm -f "$root$outdir/.rig-boot"
			check_driver_step "$commit" > "$done_file.new"
			mv "$done_file.new" "$done_file"
		fi
		check_result "series-kernel:$name" "$(cat "$done_file")"
	done
else
	log "building the kernel at each patch with CLIPPY=1 (cold, the first takes 10-15 minutes on 2 idle cores; each next one rebuilds what it changes)"
	for commit in $(git -C "$work" rev-list --reverse "$base..series"); do
		checked "$(git -C "$work" log -1 --format=%f "$commit")" "$commit"
	done
fi
# The kernel the series flavour boots, built as a kernel is: without
# CLIPPY=1, as clippy-driver's code differs (a module of one build
# does not link against the other's kernel crate). Then each step's
# module, for the series flavour, which runs the tests of what each has
# by then: built in the same tree at the step's commit, whose kernel
# crate differs from the booted one's only in the bindings of the
# driver's header (declarations, which no exported symbol takes), and
# linked against the booted kernel's symbols. Named as the series file
# names the steps, and kept for this series' kernel.
boot_kernel() {
	git -C "$work" checkout -q -f series && merge_config &&
		in_root "${kmake[@]}" "$jobs" bzImage modules > "$root$outdir/logs/boot.log" 2>&1
}
# The booted kernel is rebuilt only after a build with CLIPPY=1: series.sh
# writes the work tree anew each run, and make would relink it (a new
# build number, so a new image, and every boot of it again).
series_tree=$(git -C "$work" rev-parse "series^{tree}")
if [ "$(cat "$root$outdir/.rig-boot" 2>/dev/null)" != "$series_tree" ]; then
	rm -f "$root$outdir/.rig-boot"
	boot_kernel || check_result series-kernel:boot "does not build without CLIPPY=1"
fi
names=$(awk '$1 == "gen" && $2 == "driver" { print $3 }' "$here/series")
[ "$(wc -w <<<"$steps")" = "$(($(wc -l <<<"$names") - 1))" ] ||
	die "the series file names $(wc -l <<<"$names") driver steps, the series has $(($(wc -w <<<"$steps") + 1))"
rm -rf "$root$outdir/driver-steps"
mkdir -p "$root$outdir/driver-steps"
built= n=0
for commit in $steps; do
	n=$((n + 1))
	step=$(sed -n "${n}p" <<<"$names")
	ko=$root$outdir/.rig-patch/$(git -C "$work" rev-parse "$commit^{tree}")-module-$series_tree-$checks_key.ko
	if [ ! -e "$ko" ]; then
		git -C "$work" checkout -q -f "$commit"
		merge_config
		if in_root "${kmake[@]}" "$jobs" drivers/infiniband/core/umad_rs/ib_umad_rs.ko \
			> "$root$outdir/logs/step-$step.log" 2>&1; then
			cp "$root$outdir/drivers/infiniband/core/umad_rs/ib_umad_rs.ko" "$ko.new" &&
				mv "$ko.new" "$ko"
		else
			check_result "series-kernel:driver-step-module:$step" "does not build without CLIPPY=1"
		fi
		built=1
	fi
	[ ! -e "$ko" ] || cp "$ko" "$root$outdir/driver-steps/$n-$step.ko"
done
# What the steps' modules built, built again as the whole series has it.
[ -z "$built" ] || boot_kernel ||
	check_result series-kernel:after-driver-steps "does not build again after the driver's steps"
[ "${checks_failed:-0}" -ne 0 ] || echo "$series_tree" > "$root$outdir/.rig-boot"
git -C "$work" checkout -q -f series

# The whole series has every option of the fragment, and both drivers.
bad=$(grep '^CONFIG_' "$root$outdir/rig.config" | while read -r line; do
	grep -qxF "$line" "$root$outdir/.config" || echo "$line"
done)
missing=
for ko in drivers/infiniband/core/ib_umad.ko drivers/infiniband/core/umad_rs/ib_umad_rs.ko \
	drivers/infiniband/sw/ib_loopback/ib_loopback.ko; do
	[ -e "$root$outdir/$ko" ] || missing+=" $ko"
done
check_result series-kernel:config "${bad:+options that did not take: $bad}${missing:+; not built:$missing}"
# What the series flavour boots: this series' kernel, once it built whole
# (a failed build leaves the last good kernel, which is not this series').
if [ "${checks_failed:-0}" -eq 0 ]; then
	git -C "$work" rev-parse "series^{tree}" > "$root$outdir/.rig-series"
else
	rm -f "$root$outdir/.rig-series"
fi
check_summary
