#!/usr/bin/env bash
# Installing the ib-umad-rs-dkms package never leaves dpkg broken: each case
# runs in a throwaway copy (an overlay) of a Debian flavour's root, with the
# package debian-package.sh built. A kernel the module cannot be built for
# yet is skipped: apt exits 0, the skip names what to install in one
# sentence, and dpkg --audit is empty; then the fix a user would make
# builds the module. Prints a line per case, then "N passed, N failed".
#   debian-install-checks.sh <debian|sid>
#     both: the kernel's linux-source missing (the skip names the suite)
#     sid: installing that source then builds; the ordinary install, where
#       the package's Recommends brings it
#     debian: Debian's rustc of another version, then dkms autoinstall
#       with the kernel's; a kernel without Rust (trixie's own 6.12), then
#       the headers of one with Rust
# The cases that build (a minute or so each) are shared out.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:?usage: debian-install-checks.sh <debian|sid>}
eval "$(bash "$RIG_DIR/debian-kernel.sh" "$flavour")" || die "no Debian root for $flavour"
bash "$RIG_DIR/debian-package.sh" "$flavour" > /dev/null || die "debian-package.sh failed"
krel=$(cat "$kdir/include/config/kernel.release")
series=$(cut -d. -f1,2 <<<"$krel")
# The suite whose apt-get line the skip must name: where the kernel comes from.
case $flavour in
debian) suite=trixie-backports ;;
sid) suite=sid ;;
esac
deb=$(cd "$root" && ls build/pkg/ib-umad-rs-dkms_*_all.deb) || die "no package in $root/build/pkg"
work=$RIG_CACHE/install-checks/$flavour
lock_dir "$work"

# The cases' verdicts hold for the package, the root and these checks:
# under RIG_REUSE_PASSED (test.sh), cases that all passed for the same
# three are not run again.
passed=$work.passed
key=$({ cat "$root/build/pkg/.rig-key"; echo "$root"; cat "$0" "$RIG_DIR/lib.sh" "$RIG_DIR/debian-package.sh"; } |
	sha256sum | cut -c1-16)
if [ -n "${RIG_REUSE_PASSED:-}" ] && [ "$(head -n 1 "$passed" 2>/dev/null)" = "$key" ]; then
	cache_note warm "the $flavour install checks: they passed for this package, root and checks"
	tail -n +2 "$passed"
	echo "$(($(wc -l < "$passed") - 1)) passed, 0 failed"
	exit 0
fi
[ -z "${RIG_REUSE_PASSED:-}" ] || cache_note cold "the $flavour install checks"
rm -f "$passed"

result() { check_result "$flavour:$1" "$2"; }

# A fresh overlay over the root for each case; nothing reaches the root.
case_root=$work/merged
open_case() {
	close_case
	mkdir -p "$work"/{upper,work,merged}
	mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/work" "$case_root"
}
close_case() {
	local try
	# What dpkg started in the case may take a moment to let go of it.
	for try in 1 2 3 4 5 6 7 8 9 10; do
		mountpoint -q "$case_root" || break
		umount "$case_root" 2> /dev/null || sleep 1
	done
	! mountpoint -q "$case_root" || die "$case_root stays busy"
	rm -rf --one-file-system "$work"/{upper,work}
}
trap close_case EXIT

# Runs a command in the case's root; its output goes to $out.
out=$work/out
in_case() { in_build_root "$case_root" "$@" > "$out" 2>&1; }
built() { ls "$case_root/lib/modules/$1/updates/dkms/"ib_umad_rs.ko* > /dev/null 2>&1; }
# What every case checks after each step: apt's status, the sentence, the
# module's absence or presence, and dpkg --audit.
check() { # case, apt status, sentence or "", kernel, built|not-built
	local why=
	[ "$2" -eq 0 ] || why="exit status $2: $(tail -n1 "$out")"
	[ -z "$3" ] || grep -qF -- "$3" "$out" || why+="${why:+; }no '$3' in the output"
	case $5 in
	built) built "$4" || why+="${why:+; }no module for $4" ;;
	not-built) ! built "$4" || why+="${why:+; }a module for $4" ;;
	esac
	audit=$(in_build_root "$case_root" dpkg --audit 2>&1)
	[ -z "$audit" ] || why+="${why:+; }dpkg --audit: $(head -n1 <<<"$audit")"
	result "$1" "$why"
}
purge_package() { in_build_root "$case_root" apt-get -q purge -y ib-umad-rs-dkms > /dev/null 2>&1 || true; }

# The kernel's source is missing: the build is skipped with the apt-get
# line for the kernel's suite; installing that source builds the module
# (the package's trigger on /usr/src).
open_case
purge_package
in_build_root "$case_root" dpkg --purge "linux-source-$series" > /dev/null 2>&1
status=0
in_case apt-get -q install -y --no-install-recommends "/$deb" || status=$?
check no_source_skips "$status" "apt-get install linux-source-$series/$suite" "$krel" not-built

if [ "$flavour" = sid ]; then
	status=0
	in_case apt-get -q install -y "linux-source-$series" || status=$?
	check no_source_then_installing_it_builds "$status" "" "$krel" built

	# The ordinary install on a system without the source: the package's
	# Recommends brings the kernel's linux-source, and the module is built.
	open_case
	purge_package
	in_build_root "$case_root" dpkg --purge "linux-source-$series" > /dev/null 2>&1
	status=0
	in_case apt-get -q install -y "/$deb" || status=$?
	check recommends_bring_the_source "$status" "" "$krel" built
fi

if [ "$flavour" = debian ]; then
	# Debian's rustc of another version, trixie-backports' (the kernel was
	# built with trixie's): skipped, naming the kernel's rustc; with that
	# one back, dkms autoinstall builds.
	open_case
	purge_package
	want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="rustc \([^ ]*\) .*/\1/p' "$kdir/.config")
	status=0
	in_case apt-get -q install -y --no-install-recommends rustc/trixie-backports \
		rust-src/trixie-backports || status=$?
	if [ $status -ne 0 ]; then
		result other_rustc_skips "trixie-backports' rustc did not install: $(tail -n1 "$out")"
	else
		in_case apt-get -q install -y "/$deb" || status=$?
		check other_rustc_skips "$status" "install Debian's rustc and rust-src $want" "$krel" not-built
		status=0
		in_case apt-get -q install -y --allow-downgrades rustc/trixie rust-src/trixie || status=$?
		[ $status -ne 0 ] || in_case dkms autoinstall -k "$krel" || status=$?
		check other_rustc_then_autoinstall_builds "$status" "" "$krel" built
	fi

	# A kernel without Rust (trixie's own, whose headers come from trixie;
	# 7.3's headers go, so that nothing is built): skipped, saying so and
	# which kernels have Rust.
	open_case
	purge_package
	in_build_root "$case_root" dpkg --purge "linux-headers-$krel" > /dev/null 2>&1
	status=0
	in_case apt-get -q install -y --no-install-recommends linux-headers-amd64/trixie || status=$?
	norust=$(cd "$case_root/lib/modules" && ls -d */build 2>/dev/null | sed 's|/build$||' |
		grep -vx "$krel" | head -n1)
	if [ $status -ne 0 ] || [ -z "$norust" ]; then
		result no_rust_kernel_skips "trixie's linux-headers-amd64 did not install: $(tail -n1 "$out")"
	else
		status=0
		in_case apt-get -q install -y "/$deb" || status=$?
		check no_rust_kernel_skips "$status" "kernel $norust is not built with Rust (CONFIG_RUST)" \
			"$norust" not-built
		# The fix: a kernel with Rust; its headers' dkms hook builds.
		status=0
		in_case apt-get -q install -y --no-install-recommends "linux-headers-$krel" || status=$?
		check no_rust_kernel_then_one_with_rust_builds "$status" "" "$krel" built
	fi
fi
close_case

check_summary || exit
printf '%s\n%s' "$key" "$checks_lines" > "$passed.new" && mv "$passed.new" "$passed"
