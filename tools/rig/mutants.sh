#!/usr/bin/env bash
# Shows that tests fail when what they check is broken. Each file in
# mutants/ is a patch that breaks ib_umad_rs (or a test module) on purpose,
# with a "Must-fail: PROGRAM TEST" line for each test that must then fail
# and a "Why:" line saying what the patch breaks. Each mutant is applied to
# a copy of the tree, and the 6.12 debug kernel boots with ib_umad_rs built
# from it, running only the programs its tests belong to. A mutant is
# caught when every test it names fails; the run fails when one of them
# passes (it cannot see the fault) or does not run.
#   mutants.sh [name...]   (every mutant when none is given)
# Builds in the cache's module directory for that kernel, as a boot of
# that kernel does: run it on another cache (IB_UMAD_RS_CACHE) than a
# differential.sh debug running at the same time.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

dir=$RIG_DIR/mutants
if [ $# -gt 0 ]; then
	names=("$@")
else
	mapfile -t names < <(cd "$dir" && ls -- *.patch | sed 's/\.patch$//')
fi
work=$RIG_CACHE/mutants
lock_dir "$work"
tree=$work/tree

caught=0 missed=0
for name in "${names[@]}"; do
	patch=$dir/$name.patch
	[ -f "$patch" ] || die "no mutant $name in $dir"
	mapfile -t musts < <(sed -n 's/^Must-fail: //p' "$patch")
	[ ${#musts[@]} -gt 0 ] || die "mutant $name names no test that must fail"
	log "mutant $name: $(sed -n 's/^Why: //p' "$patch")"
	rm -rf "$tree"
	mkdir -p "$tree"
	(cd "$REPO_DIR" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tree")
	(cd "$tree" && git apply "$patch") || die "mutant $name no longer applies"
	programs=$(printf '%s\n' "${musts[@]}" | cut -d' ' -f1 | sort -u | paste -sd,)
	serial=$(RIG_TESTS=$programs RIG_LOG_DIR=$work/logs/$name bash "$tree/tools/rig/vm.sh" debug suite rust) || true
	[ -n "$serial" ] || serial=/dev/null
	for must in "${musts[@]}"; do
		program=${must%% *} test=${must#* }
		result=$(grep -E "^@@tap rust $program (not )?ok [0-9]+ $test( |\$)" "$serial" | head -n 1 |
			sed -E 's/^@@tap rust [^ ]+ //')
		case $result in
		"not ok "*)
			echo "ok $name: $program:$test fails"
			caught=$((caught + 1))
			;;
		"")
			echo "not ok $name: $program:$test did not run (serial log: $serial)"
			missed=$((missed + 1))
			;;
		*)
			echo "not ok $name: $program:$test does not fail with the fault: $result"
			missed=$((missed + 1))
			;;
		esac
	done
done
echo "$caught passed, $missed failed"
[ "$missed" -eq 0 ]
