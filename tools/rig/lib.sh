# Shared settings for the rig scripts; sourced, not run.
# Everything built lives under $RIG_CACHE, outside the checkout.

RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$RIG_DIR/../.." && pwd)
RIG_CACHE=${IB_UMAD_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ib_umad_rs}
KERNEL_TARBALL=/usr/src/linux-source-6.12.tar.xz
# trixie-backports' 7.3 flavours besides amd64 (debian-kernel.sh's debian):
# all have Rust and the C ib_umad as a module.
DEBIAN_FLAVOURS=(rt-amd64 cloud-amd64 arm64 arm64-16k rt-arm64 cloud-arm64)

# The toolchain for every kernel and module build: Debian's rustc (it has
# rust-src), bindgen-cli from cargo, clang/lld.
RUST_BIN=/usr/bin
BINDGEN_BIN=${CARGO_HOME:-$HOME/.cargo}/bin/bindgen
KMAKE=(make LLVM=1 "RUSTC=$RUST_BIN/rustc" "RUSTDOC=$RUST_BIN/rustdoc"
	"CLIPPY_DRIVER=$RUST_BIN/clippy-driver" "BINDGEN=$BINDGEN_BIN")

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# Says whether something a step needs was in the cache (warm) or had to be
# made (cold): test.sh's table of steps shows it.
cache_note() { # warm|cold, what
	log "cache: $1: $2"
}

kernel_src_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null ||
		die "linux-source-6.12 is not installed; run tools/rig/setup.sh"
}

# Source tree extracted once per package version, shared by the flavours.
kernel_src_dir() {
	echo "$RIG_CACHE/src/$(kernel_src_version)/linux-source-6.12"
}

# A tree in which the umad selftests build and install the kernel's way
# (lib.mk, and make TARGETS=rdma install in the selftests directory): the
# kselftest framework of a kernel source's tools/testing/selftests and
# the repository's rdma/, made in a directory; prints the rdma directory,
# for make -C.
selftests_tree() { # kernel-selftests-dir directory
	local ksft=$1 dest=$2/tools/testing/selftests
	mkdir -p "$dest/x86" "$dest/rdma" "$2/scripts"
	cp "$ksft/Makefile" "$ksft/run_kselftest.sh" "$ksft/lib.mk" "$ksft/kselftest.h" \
		"$ksft/kselftest_harness.h" "$dest/"
	cp "$ksft/../../../scripts/subarch.include" "$2/scripts/"
	rsync -a --delete "$ksft/kselftest/" "$dest/kselftest/"
	cp "$ksft/x86/check_cc.sh" "$ksft/x86/trivial_32bit_program.c" "$dest/x86/"
	rsync -a --checksum "$REPO_DIR/tools/testing/selftests/rdma/" "$dest/rdma/"
	# umad_ibsim_wire's header, where the kernel keeps it, beside its module.
	mkdir -p "$2/drivers/infiniband/sw/ib_loopback"
	cp "$REPO_DIR/drivers/infiniband/sw/ib_loopback/ib_loopback_wire.h" \
		"$2/drivers/infiniband/sw/ib_loopback/"
	echo "$dest/rdma"
}

# The configuration fragments of a flavour of kernel.sh, one a line.
kernel_fragments() {
	echo "$RIG_DIR/kernel/base.config"
	[ "$1" = lean ] || echo "$RIG_DIR/kernel/suite.config"
	case $1 in debug | race) echo "$RIG_DIR/kernel/$1.config" ;; esac
}

# Build directory of a flavour: keyed by everything that changes its output.
kernel_build_dir() {
	local flavour=$1 key
	key=$({
		kernel_src_version
		kernel_fragments "$flavour" | xargs -d "\n" cat
		cat "$RIG_DIR/kernel.sh"
		"$RUST_BIN/rustc" --version
		"$BINDGEN_BIN" --version
		clang --version | head -1
	} | sha256sum | cut -c1-16)
	echo "$RIG_CACHE/kernel/$flavour-$key"
}

# The build root a kernel tree sits in, for a tree tools/build-for-debian.sh
# prepared in one (ROOT/var/cache/ib_umad_rs/prepared/RELEASE), or nothing
# for the rig's own.
kernel_root() { # kernel tree
	[ ! -e "$1/.ib_umad_rs-prepared" ] || echo "${1%%/var/cache/ib_umad_rs/*}"
}

# Where out-of-tree code ("module", "test-modules") is built against a
# tree: in the cache, or inside the tree's build root.
kbuild_dir() { # kernel tree, what
	local root
	root=$(kernel_root "$1")
	if [ -n "$root" ]; then
		# A root may have several trees (the other 7.3 flavours').
		echo "$root/build/$2-$(basename "$1")"
	else
		echo "$RIG_CACHE/$2/$(basename "$1")"
	fi
}

# Runs a command in a build root, as root with a clean environment. objtool
# and dpkg read /proc: the command gets its own, in a mount namespace of its
# own, so calls that run at once in one root (the lints beside the rdma-rc
# build) never unmount each other's, and none outlives its command.
in_build_root() { # root, command...
	local root=$1
	shift
	unshare --mount --propagation private -- sh -c 'mount -t proc proc "$1/proc" && exec chroot "$@"' \
		in_build_root "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive "$@"
}

# kbuild for the out-of-tree directory m (from kbuild_dir) against a tree:
# with KMAKE for the rig's trees; in the build root for a distribution's,
# with the compiler its config names and its release as KERNELRELEASE, so
# the vermagic is the image's (as tools/build-for-debian.sh builds the
# module), cross-building for an arm64 tree as it does. The
# distribution's BTF is not in the tree: no module BTF.
kbuild() { # kernel tree, m, make arguments...
	local kdir=$1 m=$2 root cc cross=()
	shift 2
	root=$(kernel_root "$kdir")
	if [ -z "$root" ]; then
		"${KMAKE[@]}" -C "$kdir" M="$m" "$@"
		return
	fi
	cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' "$kdir/.config")
	! grep -qx CONFIG_ARM64=y "$kdir/.config" || [ "$(uname -m)" = aarch64 ] ||
		cross=(ARCH=arm64 CROSS_COMPILE="${cc%gcc-*}")
	in_build_root "$root" make "${cross[@]}" CC="$cc" KERNELRELEASE="$(cat "$kdir/include/config/kernel.release")" \
		CONFIG_DEBUG_INFO_BTF_MODULES= -C "${kdir#"$root"}" M="${m#"$root"}" "$@"
}

# Holds an exclusive lock on dir until the calling script exits: two runs
# of the rig on one machine (a checkout and a CI clone) share the cache, and
# must not build in the same directory at once.
lock_dir() { # dir
	local fd
	mkdir -p "$(dirname "$1")"
	exec {fd}> "$1.lock"
	flock "$fd"
}

# Copies what building ib_umad_rs takes (and nothing it built) to dir; kbuild
# writes objects next to the sources of an M= build, and two kernels must
# not share them. --checksum: unchanged sources keep their timestamps, so
# kbuild rebuilds only what changed.
module_sources() { # dir
	mkdir -p "$1"
	(cd "$REPO_DIR" && rsync -a -R --checksum --delete --exclude '*.o' --exclude '.*.cmd' \
		--exclude '*.ko' --exclude '*.mod*' --exclude 'ib_umad_rs_bindings.rs' \
		--exclude 'ib_umad_rs_helpers.rs' --exclude modules.order --exclude Module.symvers \
		Kbuild Makefile drivers tools/build-for-debian.sh tools/modprobe.d "$1/")
}

# The rig's scripts of checks print a line per case, then "N passed, N
# failed" (check_summary, whose status is 1 if any failed).
checks_passed=0 checks_failed=0 checks_lines=
check_result() { # case, what failed or nothing
	local line
	if [ -z "$2" ]; then
		line="ok $1"
		checks_passed=$((checks_passed + 1))
	else
		line="not ok $1: $2"
		checks_failed=$((checks_failed + 1))
	fi
	echo "$line"
	checks_lines+=$line$'\n'
}
check_summary() {
	echo "$checks_passed passed, $checks_failed failed"
	[ "$checks_failed" -eq 0 ]
}

# The file of a module in a distribution's module directories (the first
# found; a "_" of its name may be a "-" in the file's).
find_module() { # name, directories...
	local name=$1
	shift
	find "$@" -name "$name.ko*" -o -name "${name//_/-}.ko*" | head -n1
}

# The tree debian-kernel.sh prepares for a Debian flavour (preparing it if
# need be).
debian_tree() { # flavour
	(eval "$(bash "$RIG_DIR/debian-kernel.sh" "$1")" && echo "$kdir")
}

# Keeps the log of a boot that passed where vm.sh looks for it (the path
# in $log.kept), with the time it ran, in place of any older one of that
# flavour, mode and command line. Runs sharing the cache take turns.
keep_passed_boot() { # log
	(
		kept=$(cat "$1.kept") && lock_dir "$(dirname "$kept")" &&
			mkdir -p "$(dirname "$kept")" &&
			cp -p "$1" "$kept.new" && mv "$kept.new" "$kept" &&
			find "$(dirname "$kept")" -name "$(basename "${kept%-*}")-*.log" \
				! -name "$(basename "$kept")" -delete
	) || log "the boot's log ($1) was not kept: the next run boots again"
}
