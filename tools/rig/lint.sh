#!/usr/bin/env bash
# Style and lint checks, each as the kernel has them; exits non-zero on the
# first that fails, saying which:
#  - rustfmt with the kernel's .rustfmt.toml, on the module and host crate;
#  - the driver's logic does not use generated bindings (only the glue does);
#  - clippy on the module with the kernel's lint set and the cast lints of
#    its Kbuild, against each kernel tree given (each has its own kernel
#    crate and lints), and on the host crate, warnings as errors;
#  - a Retired agent dropped without the port's guard fails the build
#    against the first tree, and so does an agent looked up by a user's id
#    that skipped SlotId;
#  - every mutant of mutants.sh still applies;
#  - the selftests (64- and 32-bit; the first tree's kselftest framework),
#    samples and the guest's helper with warnings as errors.
# A tree is a rig kernel's build directory (kernel.sh) or a Debian
# kernel's prepared tree (debian-kernel.sh), which is a whole source.
#   lint.sh <kernel tree> [other kernel trees to build clippy against]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kdir=${1:?usage: lint.sh <kernel tree> [other kernel trees]}
module=$REPO_DIR/drivers/infiniband/core/umad_rs
# The first tree's source: a Debian tree is its own, a rig kernel's build
# directory has the rig's 6.12 source.
src=$kdir
[ -e "$src/tools/testing/selftests/lib.mk" ] || src=$(kernel_src_dir)

log "rustfmt --check (the kernel's .rustfmt.toml)"
"$RUST_BIN/rustfmt" --check --config-path "$src/.rustfmt.toml" \
	"$module/ib_umad_rs_main.rs" "$REPO_DIR/tools/host-tests/lib.rs" ||
	die "rustfmt: run tools/rig/lint.sh's rustfmt without --check to fix"

log "the driver's logic does not use the generated bindings"
logic=("$module"/*.rs "$module"/file/*.rs)
if grep -n 'bindings::' "${logic[@]}"; then
	die "logic files above reach the bindings; go through glue/ or infiniband/"
fi

log "clippy on the module (each kernel's lint set) and the host crate, warnings as errors"
for tree in "$@"; do
	bash "$RIG_DIR/module.sh" "$tree" CLIPPY=1 KRUSTFLAGS=-Dwarnings > /dev/null
done
mapfile -t cast_lints < <(sed -n '/^rustflags-y/,/[^\\]$/p' "$module/Kbuild" | grep -o -- '-Wclippy::[a-z_]*')
(cd "$REPO_DIR" && cargo clippy --quiet --all-targets -- -D warnings "${cast_lints[@]}")

misuse=$(kbuild_dir "$kdir" lint-misuse)
lock_dir "$misuse"
# Builds the module with one line of file.rs replaced, and fails unless the
# build fails with the expected error: a rule that only a type enforces.
must_not_build() { # what, the line, its misuse, the compiler's error
	local file=$misuse/drivers/infiniband/core/umad_rs/file.rs
	log "$1 does not build"
	rsync -a --delete --exclude '*.o' --exclude '.*.cmd' "$REPO_DIR/Kbuild" "$REPO_DIR/drivers" "$misuse/"
	grep -qF "$2" "$file" || die "the misuse no longer applies to file.rs: update lint.sh"
	MISUSE_FROM=$2 MISUSE_TO=$3 perl -pi -e 's/\Q$ENV{MISUSE_FROM}\E/$ENV{MISUSE_TO}/' "$file"
	if kbuild "$kdir" "$misuse" -s modules > "$misuse.log" 2>&1; then
		die "$1 built"
	fi
	grep -qF "$4" "$misuse.log" || { cat "$misuse.log" >&2; die "the misuse failed for another reason"; }
}
must_not_build "dropping retired agents without the port's lock" \
	'Retired::new(agents, state).unregister(port);' 'let _ = (Retired::new(agents, state), port);' \
	"retired agents must be unregistered with the port's lock held"
must_not_build "looking an agent up by a user's id without the hardening" \
	'state.agents.get(id)' 'state.agents.get(hdr.id)' 'expected `SlotId`, found `u32`'

log "every mutant (mutants.sh, run by hand) still applies to the tree"
for mutant in "$RIG_DIR"/mutants/*.patch; do
	(cd "$REPO_DIR" && git apply --check "$mutant") ||
		die "$(basename "$mutant") no longer applies: make it again against the tree"
done

log "selftests (64- and 32-bit), samples and the guest's helper, warnings as errors"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tree=$(selftests_tree "$src/tools/testing/selftests" "$out/tree")
make -s -C "$tree" V=1 OUTPUT="$out" UMAD_LIBIBUMAD=y USERCFLAGS=-Werror USERLDFLAGS=-static
for sample in "$REPO_DIR"/samples/umad/*.c; do
	gcc -O2 -Wall -Wextra -Werror -static -o "$out/$(basename "$sample" .c)" "$sample" -libumad
done
gcc -O2 -Wall -Wextra -Werror -static -o "$out/drain" "$RIG_DIR/guest/drain.c"
log "lint: clean"
