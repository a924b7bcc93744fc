#!/usr/bin/env bash
# Prepares (or finds in the cache) one of Debian's stock kernels that have
# Rust, for the rig's Debian flavours: a build root of the kernel's suite,
# Debian's image and modules, and in the root, a tree to build modules
# against, prepared by the users' own command, tools/build-for-debian.sh
# (which installs the kernel's toolchain, headers and source). Prints their
# paths as shell assignments: root, kdir (the tree, inside the root),
# vmlinuz, modules, arch (Debian's name of the kernel's architecture).
#   debian-kernel.sh debian   trixie-backports' 7.3 for amd64, in a trixie root
#   debian-kernel.sh sid      sid's 7.2, in a sid root
#   debian-kernel.sh FLAVOUR  one of trixie-backports' other 7.3 flavours
#                             (DEBIAN_FLAVOURS: rt-amd64, cloud-amd64, arm64,
#                             arm64-16k, rt-arm64, cloud-arm64), all six in
#                             one trixie root, the arm64 ones' headers as
#                             foreign packages (multiarch), their trees
#                             cross-built
set -euo pipefail
source "$(dirname "$0")/lib.sh"

usage="usage: debian-kernel.sh <debian|sid|$(IFS='|' && echo "${DEBIAN_FLAVOURS[*]}")>"
flavour=${1:?$usage}
# The root's kernels (the first's tree is prepared first: that installs
# the toolchain), and the one whose paths are printed.
trixie_73=7.3.4+deb13
case $flavour in
debian) krels=("$trixie_73-amd64") suites=(trixie trixie-backports) base=debian-7.3 ;;
sid) krels=(7.2.13+deb14-amd64) suites=(sid) base=debian-7.2 ;;
*)
	[[ " ${DEBIAN_FLAVOURS[*]} " = *" $flavour "* ]] || die "$usage"
	krels=("${DEBIAN_FLAVOURS[@]/#/$trixie_73-}") suites=(trixie trixie-backports)
	base=debian-7.3-flavours
	;;
esac
krel=${krels[0]}
[ "$flavour" = debian ] || [ "$flavour" = sid ] || krel=$trixie_73-$flavour
# Debian's architecture of a release, and its packages as apt names them
# on this (amd64) host.
deb_arch() { # release
	case $1 in
	*-arm64 | *-arm64-*) echo arm64 ;;
	*) echo amd64 ;;
	esac
}
qualified() { # release, packages...
	local suffix=
	[ "$(deb_arch "$1")" = amd64 ] || suffix=:$(deb_arch "$1")
	shift
	printf "%s$suffix\n" "$@"
}
arches=$(for k in "${krels[@]}"; do deb_arch "$k"; done | sort -u)
foreign=$(grep -vx amd64 <<<"$arches" || true)

# A caller that has the answer (test.sh's main lane, for what it calls
# after it resolved a root) passes it on: resolving the suite's versions
# asks the mirror.
answer=RIG_DEBIAN_${flavour//-/_}
if [ -n "${!answer:-}" ]; then
	echo "${!answer}"
	exit 0
fi

series=$(cut -d. -f1,2 <<<"$krel")
base=$RIG_CACHE/$base
# One run at a time resolves, makes or reads a root: apt's private state
# below is written by each, and a root is made once.
lock_dir "$base"
# What build-for-debian.sh installs (the inputs of the tree it prepares,
# which it keys itself; the compiler is the one the kernel's headers
# depend on), the lints' clippy, and what builds, checks and installs the
# ib-umad-rs-dkms package (debian-package.sh).
toolchain=(rustc rust-src bindgen rust-clippy)
packaging=(build-essential debhelper dh-dkms dkms lintian)
kernel_pkgs=("linux-source-$series")
for k in "${krels[@]}"; do
	kernel_pkgs+=($(qualified "$k" "linux-headers-$k"))
done

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
	-o Acquire::Check-Valid-Until=false -o "APT::Architectures=$(paste -sd, <<<"$arches")")
log "resolving ${suites[*]} package versions"
apt-get "${apt[@]}" -qq update >&2 || die "apt-get update of ${suites[*]} failed"
show() { apt-cache "${apt[@]}" show --no-all-versions "$@"; }
# The compiler: the headers depend on gcc-N-for-host.
toolchain+=($(show "linux-headers-${krels[0]}" | sed -n 's/^Depends: //p' |
	grep -o 'gcc-[0-9]*-for-host' | sed 's/-for-host$//' | sort -u))
# linux-image-* is a metapackage: the files are in the linux-*-REL packages
# it depends on (linux-binary: vmlinuz, linux-modules: the .ko.xz,
# linux-base: System.map, config).
image_pkgs=()
for k in "${krels[@]}"; do
	image_pkgs+=($(qualified "$k" "linux-image-$k" $(show "$(qualified "$k" "linux-image-$k")" |
		sed -n 's/^Depends: //p' | grep -o "linux-[a-z]*-$k" | sort -u)))
done
# "package=version", or "package:arm64=version" for a foreign one.
versions=$(show "${toolchain[@]}" "${packaging[@]}" "${kernel_pkgs[@]}" "${image_pkgs[@]}" |
	awk -v RS= -F'\n' '{
		for (i = 1; i <= NF; i++) {
			split($i, f, ": ")
			if (f[1] == "Package") p = f[2]; else if (f[1] == "Version") v = f[2]; else if (f[1] == "Architecture") a = f[2]
		}
		print p (a == "arm64" ? ":arm64" : "") "=" v }')
[ "$(wc -l <<<"$versions")" -eq $((${#toolchain[@]} + ${#packaging[@]} + ${#kernel_pkgs[@]} + ${#image_pkgs[@]})) ] ||
	die "not every package resolved: $versions"
pinned() { local p; for p; do grep "^$p=" <<<"$versions"; done; }

# The root: made by debootstrap of the suite, then what build-for-debian.sh
# installs and prepares; keyed by what makes it.
prepare_tree() { ( # release
	local src=$root/build/module
	lock_dir "$src"
	module_sources "$src"
	in_build_root "$root" "${src#"$root"}/tools/build-for-debian.sh" --print-tree "$1"
); }
make_root() {
	log "debootstrap ${suites[0]} into $root (log in $logf)"
	run debootstrap --variant=minbase "${suites[0]}" "$root" "$mirror"
	printf '%s\n' "$sources" > "$root/etc/apt/sources.list"
	# A mirror that is a snapshot keeps a Release file past its Valid-Until
	# (trixie-backports' and sid's: a week); the versions are pinned anyway.
	echo 'Acquire::Check-Valid-Until "false";' > "$root/etc/apt/apt.conf.d/99rig-snapshot"

	log "build-for-debian.sh installs the toolchain and $series packages in the root, and prepares the tree"
	run prepare_tree "${krels[0]}"
	run in_build_root "$root" apt-get -q install -y --no-install-recommends $(pinned rust-clippy "${packaging[@]}")
	if [ ${#krels[@]} -gt 1 ]; then
		# The other kernels' headers, as their users install them (on
		# amd64, arm64's with multiarch: they bring its cross compiler),
		# and the trees build-for-debian.sh prepares for them.
		for arch in $foreign; do
			run in_build_root "$root" dpkg --add-architecture "$arch"
		done
		run in_build_root "$root" apt-get -q update
		run in_build_root "$root" apt-get -q install -y --no-install-recommends \
			$(pinned $(printf '%s\n' "${kernel_pkgs[@]}" | grep '^linux-headers-'))
		log "preparing the trees of ${krels[*]:1}"
		for k in "${krels[@]:1}"; do
			run prepare_tree "$k"
		done
	fi

	log "downloading and extracting ${image_pkgs[*]}"
	mkdir -p "$root/tmp/image-debs" "$image"
	run in_build_root "$root" sh -c "cd /tmp/image-debs && apt-get -q download $(pinned "${image_pkgs[@]}" | tr '\n' ' ')"
	for deb in "$root"/tmp/image-debs/*.deb; do
		run dpkg-deb -x "$deb" "$image"
	done
	rm -rf "$root/tmp/image-debs"
	for k in "${krels[@]}"; do
		# Debian ships the image there; only its postinst copies it to /boot.
		[ -e "$image/usr/lib/modules/$k/vmlinuz" ] || die "no vmlinuz of $k from ${image_pkgs[*]}"
		[ -n "$(find "$image/usr/lib/modules/$k" -name ib_umad.ko.xz)" ] || die "no ib_umad.ko.xz of $k"
	done
}

key=$({ declare -f make_root prepare_tree; echo "${suites[*]} ${krels[*]}"; echo "$versions"; } |
	sha256sum | cut -c1-16)
out=$base/$key
root=$out/root
image=$out/image
modules=$image/usr/lib/modules/$krel
vmlinuz=$modules/vmlinuz
print_paths() {
	local kdir plog=$out/prepare-$krel.log
	kdir=$root$(prepare_tree "$krel" 2> "$plog") ||
		{ tail -20 "$plog" >&2; die "build-for-debian.sh could not prepare the tree (log: $plog)"; }
	printf 'root=%q\nkdir=%q\nvmlinuz=%q\nmodules=%q\narch=%q\n' "$root" "$kdir" "$vmlinuz" "$modules" \
		"$(deb_arch "$krel")"
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
case ${#krels[@]} in
1) log "making the $flavour root (cold: 8½ minutes and 7½ CPU-minutes, beside the other flavour's, on an idle 2-core machine of the project's kind, 2026-11-28)" ;;
*) log "making the root of ${krels[*]} (cold: 17 minutes beside a guest, six trees prepared, on a 2-core machine of the project's kind, 2026-11-29)" ;;
esac
run() { "$@" >>"$logf" 2>&1 || { tail -40 "$logf" >&2; die "failed: $*"; }; }
make_root
touch "$out/.rig-built"

# Older keys are stale inputs' outputs.
for old in "$base"/*; do
	[ "$old" = "$out" ] || [ "$old" = "$aptdir" ] || rm -rf --one-file-system "$old"
done
print_paths
