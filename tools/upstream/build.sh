#!/usr/bin/env bash
# Builds the kernel with the whole series applied (series.sh's work tree,
# branch "series") in the debian flavour's root, with the kernel's own
# toolchain (Debian's 7.3 is built with gcc-14, rustc 1.85.1 and bindgen
# 0.71.1), with clippy and the kernel's lints, and checks it as
# Documentation/rust/ asks of a Rust patch: make rustfmtcheck, make
# CLIPPY=1 without a warning, make rustdoc. The configuration is the rig's
# test kernel (tools/rig/kernel/base.config) plus kernel.config here.
# Also builds the selftests' test modules against it. Prints "N passed,
# N failed" (build, clippy, test modules, rustfmtcheck, rustdoc).
# The objects stay in the root between runs; an unchanged series is not
# built again.
set -euo pipefail
source "$(dirname "$0")/../rig/lib.sh"

here=$REPO_DIR/tools/upstream
work=$RIG_CACHE/upstream/work
[ -d "$work/.git" ] || die "no series work tree: run tools/upstream/series.sh first"
eval "$(bash "$RIG_DIR/debian-kernel.sh" debian)"

# Inside the root: the work tree, bound in, and the objects.
tree=/build/upstream/linux
outdir=/build/upstream/out
lock_dir "$root$outdir"
mkdir -p "$root$tree" "$root$outdir"
mountpoint -q "$root$tree" || mount --bind "$work" "$root$tree"
trap 'umount "$root$tree"' EXIT

key=$({
	git -C "$work" rev-parse series^{tree}
	cat "$RIG_DIR/kernel/base.config" "$here/kernel.config" "$0"
} | sha256sum | cut -c1-16)
if [ "$(cat "$root$outdir/.rig-key" 2>/dev/null)" = "$key" ]; then
	log "the series kernel of this series was built and checked before"
	cat "$root$outdir/.rig-result"
	grep -q ', 0 failed$' "$root$outdir/.rig-result"
	exit
fi
rm -f "$root$outdir/.rig-key"
git -C "$work" checkout -q -f series

in_root() { in_build_root "$root" "$@"; }
kmake=(make -C "$tree" "O=$outdir")
log "configuring the series kernel"
in_root "${kmake[@]}" -s tinyconfig
cat "$RIG_DIR/kernel/base.config" "$here/kernel.config" > "$root$outdir/rig.config"
in_root "$tree/scripts/kconfig/merge_config.sh" -m -O "$outdir" "$outdir/.config" \
	"$outdir/rig.config" > /dev/null
in_root "${kmake[@]}" -s olddefconfig
bad=$(grep '^CONFIG_' "$root$outdir/rig.config" | while read -r line; do
	grep -qxF "$line" "$root$outdir/.config" || echo "$line"
done)
[ -z "$bad" ] || die "the series kernel's config did not take: $bad"

result() { check_result "series-kernel:$1" "$2"; }
# One build with clippy: clippy-driver compiles and lints at once.
log "building the series kernel with CLIPPY=1 (a cold build takes 10-15 minutes on 2 idle cores; log in $root$outdir/build.log)"
if in_root "${kmake[@]}" -j"$(($(nproc) + 1))" CLIPPY=1 bzImage modules \
	> "$root$outdir/build.log" 2>&1; then
	result builds ""
	# The series' files must draw nothing; the 7.3 kernel's own warnings
	# (a missing SAFETY comment in cpufreq.rs) are reported, not judged.
	changed=$(git -C "$work" diff --name-only "$(git -C "$work" rev-list --max-parents=0 series)" series)
	where=$(sed -n "s|^ *--> $tree/\([^:]*\):.*|\1|p" "$root$outdir/build.log")
	ours=$(grep -cxFf <(echo "$changed") <<<"$where" || true)
	theirs=$(($(grep -c . <<<"$where" || true) - ours))
	((theirs == 0)) || log "clippy: $theirs warnings in the 7.3 kernel's own files (not the series')"
	result clippy "$( ((ours == 0)) || echo "$ours warnings in the series' files (build.log)")"
else
	result builds "$(grep -m1 -E '^error|Error [0-9]' "$root$outdir/build.log")"
	result clippy "not built"
fi
# The selftests' test modules (ib_loopback), built against it for the
# series flavour's boot (tools/rig/vm.sh series).
tm=/build/upstream/test-modules
rm -rf "$root$tm"
cp -r "$work/tools/testing/selftests/drivers/infiniband/umad/test_modules" "$root$tm"
if in_root make -C "$outdir" M="$tm" -s modules > "$root$outdir/test-modules.log" 2>&1; then
	result test-modules ""
else
	result test-modules "$(grep -m1 -E 'error' "$root$outdir/test-modules.log")"
fi
rustfmt_log=$root$outdir/rustfmtcheck.log
if in_root "${kmake[@]}" rustfmtcheck > "$rustfmt_log" 2>&1; then
	result rustfmtcheck ""
else
	result rustfmtcheck "$(grep -c '^Diff in' "$rustfmt_log") files differ ($rustfmt_log)"
fi
rustdoc_log=$root$outdir/rustdoc.log
if in_root "${kmake[@]}" -j"$(($(nproc) + 1))" rustdoc > "$rustdoc_log" 2>&1 &&
	! grep -qE '^(warning|error)' "$rustdoc_log"; then
	result rustdoc ""
else
	result rustdoc "$(grep -m1 -E '^(warning|error)' "$rustdoc_log")"
fi
status=0
check_summary > "$root$outdir/.rig-result" || status=$?
echo "$key" > "$root$outdir/.rig-key"
cat "$root$outdir/.rig-result"
exit $status
