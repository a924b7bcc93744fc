#!/usr/bin/env bash
# The userspace of the arm64 guests, and what their programs are
# cross-built against: trixie's arm64 packages of what the guest runs
# (busybox, iproute2's ip and rdma, kmod and the decompressor its library
# opens for Debian's .ko.xz, systemd-modules-load, coreutils' timeout,
# opensm, infiniband-diags) and of what the static test programs are
# built with (libc6-dev, libgcc-14-dev, libibumad-dev, linux-libc-dev),
# with every arm64 package they depend on, unpacked into one directory: a
# sysroot, for clang --sysroot and for vm.sh to stage programs and their
# libraries from.
# ROOT is the root of Debian's 7.3 flavours (debian-kernel.sh arm64),
# which has arm64 (multiarch): its apt downloads them, from the lists it
# was made with. Prints the sysroot's path.
#   guest-sysroot.sh ROOT
set -euo pipefail
source "$(dirname "$0")/lib.sh"

root=${1:?usage: guest-sysroot.sh <root of debian-kernel.sh arm64>}
arch=arm64
packages=(busybox-static iproute2 kmod liblzma5 systemd coreutils opensm infiniband-diags
	libc6-dev libgcc-14-dev libibumad-dev)
# The kernel's UAPI headers, every architecture's in one package.
independent=(linux-libc-dev)

base=$RIG_CACHE/sysroot-$arch
lock_dir "$base"
# The root's path names its key, and so the lists its apt was made with.
key=$({ cat "$0"; echo "$root"; } | sha256sum | cut -c1-16)
out=$base/$key
if [ -e "$out/.rig-built" ]; then
	cache_note warm "the $arch sysroot"
	echo "$out/root"
	exit 0
fi
cache_note cold "the $arch sysroot"
log "downloading trixie's $arch ${packages[*]} and what they depend on, into $out/root"
# Every package of the architecture the closure reaches (the
# architecture-independent ones carry no program or library).
closure=$(in_build_root "$root" apt-cache depends --recurse --no-recommends --no-suggests \
	--no-conflicts --no-breaks --no-replaces --no-enhances "${packages[@]/%/:$arch}" |
	grep -x "[^ <]*:$arch" | sort -u)
debs=/tmp/sysroot-$arch
rm -rf "$root$debs" "$out"
mkdir -p "$root$debs" "$out/root"
in_build_root "$root" sh -c "cd $debs && apt-get -q -o APT::Sandbox::User=root download $(echo $closure) ${independent[*]}" \
	> "$out/download.log" 2>&1 ||
	{ tail -20 "$out/download.log" >&2; die "apt-get download failed (log: $out/download.log)"; }
for deb in "$root$debs"/*.deb; do
	dpkg-deb -x "$deb" "$out/root"
done
rm -rf "$root$debs"
touch "$out/.rig-built"
# Older keys are stale inputs' outputs.
for old in "$base"/*; do
	[ "$old" = "$out" ] || rm -rf "$old"
done
echo "$out/root"
