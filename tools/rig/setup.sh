#!/usr/bin/env bash
# Installs everything the build, the VM and the tests need on a Debian 12
# machine. Idempotent: a second run finds everything present and does nothing.
set -euo pipefail

# Debian packages, by what needs them.
packages=(
	# kernel + Rust build (Debian's rustc ships rust-src where the kernel looks)
	linux-source-6.12 rustc-web rust-web-src rustfmt-web rust-web-clippy
	clang llvm lld libclang-dev flex bison bc libelf-dev libssl-dev
	make xz-utils cpio kmod rsync
	# guest userspace and the VMs (arm64's userspace is trixie's, unpacked:
	# guest-sysroot.sh; its programs are built with clang and lld above)
	busybox-static qemu-system-x86 qemu-system-arm iproute2 rdma-core
	# selftests: static libibumad (found by pkg-config), 32-bit compat build
	libibumad-dev pkgconf gcc gcc-multilib infiniband-diags
	# Debian's 7.3 and 7.2 kernels: trixie and sid build roots (debian-kernel.sh)
	debootstrap
	# the benchmark's charts (bench-report.py)
	python3-matplotlib
	# the patch series' checks: checkpatch.pl's SPDX check (spdxcheck.py)
	python3-ply python3-git
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's bindgen is too old for 6.12 (needs >= 0.65.1).
BINDGEN_VERSION=0.69.5
bindgen_bin="${CARGO_HOME:-$HOME/.cargo}/bin/bindgen"
if ! "$bindgen_bin" --version 2>/dev/null | grep -qx "bindgen $BINDGEN_VERSION"; then
	echo "setup: installing bindgen-cli $BINDGEN_VERSION"
	cargo install --quiet --locked bindgen-cli --version "$BINDGEN_VERSION"
fi
