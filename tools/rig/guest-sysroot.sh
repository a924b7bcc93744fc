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
# The apt of the root of Debian's 7.3 flavours (debian-kernel.sh), which
# has arm64 (multiarch), downloads them: the versions are that root's.
# Prints the sysroot's path.
#   guest-sysroot.sh arm64
set -euo pipefail
source "$(dirname "$0")/lib.sh"

arch=${1:-}
[ "$arch" = arm64 ] || die "usage: guest-sysroot.sh arm64"
eval "$(bash "$RIG_DIR/debian-kernel.sh" arm64)"
packages=(busybox-static iproute2 kmod liblzma5 systemd coreutils opensm infiniband-diags
	libc6-dev libgcc-14-dev libibumad-dev)
# The kernel's UAPI headers, every architecture's in one package.
independent=(linux-libc-dev)

out=$RIG_CACHE/sysroot-$arch
lock_dir "$out"
# The root's path names its key, and so the versions its apt resolves.
key=$({ cat "$0"; echo "$root"; } | sha256sum | cut -c1-16)
if [ "$(cat "$out/.rig-key" 2>/dev/null)" = "$key" ]; then
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
	> "$out.log" 2>&1 || { tail -20 "$out.log" >&2; die "apt-get download failed (log: $out.log)"; }
for deb in "$root$debs"/*.deb; do
	dpkg-deb -x "$deb" "$out/root"
done
rm -rf "$root$debs"
echo "$key" > "$out/.rig-key"
echo "$out/root"
