#!/usr/bin/env bash
# Builds the ib-umad-rs-dkms package from the checkout (the files it ships
# and debian/) in the Debian build root with dpkg-buildpackage, checks it
# with lintian (an error fails, warnings are shown), and installs it there
# with apt after purging the last one: Debian's dkms then builds ib_umad_rs
# for the flavour's kernel, as on a user's machine (in the root of the other
# 7.3 flavours, for all six kernels, arm64's cross-built). Prints the path of
# the module DKMS installed for the flavour's kernel. With the same sources,
# the installed package stands.
#   debian-package.sh <flavour of debian-kernel.sh>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

eval "$(bash "$RIG_DIR/debian-kernel.sh" "${1:?usage: debian-package.sh <flavour of debian-kernel.sh>}")"
krel=$(cat "$kdir/include/config/kernel.release")
shipped=(Kbuild Makefile dkms.conf drivers tools/build-for-debian.sh tools/modprobe.d debian)
version=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$REPO_DIR/debian/changelog")
grep -qx "PACKAGE_VERSION=\"$version\"" "$REPO_DIR/dkms.conf" ||
	die "dkms.conf's PACKAGE_VERSION is not debian/changelog's $version"

pkg=$root/build/pkg
lock_dir "$pkg"
installed() { ls "$root/lib/modules/$krel/updates/dkms/"ib_umad_rs.ko* 2>/dev/null; }
key=$(cd "$REPO_DIR" && git ls-files -co --exclude-standard -- "${shipped[@]}" |
	sort | xargs sha256sum | sha256sum | cut -c1-16)
if [ "$(cat "$pkg/.rig-key" 2>/dev/null)" = "$key" ] && installed > /dev/null; then
	cache_note warm "the $1 package"
	installed
	exit 0
fi

cache_note cold "the $1 package"
rm -rf "$pkg"
mkdir -p "$pkg/ib-umad-rs"
(cd "$REPO_DIR" && git ls-files -co --exclude-standard -- "${shipped[@]}" |
	rsync -a --files-from=- . "$pkg/ib-umad-rs/")
logf=$pkg/build.log
run() { "$@" >> "$logf" 2>&1 || { tail -30 "$logf" >&2; die "failed: $* (log: $logf)"; }; }
log "building ib-umad-rs-dkms $version in the Debian root (log in $logf)"
run in_build_root "$root" sh -c 'cd /build/pkg/ib-umad-rs && dpkg-buildpackage -b -uc -us'
in_build_root "$root" lintian --allow-root --fail-on error --info "/build/pkg/ib-umad-rs_${version}_amd64.changes" >&2 ||
	die "lintian reports errors in ib-umad-rs-dkms"
log "installing it: dkms builds ib_umad_rs for $krel"
if in_build_root "$root" dpkg-query -W ib-umad-rs-dkms > /dev/null 2>&1; then
	run in_build_root "$root" apt-get -q purge -y ib-umad-rs-dkms
fi
run in_build_root "$root" apt-get -q install -y "/build/pkg/ib-umad-rs-dkms_${version}_all.deb"
installed || { tail -30 "$root/var/lib/dkms/ib-umad-rs/$version/build/make.log" >&2 2>/dev/null
	die "dkms installed no ib_umad_rs for $krel (log: $logf)"; }
echo "$key" > "$pkg/.rig-key"
