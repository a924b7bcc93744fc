#!/usr/bin/env bash
# Builds ib_umad_rs for an installed Debian kernel that has Rust (Debian's
# kernels from 7.2 on: trixie-backports' and sid's, for amd64 and arm64;
# one of the other architecture, its headers installed with multiarch, is
# cross-built); with --install, installs it (make install: updates/,
# depmod, and the modprobe.d file that makes it the umad driver); with
# --load, loads it in place of the C ib_umad. Prints the built module's
# path.
#
#   tools/build-for-debian.sh [--install] [--load] [--no-apt] [KERNELRELEASE] [-- make arguments]
#   tools/build-for-debian.sh --print-tree [--no-apt] [KERNELRELEASE]
#   tools/build-for-debian.sh --check KERNELRELEASE
#
# KERNELRELEASE defaults to the running kernel's. As root, what is missing is
# installed with apt (never with --no-apt, as under DKMS, which runs inside
# dpkg); otherwise the missing packages are named, with the suite the
# kernel's packages come from. --check installs and builds nothing: it exits
# 0 if the kernel can be built for, and otherwise says why in one sentence
# (dkms.conf skips such a kernel instead of failing dpkg).
#
# Debian's headers package has no Rust artifacts (no rust/*.rmeta, no
# libmacros), so a Rust module cannot be built against it alone. Once per
# kernel (and again when an input changes), this prepares a tree from
# linux-source-X.Y with the headers' own .config, the compiler and rustc the
# kernel was built with, and the headers' Module.symvers, and checks that the
# kernel crate built there resolves against the kernel's exports. The tree
# lives in /var/cache/ib_umad_rs (as root) or ~/.cache/ib_umad_rs;
# --print-tree prepares it and prints its path.
set -euo pipefail

me=${0##*/}
say() { echo "$me: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {
	die "usage: $me [--install] [--load] [--print-tree] [--check] [--no-apt] [KERNELRELEASE] [-- make arguments]"
}

install= load= print_tree= check= no_apt= krel= apt_updated=
while [ $# -gt 0 ]; do
	case $1 in
	--install) install=1 ;;
	--load) load=1 ;;
	--print-tree) print_tree=1 ;;
	--check) check=1 no_apt=1 ;;
	--no-apt) no_apt=1 ;;
	--) shift; break ;;
	-*) usage ;;
	*) [ -z "$krel" ] || usage; krel=$1 ;;
	esac
	shift
done
krel=${krel:-$(uname -r)}
# What a check says is why the module is not built for the kernel.
[ -z "$check" ] || me="ib_umad_rs is not built for $krel"
src=$(cd "$(dirname "$0")/.." && pwd)
headers=/usr/src/linux-headers-$krel
root_user=$([ "$(id -u)" -eq 0 ] && echo 1 || true)

if [ -n "$load" ]; then
	[ -n "$root_user" ] || die "--load needs root"
	[ "$krel" = "$(uname -r)" ] || die "--load: $krel is not the running kernel"
fi

installed() { # package
	[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]
}
# A source package is a tarball, there once it is unpacked: apt may unpack
# the kernel's source beside this package and configure it after it.
present() { # package
	case $1 in
	linux-source-*) dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^.[UFWti]' ;;
	*) installed "$1" ;;
	esac
}
# The suite the kernel comes from, as apt's sources publish the installed
# image's (or headers') version: trixie-backports, sid, ... Empty where no
# source publishes it.
kernel_suite() {
	local p
	for p in "linux-image-$krel" "linux-headers-$krel"; do
		installed "$p" || continue
		LC_ALL=C apt-cache policy "$p" 2>/dev/null | awk '
			/^ \*\*\* / { mine = 1; next }
			mine && $1 !~ /^[0-9]+$/ { exit }
			mine && $2 ~ /:\/\// { split($3, s, "/"); print s[1]; exit }'
		return
	done
}
suite=$(kernel_suite)
# The kernel's own packages come from its suite: "package/suite", which
# apt-get install takes as "that package from that suite".
from_suite() { # packages...
	local p
	for p; do
		case $p in
		linux-source-* | linux-headers-*) echo "$p${suite:+/$suite}" ;;
		*) echo "$p" ;;
		esac
	done
}
# Installs what is missing as root, or names it.
need() { # packages...
	local p missing=()
	for p; do present "$p" || missing+=("$p"); done
	[ ${#missing[@]} -gt 0 ] || return 0
	[ -n "$root_user" ] && [ -z "$no_apt" ] ||
		die "missing packages; as root: apt-get install $(from_suite "${missing[@]}" | paste -sd ' ')"
	say "installing ${missing[*]}"
	if [ -z "$apt_updated" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get -q update >&2
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends \
		$(from_suite "${missing[@]}") >&2 ||
		die "apt-get could not install ${missing[*]}: is ${suite:-its suite} in apt's sources?"
}
config() { # CONFIG_ name: its value, unquoted
	sed -n "s/^$1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$headers/.config"
}

need "linux-headers-$krel"
[ "$(config CONFIG_RUST)" = y ] ||
	die "kernel $krel is not built with Rust (CONFIG_RUST); Debian's kernels have it from 7.2 on (linux-image-amd64 from trixie-backports or sid)"
# The compiler the kernel names: x86_64-linux-gnu-gcc-14, in gcc-14.
cc=$(config CONFIG_CC_VERSION_TEXT | cut -d' ' -f1)
cc_package=${cc##*-linux-gnu-}
# A kernel of another architecture (its headers installed as a foreign
# package: linux-headers-REL:arm64 on amd64) is built for with the cross
# compiler those headers depend on (gcc-14-for-host:arm64 pulls in
# gcc-14-aarch64-linux-gnu), as kbuild cross-builds: ARCH and
# CROSS_COMPILE. Only the kernel's own architectures are known here.
if [ "$(config CONFIG_ARM64)" = y ]; then
	karch=arm64 machine=aarch64
elif [ "$(config CONFIG_X86_64)" = y ]; then
	karch=x86 machine=x86_64
else
	die "kernel $krel is of an architecture ib_umad_rs is not built for (amd64 and arm64 are)"
fi
cross=() cross_prefix=
if [ "$(uname -m)" != "$machine" ]; then
	cross_prefix=${cc%gcc-*}
	cross=(ARCH="$karch" CROSS_COMPILE="$cross_prefix")
	# Package names have no "_": gcc-14-x86-64-linux-gnu.
	triplet=${cross_prefix%-}
	cc_package=$cc_package-${triplet//_/-}
	# The modprobe.d file would go to this machine, whose kernel is not
	# the one the module is for.
	[ -z "$install" ] ||
		die "--install: $krel is a kernel for $machine, and this machine is $(uname -m): install the module on one that runs it"
fi
series=$(cut -d. -f1,2 <<<"$krel")
need "linux-source-$series" "$cc_package" rustc rust-src bindgen make bc flex bison \
	libelf-dev libssl-dev xz-utils kmod dwarves python3 rustfmt

version=$(dpkg-query -W -f='${Version}' "linux-headers-$krel")
source_version=$(dpkg-query -W -f='${Version}' "linux-source-$series")
[ "$source_version" = "$version" ] ||
	die "linux-source-$series is $source_version, but kernel $krel is $version: as root: apt-get install linux-source-$series=$version"
# Rust symbols carry a hash of the compiler that built the crate: only the
# kernel's own rustc makes calls that resolve.
rustc_wanted=$(config CONFIG_RUSTC_VERSION_TEXT)
rustc_have=$(rustc --version)
[ "$rustc_have" = "$rustc_wanted" ] ||
	die "kernel $krel was built with $rustc_wanted, and this rustc is $rustc_have: install Debian's rustc and rust-src $(cut -d' ' -f2 <<<"$rustc_wanted")"
[ -z "$check" ] || exit 0

cache=${IB_UMAD_RS_CACHE:-$([ -n "$root_user" ] && echo /var/cache/ib_umad_rs ||
	echo "${XDG_CACHE_HOME:-$HOME/.cache}/ib_umad_rs")}
tree=$cache/prepared/$krel
kmake=(make -C "$tree" "${cross[@]}" CC="$cc" KERNELRELEASE="$krel")
stamp=$tree/.ib_umad_rs-prepared
prepare() {
	say "preparing $tree for $krel (a few minutes, once)"
	rm -rf --one-file-system "$tree"
	mkdir -p "$tree"
	tar -C "$tree" --strip-components=1 -xf "/usr/src/linux-source-$series.tar.xz"
	cp "$headers/.config" "$tree/.config"
	"${kmake[@]}" -s olddefconfig >&2
	grep -qx CONFIG_RUST=y "$tree/.config" ||
		die "the Rust toolchain was not usable for $krel: see make -C $tree rustavailable"
	"${kmake[@]}" -s -j"$(nproc)" modules_prepare >&2
	"${kmake[@]}" -s -j"$(nproc)" rust/ >&2
	# modpost resolves the module's kernel-crate calls through the kernel's
	# own exports.
	cp "$headers/Module.symvers" "$tree/"
	ours=$("${cross_prefix}nm" "$tree/rust/kernel.o" | grep -o 'Cs[0-9A-Za-z]*_6kernel' | sort -u)
	theirs=$(grep -o 'Cs[0-9A-Za-z]*_6kernel' "$tree/Module.symvers" | sort -u)
	[ "$(wc -l <<<"$ours")" -eq 1 ] && [ "$ours" = "$theirs" ] ||
		die "the kernel crate built here hashes as $ours, $krel exports $theirs"
	missing=$(comm -13 <("${cross_prefix}nm" --defined-only "$tree"/rust/*.o | awk '$3 ~ /^_R/ { print $3 }' | sort -u) \
		<(awk '$2 ~ /^_R/ { print $2 }' "$tree/Module.symvers" | sort -u))
	[ -z "$missing" ] || die "$krel exports Rust symbols the tree does not define: $(head -3 <<<"$missing")"
}
# One preparer of a tree at a time, and none while a module builds
# against it: DKMS (from a dpkg trigger) and a build by hand may run at
# once. Preparing takes the lock alone; building shares it.
mkdir -p "$cache/prepared"
exec {tree_lock}> "$tree.lock"
flock "$tree_lock"
# A tree is prepared again when what made it changes.
inputs=$(printf '%s\n' "$version" "$rustc_have" "$(bindgen --version)" "$("$cc" --version | head -1)" \
	"$(declare -f prepare | sha256sum)")
if [ "$(cat "$stamp" 2>/dev/null)" != "$inputs" ]; then
	prepare
	echo "$inputs" > "$stamp"
fi
flock -s "$tree_lock"
# kbuild's depmod (make install) reads the kernel's System.map.
if [ -e "/boot/System.map-$krel" ]; then
	cp -u "/boot/System.map-$krel" "$tree/System.map"
fi
if [ -n "$print_tree" ]; then
	echo "$tree"
	exit 0
fi

# The kernel's BTF is not in the tree, so no module BTF is made. Nor is the
# kernel's signing key: modules_install would fail to sign (DKMS signs with
# its own key).
kvars=(KDIR="$tree" "${cross[@]}" CC="$cc" KERNELRELEASE="$krel" CONFIG_DEBUG_INFO_BTF_MODULES=)
[ -e "$tree/$(config CONFIG_MODULE_SIG_KEY)" ] || kvars+=(CONFIG_MODULE_SIG_ALL=)
make -C "$src" "${kvars[@]}" "$@" $([ -n "$install" ] && echo install || echo all) >&2
ko=$src/drivers/infiniband/core/umad_rs/ib_umad_rs.ko
if [ -n "$load" ]; then
	# Both drivers want major 231 and the umad client: only one can be loaded.
	if [ -e /sys/module/ib_umad ]; then
		modprobe -r ib_umad || die "the C ib_umad is in use: stop what holds it (opensm, ...) first"
	fi
	modprobe ib_core
	if [ -e /sys/module/ib_umad_rs ]; then
		rmmod ib_umad_rs
	fi
	insmod "$ko"
	say "loaded $ko"
fi
echo "$ko"
