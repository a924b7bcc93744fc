# Shared settings for the rig scripts; sourced, not run.
# Everything built lives under $RIG_CACHE, outside the checkout.

RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$RIG_DIR/../.." && pwd)
RIG_CACHE=${IB_UMAD_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ib_umad_rs}
KERNEL_TARBALL=/usr/src/linux-source-6.12.tar.xz

# The toolchain for every kernel and module build: Debian's rustc (it has
# rust-src), bindgen-cli from cargo, clang/lld.
RUST_BIN=/usr/bin
BINDGEN_BIN=${CARGO_HOME:-$HOME/.cargo}/bin/bindgen
KMAKE=(make LLVM=1 "RUSTC=$RUST_BIN/rustc" "RUSTDOC=$RUST_BIN/rustdoc"
	"CLIPPY_DRIVER=$RUST_BIN/clippy-driver" "BINDGEN=$BINDGEN_BIN")

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

kernel_src_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null ||
		die "linux-source-6.12 is not installed; run tools/rig/setup.sh"
}

# Source tree extracted once per package version, shared by the flavours.
kernel_src_dir() {
	echo "$RIG_CACHE/src/$(kernel_src_version)/linux-source-6.12"
}

# Build directory of a flavour: keyed by everything that changes its output.
kernel_build_dir() {
	local flavour=$1 key
	key=$({
		kernel_src_version
		cat "$RIG_DIR/kernel/base.config"
		[ "$flavour" = plain ] || cat "$RIG_DIR/kernel/$flavour.config"
		cat "$RIG_DIR/kernel.sh"
		"$RUST_BIN/rustc" --version
		"$BINDGEN_BIN" --version
		clang --version | head -1
	} | sha256sum | cut -c1-16)
	echo "$RIG_CACHE/kernel/$flavour-$key"
}
