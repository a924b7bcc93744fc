#!/usr/bin/env bash
# Turns the tree, as it is, into the git format-patch series that go to
# the kernel's trees, against Debian's linux-source-7.3 (tools/upstream/series
# says what goes in, in which series and in which order), each with its
# cover letter (covers/), in build/upstream/series/NAME/; and checks every
# patch in turn on the pristine tree: it applies with git am, and
# scripts/checkpatch.pl --strict has nothing to say. A series whose
# patches go each alone to its own tree ("independent") has each of them
# made, and so checked, on the pristine tree alone.
#   series.sh            write the series
#   series.sh --check    the same, then check each patch
# Ends with "N passed, N failed" (one check per patch) under --check.
# Nothing in the series is edited by hand: the module's sources, the
# selftests, patches/, messages/ and covers/ are the one source of it.
set -euo pipefail
source "$(dirname "$0")/../rig/lib.sh"

check=
case ${1:-} in
--check) check=1 ;;
'') ;;
*) die "usage: series.sh [--check]" ;;
esac

here=$REPO_DIR/tools/upstream
out=$REPO_DIR/build/upstream/series
author="$(git -C "$REPO_DIR" log -1 --format='%an <%ae>')"

# The base: linux-source-7.3 from the debian flavour's root, as Debian
# ships it, in one commit. Debian's top-level .gitignore ignores every
# top-level path (its packaging's), hence add -f; nothing is ever built
# inside these trees (O=).
eval "$(bash "$RIG_DIR/debian-kernel.sh" debian)"
tarball=$root/usr/src/linux-source-7.3.tar.xz
[ -e "$tarball" ] || die "no $tarball in the debian flavour's root"
key=$(sha256sum "$tarball" | cut -c1-16)
base=$RIG_CACHE/upstream/base-$key
lock_dir "$base"
if [ -e "$base/.rig-done" ]; then
	cache_note warm "the series' base tree"
else
	cache_note cold "the series' base tree"
	log "making the base tree from $(basename "$tarball") (once per tarball)"
	rm -rf "$base"
	mkdir -p "$base"
	tar -C "$base" -xJf "$tarball"
	git -C "$base/linux-source-7.3" init -q
	git -C "$base/linux-source-7.3" add -A -f
	GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z \
		git -C "$base/linux-source-7.3" -c user.name=base -c user.email=base@localhost \
		commit -q -m "Linux $(sed -n 's/^VERSION = //p' "$base/linux-source-7.3/Makefile").$(
			sed -n 's/^PATCHLEVEL = //p' "$base/linux-source-7.3/Makefile").$(
			sed -n 's/^SUBLEVEL = //p' "$base/linux-source-7.3/Makefile") (Debian linux-source-7.3)"
	touch "$base/.rig-done"
	for old in "$RIG_CACHE"/upstream/base-*; do
		[ "$old" = "$base" ] || [ "${old%.lock}" != "$old" ] || rm -rf "$old"
	done
fi
base=$base/linux-source-7.3

# The series is made in a work tree that shares the base's objects.
work=$RIG_CACHE/upstream/work
# build.sh builds from it: one at a time.
lock_dir "$work"
if [ ! -d "$work/.git" ] || [ "$(git -C "$work" config rig.base)" != "$base" ]; then
	rm -rf "$work"
	git clone -q --shared --no-checkout "$base" "$work"
	git -C "$work" config rig.base "$base"
fi
git_work() { git -C "$work" -c "user.name=${author% <*}" -c "user.email=$(sed 's/.*<\(.*\)>/\1/' <<<"$author")" "$@"; }
git_work checkout -q -f -B series "$(git -C "$base" rev-parse HEAD)"
git_work clean -q -fdx

core=drivers/infiniband/core
# A module of the driver moved into the kernel crate (abstractions lists
# them; intree.py says how), with a MAINTAINERS entry of its own where
# MAINTAINERS.NAME gives one.
gen_abstraction() { # name
	if [ -f "$here/MAINTAINERS.$1" ]; then
		python3 "$here/maintainers.py" "$work/MAINTAINERS" "$here/MAINTAINERS.$1"
	fi
	# Its bindings and helpers, where the kernel keeps its own (intree.py
	# says how).
	python3 "$here/intree.py" bindings "$REPO_DIR/$core/umad_rs" "$work" "abstraction $1"
	RUSTFMT=$RUST_BIN/rustfmt python3 "$here/intree.py" abstraction "$REPO_DIR/$core/umad_rs" "$work" "$1"
}

# The driver, in the steps the series lists as "gen driver NAME": the
# first makes the module's directory (hooked into the IB Kconfig and
# Makefile as Kconfig at the top of this tree describes, with its
# MAINTAINERS entry) as the driver is whole, then takes each later step's
# patch (driver-steps/NAME.patch, a diff of the driver in the tree) back
# out, last first; each later step puts its patch back. So the last step
# leaves the driver whole, and a change to the driver that a step's patch
# no longer fits stops the series here, naming the step. The out-of-tree
# build's own bindings and helpers stay out: the kernel's cover the
# driver, and its Kbuild says so; the driver's header and the uAPI it
# asserts against go to the kernel's bindings.
driver_steps() {
	awk '$1 == "gen" && $2 == "driver" { print $3 }' "$here/series"
}
gen_driver() { # step
	local step later
	if [ "$1" != "$(driver_steps | head -n1)" ]; then
		git_work apply "$here/driver-steps/$1.patch" ||
			die "driver-steps/$1.patch does not apply to the step before it"
		return
	fi
	python3 "$here/intree.py" bindings "$REPO_DIR/$core/umad_rs" "$work" driver
	rsync -a --exclude '*.o' --exclude '.*.cmd' --exclude '*.ko' --exclude '*.mod*' \
		--exclude ib_umad_rs_bindings.rs --exclude ib_umad_rs_helpers.rs \
		--exclude modules.order --exclude Module.symvers \
		--exclude /glue/bindings_helper.h --exclude /glue/bindgen_parameters \
		--exclude /glue/helpers.c --exclude /glue/helpers/ \
		"$REPO_DIR/$core/umad_rs/" "$work/$core/umad_rs/"
	python3 "$here/intree.py" kbuild "$REPO_DIR/$core/umad_rs/Kbuild" "$work/$core/umad_rs/Kbuild"
	# The modules the kernel crate now has are its own.
	local source
	for source in $(grep -v '^#' "$here/abstractions" | cut -f1); do
		rm -rf "$work/$core/umad_rs/$source.rs" "$work/$core/umad_rs/$source/"
	done
	python3 "$here/intree.py" glue "$REPO_DIR/$core/umad_rs" "$work"
	# Every cfg resolved for this tree: what other kernels need goes.
	RUSTFMT=$RUST_BIN/rustfmt python3 "$here/intree.py" resolve "$REPO_DIR/$core/umad_rs" "$work"
	python3 "$here/intree.py" trace_header "$work"
	# For driver-steps.sh: the driver whole, as the tree has it.
	[ -z "${RIG_DRIVER_WHOLE:-}" ] || rsync -a --delete "$work/$core/umad_rs/" "$RIG_DRIVER_WHOLE/"
	# The later steps taken back out, last first.
	for later in $(driver_steps | tail -n +2 | tac); do
		git_work apply -R "$here/driver-steps/$later.patch" ||
			die "driver-steps/$later.patch no longer fits the driver: make it again from the driver as it is"
	done
	echo 'obj-$(CONFIG_INFINIBAND_USER_MAD_RUST) += umad_rs/' >> "$work/$core/Makefile"
	sed -i '/^config INFINIBAND_USER_ACCESS$/i source "drivers/infiniband/core/umad_rs/Kconfig"\n' \
		"$work/drivers/infiniband/Kconfig"
	grep -q 'umad_rs/Kconfig' "$work/drivers/infiniband/Kconfig" ||
		die "drivers/infiniband/Kconfig has no INFINIBAND_USER_ACCESS to put the option before"
	python3 "$here/maintainers.py" "$work/MAINTAINERS" "$here/MAINTAINERS.entry"
}

# The driver's documentation, once the driver is whole: the module's
# documentation up to the rig.
gen_driver_doc() {
	sed -n '/^The test rig$/q;p' "$REPO_DIR/Documentation/ib_umad_rs.rst" |
		sed -e '$ { /^$/d }' > "$work/Documentation/infiniband/ib_umad_rs.rst"
	sed -i '/^   user_mad$/a \   ib_umad_rs' "$work/Documentation/infiniband/index.rst"
	grep -q '^   ib_umad_rs$' "$work/Documentation/infiniband/index.rst" ||
		die "Documentation/infiniband/index.rst has no user_mad entry"
	# Under the driver's entry, which its first step made.
	sed -i 's|^F:\tdrivers/infiniband/core/umad_rs/$|F:\tDocumentation/infiniband/ib_umad_rs.rst\n&|' "$work/MAINTAINERS"
	grep -q '^F:	Documentation/infiniband/ib_umad_rs.rst$' "$work/MAINTAINERS" ||
		die "MAINTAINERS has no entry for the driver"
}

# The test HCA, as a drivers/infiniband/sw/ driver of its own, for this
# tree: its Makefile without the out-of-tree build's fallback and probe,
# its source with the probed declaration resolved (7.3 passes
# reg_user_mr a DMA handle).
gen_ib_loopback() {
	local dir=drivers/infiniband/sw/ib_loopback
	mkdir -p "$work/$dir"
	cp "$REPO_DIR/$dir/Kconfig" "$REPO_DIR/$dir/ib_loopback_wire.h" "$work/$dir/"
	printf '# SPDX-License-Identifier: GPL-2.0\nobj-$(CONFIG_INFINIBAND_LOOPBACK) += ib_loopback.o\n' \
		> "$work/$dir/Makefile"
	python3 - "$REPO_DIR/$dir/ib_loopback.c" "$work/$dir/ib_loopback.c" <<'PY'
import sys
text = open(sys.argv[1]).read()
probed = "#ifdef LO_REG_USER_MR_DMAH\n\t\t\t\t    struct ib_dmah *dmah,\n#endif\n"
if text.count(probed) != 1 or text.count("LO_REG_USER_MR_DMAH") != 1:
    sys.exit("ib_loopback.c: its one probed declaration is not as series.sh knows it")
open(sys.argv[2], "w").write(text.replace(probed, "\t\t\t\t    struct ib_dmah *dmah,\n"))
PY
	sed -i 's|^obj-$(CONFIG_RDMA_SIW)\t\t\t+= siw/$|&\nobj-$(CONFIG_INFINIBAND_LOOPBACK)\t+= ib_loopback/|' \
		"$work/drivers/infiniband/sw/Makefile"
	sed -i 's|^source "drivers/infiniband/sw/siw/Kconfig"$|&\nsource "drivers/infiniband/sw/ib_loopback/Kconfig"|' \
		"$work/drivers/infiniband/Kconfig"
	python3 "$here/maintainers.py" "$work/MAINTAINERS" "$here/MAINTAINERS.selftests"
	grep -q ib_loopback/ "$work/drivers/infiniband/sw/Makefile" &&
		grep -q ib_loopback/Kconfig "$work/drivers/infiniband/Kconfig" ||
		die "drivers/infiniband has no siw lines to put ib_loopback's after"
}

# The selftests, where the kernel keeps the RDMA ones: step N of
# tools/upstream/selftests, merged into rdma/'s Makefile and config.
gen_selftests() { # step
	local files kernel_makefile
	files=$(awk -F'\t' -v step="$1" '$1 == step { print $2 }' "$here/selftests")
	[ -n "$files" ] || die "tools/upstream/selftests has no step $1"
	kernel_makefile=$(mktemp)
	git -C "$base" show HEAD:tools/testing/selftests/rdma/Makefile > "$kernel_makefile"
	# shellcheck disable=SC2086 # the step's files, one word each
	python3 "$here/selftests.py" "$REPO_DIR/tools/testing/selftests/rdma" \
		"$work/tools/testing/selftests/rdma" "$kernel_makefile" $files
	rm -f "$kernel_makefile"
	# The first step puts the tests under the test HCA's entry.
	if [ "$1" = 1 ]; then
		sed -i 's|^F:\tdrivers/infiniband/sw/ib_loopback/$|&\nF:\ttools/testing/selftests/rdma/umad*|' \
			"$work/MAINTAINERS"
		grep -q '^F:	tools/testing/selftests/rdma/umad\*$' "$work/MAINTAINERS" ||
			die "MAINTAINERS has no entry for the test HCA"
	fi
}

# The same date on every generated commit: an unchanged tree gives the
# same series.
export GIT_AUTHOR_DATE=2026-11-27T00:00:00Z GIT_COMMITTER_DATE=2026-11-27T00:00:00Z
pristine=$(git -C "$base" rev-parse HEAD)
names=() prefixes=() starts=() alone=()
while read -r kind name arg; do
	case $kind in
	'#'* | '') continue ;;
	series)
		names+=("$name")
		if [ "${arg% independent}" != "$arg" ]; then
			prefixes+=("${arg% independent}") alone+=(1)
		else
			prefixes+=("$arg") alone+=('')
		fi
		starts+=("$(git_work rev-parse HEAD)")
		[ -f "$here/covers/$name" ] || die "series $name has no covers/$name"
		;;
	patch)
		git_work am -q --committer-date-is-author-date "$here/patches/$name" ||
			die "patches/$name does not apply"
		;;
	gen)
		"gen_$name" ${arg:+"$arg"}
		git_work add -A -f
		git_work commit -q -s -F "$here/messages/$name${arg:+-$arg}"
		;;
	*) die "series: unknown kind '$kind'" ;;
	esac
done < "$here/series"
[ "${#names[@]}" -gt 0 ] && [ "${starts[0]}" = "$pristine" ] ||
	die "series: the first line that is not a comment must start a series"
starts+=("$(git_work rev-parse HEAD)")

# The cover letter's subject and text, from covers/NAME: its first line,
# and the rest after the blank line.
fill_cover() { # cover-letter-file covers-file
	python3 - "$1" "$2" <<'PY'
import sys
letter, text = open(sys.argv[1]).read(), open(sys.argv[2]).read()
subject, _, blurb = text.partition("\n\n")
letter = letter.replace("*** SUBJECT HERE ***", subject.strip())
letter = letter.replace("*** BLURB HERE ***", blurb.rstrip("\n"))
open(sys.argv[1], "w").write(letter)
PY
}

rm -rf "$out" "${out%/*}"/checkpatch
mkdir -p "$out"
format=(format-patch -q --zero-commit --no-signature --base="$pristine")
alone_failed=()
for i in "${!names[@]}"; do
	name=${names[$i]} from=${starts[$i]} to=${starts[$((i + 1))]}
	git_work "${format[@]}" --cover-letter --subject-prefix="${prefixes[$i]}" \
		-o "$out/$name" "$from..$to"
	if [ -n "${alone[$i]}" ]; then
		# Each patch made again on the pristine tree alone, so that its
		# base is the tree's and it needs none of the others.
		find "$out/$name" -name '*.patch' ! -name 0000-cover-letter.patch -delete
		n=0
		for commit in $(git_work rev-list --reverse "$from..$to"); do
			n=$((n + 1))
			git_work checkout -q -f --detach "$pristine"
			if git_work cherry-pick "$commit" > /dev/null 2>&1; then
				git_work "${format[@]}" -1 --subject-prefix="${prefixes[$i]}" \
					--start-number="$n" -o "$out/$name" HEAD
			else
				git_work cherry-pick --abort > /dev/null 2>&1 || true
				alone_failed+=("$name:$(git_work log -1 --format=%f "$commit")")
			fi
		done
		git_work checkout -q -f series
	fi
	fill_cover "$out/$name/0000-cover-letter.patch" "$here/covers/$name"
	git_work diff --shortstat "$from" "$to" |
		sed "s/^ */$name: $(git_work rev-list --count "$from..$to") patches: /" >&2
done
[ -n "$check" ] || exit 0

[ -n "$check" ] || exit 0

# Each patch in turn on the pristine tree: git am, then checkpatch.
# checkpatch's answer depends only on the patch and the tree it applies
# to (the base and the patches before it), so it is kept under a key of
# that chain: a run checks again from the first patch that changed.
# ",TYPE,..." of the reports checkpatch-exceptions excuses this patch.
exceptions() { # patch
	local subject
	subject=$(git mailinfo /dev/null /dev/null < "$1" | sed -n 's/^Subject: //p')
	awk -F'\t' -v subject="$subject" '!/^#/ && $1 == subject { printf ",%s", $2 }' \
		"$here/checkpatch-exceptions"
}
verdicts=$RIG_CACHE/upstream/checkpatch
mkdir -p "$verdicts"
chain=$(cat "$base/scripts/checkpatch.pl" "$base/scripts/spelling.txt" <(git -C "$base" rev-parse HEAD) \
	"$here/checkpatch-exceptions" |
	sha256sum | cut -c1-16)
cached=0
git_work checkout -q -f -B check "$(git -C "$base" rev-parse HEAD)"
# In the stack's order, not the directories' names'.
for patch in $(for name in "${names[@]}"; do ls "$out/$name"/0*.patch; done); do
	series=$(basename "$(dirname "$patch")")
	name=$series:$(basename "$patch" .patch)
	[ "${name%-cover-letter}" = "$name" ] || continue
	why=
	if ! git_work am -q "$patch" > /dev/null 2>&1; then
		git_work am --abort > /dev/null 2>&1 || true
		check_result "series:$name" "git am failed"
		chain=failed
		continue
	fi
	chain=$(cat <(echo "$chain") "$patch" | sha256sum | cut -c1-16)
	if [ -e "$verdicts/$chain.clean" ]; then
		touch "$verdicts/$chain.clean"
		cached=$((cached + 1))
	# Debian's python3 first: spdxcheck.py needs its ply. The base is a
	# source tarball without git history, where checkpatch cannot look
	# up the commits a Fixes: tag names (UNKNOWN_COMMIT_ID); a patch may
	# be excused a report that checkpatch-exceptions lists for it, with
	# the reason.
	elif report=$(cd "$work" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --quiet --no-summary \
		--show-types --ignore "UNKNOWN_COMMIT_ID$(exceptions "$patch")" "$patch" 2>&1); then
		: > "$verdicts/$chain.clean"
	else
		why="checkpatch: $(grep -cE '^(ERROR|WARNING|CHECK):' <<<"$report") reports"
		mkdir -p "${out%/*}/checkpatch"
		printf '%s\n' "$report" > "${out%/*}/checkpatch/$series-$(basename "$patch" .patch)"
	fi
	check_result "series:$name" "$why"
done
# The whole stack's selftests build the kernel's way, and install with
# every umad program in the run list.
ksft_out=$(mktemp -d)
if make -s -C "$work/tools/testing/selftests" TARGETS=rdma O="$ksft_out/build" \
	INSTALL_PATH="$ksft_out/install" install > "${out%/*}/selftests.log" 2>&1; then
	listed=$(grep -c '^rdma:umad_' "$ksft_out/install/kselftest-list.txt" || true)
	want=$(make -s -C "$work/tools/testing/selftests/rdma" -f Makefile -f - <<<'print: ; @echo $(TEST_GEN_PROGS) $(TEST_PROGS)' \
		OUTPUT="$ksft_out/build/rdma" print 2>/dev/null | tr ' ' '\n' | grep -c '/\?umad_' || true)
	check_result series:selftests "$([ "$listed" -gt 0 ] && [ "$listed" = "$want" ] ||
		echo "kselftest-list.txt has $listed umad programs of $want")"
else
	check_result series:selftests "make TARGETS=rdma install failed: $(grep -m1 -i error "${out%/*}/selftests.log")"
fi
rm -rf "$ksft_out"
for failed in ${alone_failed[@]+"${alone_failed[@]}"}; do
	check_result "series:${failed%%:*}:alone:${failed#*:}" "does not apply alone to the pristine tree"
done
[ "$cached" -eq 0 ] || log "checkpatch: $cached patches unchanged, with the tree before them, since a clean check"
# Verdicts of chains older than a week are of series long gone.
find "$verdicts" -name '*.clean' -mtime +7 -delete
check_summary
