#!/usr/bin/env bash
# Builds (or finds in the cache) a test kernel from Debian's linux-source-6.12
# and prints its build directory.
#   kernel.sh plain|debug|race|lean
# lean: base.config alone, one CPU and no 32-bit programs, the 6.12 kernel
# CI builds, lints against and boots (tools/rig/test.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:?usage: kernel.sh plain|debug|race|lean}
case $flavour in plain|debug|race|lean) ;; *) die "unknown flavour $flavour" ;; esac

src=$(kernel_src_dir)
out=$(kernel_build_dir "$flavour")
if [ -e "$out/.rig-built" ]; then
	echo "$out"
	exit 0
fi

if [ ! -e "$src/.rig-extracted" ]; then
	log "extracting $KERNEL_TARBALL"
	rm -rf "$(dirname "$src")"
	mkdir -p "$(dirname "$src")"
	tar -C "$(dirname "$src")" -xf "$KERNEL_TARBALL"
	touch "$src/.rig-extracted"
fi

mapfile -t fragments < <(kernel_fragments "$flavour")

log "configuring $flavour kernel in $out"
rm -rf "$out"
mkdir -p "$out"
kmake=("${KMAKE[@]}" -C "$src" "O=$out")
"${kmake[@]}" -s tinyconfig
"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${fragments[@]}" >/dev/null
"${kmake[@]}" -s olddefconfig

# Kconfig drops what it cannot satisfy (CONFIG_RUST without a usable
# toolchain, say) without a word; refuse such a kernel.
bad=$(cat "${fragments[@]}" | while read -r line; do
	case $line in
	CONFIG_*=*) grep -qxF "$line" "$out/.config" || echo "$line" ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		! grep -q "^$opt=" "$out/.config" || echo "$line" ;;
	esac
done)
[ -z "$bad" ] || die "kernel config did not take: $bad"

# Cold builds on an idle 2-core machine of the project's kind: lean 15
# minutes (28 CPU-minutes) and plain 18 (31), 2026-11-28; debug 21 and
# race 20, 2026-11-27, beside other steps.
case $flavour in
lean) took="15 minutes" ;;
plain) took="18 minutes" ;;
*) took="about 20 minutes" ;;
esac
log "building $flavour kernel (cold: $took on 2 idle cores of the project's kind; log in $out/build.log)"
if ! "${kmake[@]}" -s -j"$(($(nproc) + 1))" bzImage modules > "$out/build.log" 2>&1; then
	tail -50 "$out/build.log" >&2
	die "the $flavour kernel did not build"
fi
touch "$out/.rig-built"

# Older builds of this flavour are stale inputs' outputs.
for old in "$(dirname "$out")/$flavour"-*; do
	[ "$old" = "$out" ] || rm -rf "$old"
done
echo "$out"
