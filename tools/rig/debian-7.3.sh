#!/usr/bin/env bash
# Prepares (or finds in the cache) what building a Rust module for Debian's
# stock 7.3.4 kernel takes: a trixie build root with the kernel's own
# toolchain (GCC 14, rustc 1.85.1), Debian's image and modules, and a 7.3
# tree configured like Debian's with rust/ built. Prints their paths as
# shell assignments: root, kdir (the tree, inside the root), vmlinuz, modules.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

krel=7.3.4+deb13-amd64
base=$RIG_CACHE/debian-7.3
toolchain=(gcc-14 make bc flex bison libelf-dev libssl-dev rustc rust-src rust-clippy bindgen
	libclang-dev clang xz-utils kmod dwarves)
kernel_pkgs=(linux-source-7.3 linux-config-7.3 "linux-headers-$krel")

# The Debian registry is the only network source; use the host's mirror.
mirror=$(sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
	-e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]*\)\?\([^[:space:]]*\).*/\2/p' \
	/etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null |
	grep -v -- '-security$' | head -n1) || true
[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list{,.d/debian.sources}"
sources="deb $mirror trixie main
deb $mirror trixie-backports main"

# Resolve versions with a private apt state, without the host's apt.conf.d
# and pins, so it sees what the chroot's apt will; nothing is installed here.
# Root runs it: _apt cannot reach a cache under a private home.
aptdir=$base/apt
mkdir -p "$aptdir/lists/partial" "$aptdir/cache"
printf '%s\n' "$sources" > "$aptdir/sources.list"
apt=(-o APT::Sandbox::User=root -o Dir::Etc::Parts=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
	-o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::SourceList=$aptdir/sources.list"
	-o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$aptdir/lists"
	-o "Dir::Cache=$aptdir/cache" -o Dir::State::status=/dev/null -o Debug::NoLocking=1
	-o Acquire::Check-Valid-Until=false)
log "resolving trixie package versions"
apt-get "${apt[@]}" -qq update >&2 || die "apt-get update of trixie failed"
# linux-image-* is a metapackage: the files are in the linux-*-$krel packages
# it depends on (linux-binary: vmlinuz, linux-modules: the .ko.xz,
# linux-base: System.map, config).
image_pkgs=("linux-image-$krel" $(apt-cache "${apt[@]}" show --no-all-versions "linux-image-$krel" |
	sed -n 's/^Depends: //p' | grep -o "linux-[a-z]*-$krel" | sort -u))
versions=$(apt-cache "${apt[@]}" show --no-all-versions "${toolchain[@]}" "${kernel_pkgs[@]}" \
	"${image_pkgs[@]}" | awk '/^Package:/ { p = $2 } /^Version:/ { print p "=" $2 }')
[ "$(wc -l <<<"$versions")" -eq $((${#toolchain[@]} + ${#kernel_pkgs[@]} + ${#image_pkgs[@]})) ] ||
	die "not every package resolved: $versions"
pinned() { local p; for p; do grep "^$p=" <<<"$versions"; done; }

key=$({ cat "$0"; echo "$versions"; } | sha256sum | cut -c1-16)
out=$base/$key
root=$out/root
kdir=$root/usr/src/linux-source-7.3
image=$out/image
modules=$image/usr/lib/modules/$krel
# Debian ships the image there; only its postinst copies it to /boot.
vmlinuz=$modules/vmlinuz
print_paths() { printf 'root=%q\nkdir=%q\nvmlinuz=%q\nmodules=%q\n' "$root" "$kdir" "$vmlinuz" "$modules"; }
if [ -e "$out/.rig-built" ]; then
	print_paths
	exit 0
fi

umount_proc() { if mountpoint -q "$root/proc"; then umount "$root/proc"; fi; }
# A killed run may have left /proc mounted: unmount it before removing, and
# never let rm cross into a mount.
umount_proc
rm -rf --one-file-system "$out"
mkdir -p "$out"
logf=$out/build.log
run() { "$@" >>"$logf" 2>&1 || { tail -40 "$logf" >&2; die "failed: $*"; }; }
in_root() {
	run chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive "$@"
}

log "debootstrap trixie into $root (log in $logf)"
run debootstrap --variant=minbase trixie "$root" "$mirror"
printf '%s\n' "$sources" > "$root/etc/apt/sources.list"
# A mirror that is a snapshot keeps a Release file past its Valid-Until
# (trixie-backports': a week); the versions are pinned anyway.
echo 'Acquire::Check-Valid-Until "false";' > "$root/etc/apt/apt.conf.d/99rig-snapshot"
# objtool reads /proc in the chroot.
trap umount_proc EXIT
mount -t proc proc "$root/proc"

log "installing the toolchain and 7.3 packages in the root"
in_root apt-get -q update
in_root apt-get -q install -y $(pinned "${toolchain[@]}" "${kernel_pkgs[@]}")

log "downloading and extracting ${image_pkgs[*]}"
mkdir -p "$root/tmp/image-debs" "$image"
in_root sh -c "cd /tmp/image-debs && apt-get -q download $(pinned "${image_pkgs[@]}" | tr '\n' ' ')"
for deb in "$root"/tmp/image-debs/*.deb; do
	run dpkg-deb -x "$deb" "$image"
done
rm -rf "$root/tmp/image-debs"
[ -e "$vmlinuz" ] || die "no $vmlinuz from ${image_pkgs[*]}"
[ -n "$(find "$modules" -name ib_umad.ko.xz)" ] || die "no ib_umad.ko.xz under $modules"

# Debian's config as is: olddefconfig only adds what Debian's build sets
# (BUILD_SALT, the signing key). KERNELRELEASE makes the vermagic the image's.
log "preparing the 7.3 tree with rust/ in $kdir (about a minute on 2 cores)"
kmake=(make -C /usr/src/linux-source-7.3 CC=x86_64-linux-gnu-gcc-14 "KERNELRELEASE=$krel")
in_root tar -C /usr/src -xf /usr/src/linux-source-7.3.tar.xz
xz -dc "$root/usr/src/linux-config-7.3/config.amd64_none_amd64.xz" > "$kdir/.config"
in_root "${kmake[@]}" olddefconfig
grep -qx CONFIG_RUST=y "$kdir/.config" || die "CONFIG_RUST did not take (see $logf)"
in_root "${kmake[@]}" -j"$(nproc)" modules_prepare
in_root "${kmake[@]}" -j"$(nproc)" rust/
# modpost resolves a module's kernel-crate calls through Debian's exports.
cp "$root/usr/src/linux-headers-$krel/Module.symvers" "$kdir/"

# Those calls are mangled with the crate hash of the kernel crate built here;
# they resolve only if Debian's build hashed it the same.
ours=$(nm "$kdir/rust/kernel.o" | grep -o 'Cs[0-9A-Za-z]*_6kernel' | sort -u)
theirs=$(grep -o 'Cs[0-9A-Za-z]*_6kernel' "$kdir/Module.symvers" | sort -u)
[ "$(wc -l <<<"$ours")" -eq 1 ] && [ "$ours" = "$theirs" ] ||
	die "kernel crate hash differs: built $ours, Debian exports $theirs"
missing=$(comm -13 <(nm --defined-only "$kdir"/rust/*.o | awk '$3 ~ /^_R/ { print $3 }' | sort -u) \
	<(awk '$2 ~ /^_R/ { print $2 }' "$kdir/Module.symvers" | sort -u))
[ -z "$missing" ] || die "Debian exports Rust symbols rust/ does not define: $(head -3 <<<"$missing")"
log "kernel crate hash $ours matches Debian's exports"
touch "$out/.rig-built"

# Older keys are stale inputs' outputs.
for old in "$base"/*; do
	[ "$old" = "$out" ] || [ "$old" = "$aptdir" ] || rm -rf --one-file-system "$old"
done
print_paths
