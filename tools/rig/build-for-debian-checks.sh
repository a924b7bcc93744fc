#!/usr/bin/env bash
# tools/build-for-debian.sh (the users' command, and DKMS's) in the Debian
# build root: what it refuses (each case must fail, and say why in its one
# sentence), and --install and make uninstall (the module in updates/ and
# known to depmod, the modprobe.d file; then neither). Prints a line per
# case, then "N passed, N failed".
set -uo pipefail
source "$(dirname "$0")/lib.sh"

eval "$(bash "$RIG_DIR/debian-kernel.sh" debian)" || die "no Debian root"
krel=$(cat "$kdir/include/config/kernel.release")
src=$root/build/module
lock_dir "$src"
module_sources "$src"
script=${src#"$root"}/tools/build-for-debian.sh
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

expect() { # case, the sentence it must print, command in the root...
	local name=$1 want=$2 out status=0
	shift 2
	out=$(in_build_root "$root" "$@" 2>&1) || status=$?
	if [ $status -ne 0 ] && grep -qF -- "$want" <<<"$out"; then
		check_result "$name" ""
	else
		check_result "$name" "exit status $status: $(tail -n1 <<<"$out")"
	fi
}

# A rustc other than the one the kernel was built with: the rustc it needs
# is named (modules built by another rustc do not resolve against the
# kernel's Rust symbols).
other=$root/tmp/other-rustc
mkdir -p "$other"
printf '#!/bin/sh\necho "rustc 1.99.0 (0000000 2026-01-01)"\n' > "$other/rustc"
chmod +x "$other/rustc"
expect rustc_not_the_kernels \
	"this rustc is rustc 1.99.0 (0000000 2026-01-01): install Debian's rustc and rust-src 1.85.1" \
	env PATH=/tmp/other-rustc:/usr/sbin:/usr/bin:/sbin:/bin "$script" --no-apt "$krel"
rm -rf "$other"
# Missing packages are named: under DKMS (no apt) and for a user.
expect missing_headers_no_apt "missing packages; as root: apt-get install linux-headers-0.0.0-none" \
	"$script" --no-apt 0.0.0-none
expect missing_headers_not_root "missing packages; as root: apt-get install linux-headers-0.0.0-none" \
	"${nobody[@]}" "$script" 0.0.0-none
# Loading takes root, and the kernel that runs; both checked before any
# work.
expect load_needs_root "--load needs root" "${nobody[@]}" "$script" --load "$krel"
expect load_needs_the_running_kernel "--load: $krel is not the running kernel" "$script" --load "$krel"
expect unknown_option "usage: build-for-debian.sh" "$script" --frobnicate

moddir=$root/lib/modules/$krel
installed=updates/drivers/infiniband/core/umad_rs/ib_umad_rs.ko
conf=$root/etc/modprobe.d/ib_umad_rs.conf
out=$(in_build_root "$root" "$script" --install "$krel" -- -s 2>&1) || true
check_result install "$(ls "$moddir/$installed"* > /dev/null 2>&1 || echo "no $installed*: $(tail -n1 <<<"$out")"
	grep -q "^$installed" "$moddir/modules.dep" || echo "depmod does not know it"
	[ -e "$conf" ] || echo "no /etc/modprobe.d/ib_umad_rs.conf")"
out=$(in_build_root "$root" make -s -C "${src#"$root"}" KDIR="${kdir#"$root"}" KERNELRELEASE="$krel" \
	uninstall 2>&1) || true
check_result uninstall "$(! ls "$moddir/$installed"* > /dev/null 2>&1 || echo "$installed* is still there: $out"
	! grep -q "^$installed" "$moddir/modules.dep" || echo "depmod still knows it"
	[ ! -e "$conf" ] || echo "/etc/modprobe.d/ib_umad_rs.conf is still there")"

check_summary
