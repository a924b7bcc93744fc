#!/usr/bin/env bash
# The main job: installs what is missing, prepares Debian's own 7.3 kernel
# (image, modules, and a tree to build against: debian-kernel.sh), builds
# ib_umad_rs for it as users get it (the ib-umad-rs-dkms package, which
# Debian's dkms builds), boots that kernel in the VM, loads the module next to
# two soft-RoCE devices and shows unchanged libibumad exchanging a MAD
# through it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

bash "$RIG_DIR/setup.sh"
status=0
log=$(bash "$RIG_DIR/vm.sh" debian demo) || status=$?
# The guest's own words, without the kernel's boot chatter.
sed -n -e 's/^@@rig //p;t' -e '/^rxe[0-9]*:\|^umad_ping/p' "$log"
[ $status -eq 0 ] || die "the demo failed; the whole serial log is $log"
