#!/usr/bin/env bash
# Prepares (or finds in the cache) one of Debian's stock kernels that have
# Rust, for the rig's Debian flavours: a build root of the kernel's suite,
# Debian's image and modules, and in the root, a tree to build modules
# against, prepared by the users' own command, tools/build-for-debian.sh
# (which installs the kernel's toolchain, headers and source). Prints their
# paths as shell assignments: root, kdir (the tree, inside the root),
# vmlinuz, modules.
#   debian-kernel.sh debian   trixie-backports' 7.3, in a trixie root
#   debian-kernel.sh sid      sid's 7.2, in a sid root
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:?usage: debian-kernel.sh <debian|sid>}
case $flavour in
debian) krel=7.3.4+deb13-amd64 suites=(trixie trixie-backports) ;;
sid) krel=7.2.13+deb14-amd64 suites=(sid) ;;
*) die "debian-kernel.sh: no Debian kernel for flavour '$flavour' (debian or sid)" ;;
esac

# Within one run of test.sh, the first answer stands (resolving the suite's
# versions asks the mirror).
answer=RIG_DEBIAN_$flavour
if [ -n "${!answer:-}" ]; then
	echo "${!answer}"
	exit 0
fi

series=$(cut -d. -f1,2 <<<"$krel")
base=$RIG_CACHE/debian-$series
# What build-for-debian.sh installs (the inputs of the tree it prepares,
# which it keys itself; the compiler is the one the kernel's headers
# depend on), the lints' clippy, and what builds, checks and installs the
# ib-umad-rs-dkms package (debian-package.sh).
toolchain=(rustc rust-src bindgen rust-clippy)
packaging=(build-essential debhelper dh-dkms dkms lintian)
kernel_pkgs=("linux-source-$series" "linux-headers-$krel")

# The Debian registry is the only network source; use the host's mirror.
mirror=$(sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
	-e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]*\)\?\([^[:space:]]*\).*/\2/p' \
	/etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null |
	grep -v -- '-security$' | head -n1) || true
[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list{,.d/debian.sources}"
sources=$(printf "deb $mirror %s main\n" "${suites[@]}")

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
log "resolving ${suites[*]} package versions"
apt-get "${apt[@]}" -qq update >&2 || die "apt-get update of ${suites[*]} failed"
show() { apt-cache "${apt[@]}" show --no-all-versions "$@"; }
# The compiler: the headers depend on gcc-N-for-host.
toolchain+=($(show "linux-headers-$krel" | sed -n 's/^Depends: //p' |
	grep -o 'gcc-[0-9]*-for-host' | sed 's/-for-host$//' | sort -u))
# linux-image-* is a metapackage: the files are in the linux-*-$krel packages
# it depends on (linux-binary: vmlinuz, linux-modules: the .ko.xz,
# linux-base: System.map, config).
image_pkgs=("linux-image-$krel" $(show "linux-image-$krel" |
	sed -n 's/^Depends: //p' | grep -o "linux-[a-z]*-$krel" | sort -u))
versions=$(show "${toolchain[@]}" "${packaging[@]}" "${kernel_pkgs[@]}" "${image_pkgs[@]}" |
	awk '/^Package:/ { p = $2 } /^Version:/ { print p "=" $2 }')
[ "$(wc -l <<<"$versions")" -eq $((${#toolchain[@]} + ${#packaging[@]} + ${#kernel_pkgs[@]} + ${#image_pkgs[@]})) ] ||
	die "not every package resolved: $versions"
pinned() { local p; for p; do grep "^$p=" <<<"$versions"; done; }

# The root: made by debootstrap of the suite, then what build-for-debian.sh
# installs and prepares; keyed by what makes it.
prepare_tree() { (
	local src=$root/build/module
	lock_dir "$src"
	module_sources "$src"
	in_build_root "$root" "${src#"$root"}/tools/build-for-debian.sh" --print-tree "$krel"
); }
make_root() {
	log "debootstrap ${suites[0]} into $root (log in $logf)"
	run debootstrap --variant=minbase "${suites[0]}" "$root" "$mirror"
	printf '%s\n' "$sources" > "$root/etc/apt/sources.list"
	# A mirror that is a snapshot keeps a Release file past its Valid-Until
	# (trixie-backports' and sid's: a week); the versions are pinned anyway.
	echo 'Acquire::Check-Valid-Until "false";' > "$root/etc/apt/apt.conf.d/99rig-snapshot"

	log "build-for-debian.sh installs the toolchain and $series packages in the root, and prepares the tree"
	run prepare_tree
	run in_build_root "$root" apt-get -q install -y --no-install-recommends $(pinned rust-clippy "${packaging[@]}")

	log "downloading and extracting ${image_pkgs[*]}"
	mkdir -p "$root/tmp/image-debs" "$image"
	run in_build_root "$root" sh -c "cd /tmp/image-debs && apt-get -q download $(pinned "${image_pkgs[@]}" | tr '\n' ' ')"
	for deb in "$root"/tmp/image-debs/*.deb; do
		run dpkg-deb -x "$deb" "$image"
	done
	rm -rf "$root/tmp/image-debs"
	[ -e "$vmlinuz" ] || die "no $vmlinuz from ${image_pkgs[*]}"
	[ -n "$(find "$modules" -name ib_umad.ko.xz)" ] || die "no ib_umad.ko.xz under $modules"
}

key=$({ declare -f make_root prepare_tree; echo "${suites[*]} $krel"; echo "$versions"; } |
	sha256sum | cut -c1-16)
out=$base/$key
root=$out/root
image=$out/image
modules=$image/usr/lib/modules/$krel
# Debian ships the image there; only its postinst copies it to /boot.
vmlinuz=$modules/vmlinuz
print_paths() {
	local kdir plog=$out/prepare.log
	kdir=$root$(prepare_tree 2> "$plog") ||
		{ tail -20 "$plog" >&2; die "build-for-debian.sh could not prepare the tree (log: $plog)"; }
	printf 'root=%q\nkdir=%q\nvmlinuz=%q\nmodules=%q\n' "$root" "$kdir" "$vmlinuz" "$modules"
}
if [ -e "$out/.rig-built" ]; then
	cache_note warm "the $flavour root"
	print_paths
	exit 0
fi

# Never let rm cross into a mount.
rm -rf --one-file-system "$out"
mkdir -p "$out"
logf=$out/build.log
cache_note cold "the $flavour root"
log "making the $flavour root (cold: 8½ minutes and 7½ CPU-minutes, beside the other flavour's, on an idle 2-core machine of the project's kind, 2026-11-28)"
run() { "$@" >>"$logf" 2>&1 || { tail -40 "$logf" >&2; die "failed: $*"; }; }
make_root
touch "$out/.rig-built"

# Older keys are stale inputs' outputs.
for old in "$base"/*; do
	[ "$old" = "$out" ] || [ "$old" = "$aptdir" ] || rm -rf --one-file-system "$old"
done
print_paths
