#!/usr/bin/env bash
# Debian's subnet manager for the guest, unchanged: bookworm's opensm and
# the libraries it links, unpacked into the cache from their packages, not
# installed (the package's postinst would start opensm on this machine);
# and bookworm's ibsim, the fabric simulator umad_fabric.sh attaches an
# HCA to.
# infiniband-diags comes installed (setup.sh). Prints the directory the
# packages are unpacked in: its usr/sbin/opensm and usr/lib/<triplet>.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

packages=(opensm libopensm9 libosmcomp5 libosmvendor5 libwrap0 ibsim-utils)

# Keyed by the packages' versions: a new one unpacks anew.
versions=$(for p in "${packages[@]}"; do
	v=$(apt-cache policy "$p" | sed -n 's/^ *Candidate: //p')
	[ -n "$v" ] && [ "$v" != "(none)" ] || die "apt knows no $p; run apt-get update"
	echo "$p=$v"
done)
dir=$RIG_CACHE/mgmt-stack/$(echo "$versions" | sha256sum | cut -c1-16)
if [ ! -e "$dir/.rig-unpacked" ]; then
	lock_dir "$dir"
	if [ ! -e "$dir/.rig-unpacked" ]; then
		log "unpacking $(echo $versions)"
		rm -rf "$dir" "$dir.debs"
		mkdir -p "$dir.debs"
		# shellcheck disable=SC2046
		(cd "$dir.debs" && apt-get download -qq -o APT::Sandbox::User=root $(echo "$versions")) >&2 ||
			die "could not download $(echo $versions)"
		for deb in "$dir.debs"/*.deb; do
			dpkg-deb -x "$deb" "$dir"
		done
		rm -rf "$dir.debs"
		touch "$dir/.rig-unpacked"
	fi
fi
echo "$dir"
