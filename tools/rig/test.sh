#!/usr/bin/env bash
# Everything the project tests: installs what is missing, runs the host unit
# tests and the lints, then the differential suite on Debian's own kernel and
# on the rig's race kernel and the benchmark, while the differential suite on
# the rig's debug kernel runs beside them.
# Ends with one line "total: N passed, N failed".
set -uo pipefail
source "$(dirname "$0")/lib.sh"

bash "$RIG_DIR/setup.sh" || die "setup failed"

passed=0 failed=0 failures=()
# Adds a step's counts to the totals: its last "N passed, N failed" line,
# or, for cargo, the sum of its "N passed; N failed" lines. A step that
# exited non-zero without counting a failure counts as one.
count() { # step name, output file, which lines (tail -n), step exit status
	local p f
	p=$(grep -Eo '[0-9]+ passed' "$2" | tail -n "$3" | awk '{s += $1} END {print s + 0}')
	f=$(grep -Eo '[0-9]+ failed' "$2" | tail -n "$3" | awk '{s += $1} END {print s + 0}')
	[ "$4" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	passed=$((passed + p)) failed=$((failed + f))
	[ "$f" -eq 0 ] || failures+=("$1: $(grep -h '^UNEXPECTED: ' "$2" | sed 's/^UNEXPECTED: //' |
		paste -sd ';' | sed 's/;/; /g' | grep . || echo "exit status $4: $(tail -n 1 "$2")")")
}
# A step that is one check: passed when it exits 0.
count_step() { # step name, output file, step exit status
	if [ "$3" -eq 0 ]; then
		passed=$((passed + 1))
	else
		count "$1" "$2" 0 "$3"
	fi
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT

log "host unit tests"
(cd "$REPO_DIR" && cargo test --quiet 2>&1) | tee "$out"
count "host unit tests" "$out" '+1' "${PIPESTATUS[0]}"  # every "test result:" line

# Resolving a suite's versions asks the mirror; once a run is enough.
for flavour in debian sid; do
	log "Debian's kernel for $flavour: its root, its image, the tree build-for-debian.sh prepares"
	answer=RIG_DEBIAN_$flavour
	paths=$(bash "$RIG_DIR/debian-kernel.sh" "$flavour") && declare -x "$answer=$paths"
done

# debian and sid: the whole suite on Debian's own 7.3 (trixie-backports)
# and 7.2 (sid) kernels, each against its own C ib_umad; series: on the
# 7.3 kernel with the patch series, against the C ib_umad with the series'
# fixes, both drivers built in that tree; debug (6.12):
# KASAN, lockdep, kmemleak, fault injection; race (6.12): KCSAN and
# lockdep. All SMP guests, all both drivers.
# A guest keeps about one of the two cores busy, most of its tests being one
# thread, so the longest suite, debug's, runs beside the steps below and
# reports after them.
log "the debug kernel; its differential suite starts beside the steps below"
debug_out=$(mktemp)
debug_suite=
trap 'rm -f "$out" "$debug_out"; [ -z "$debug_suite" ] || kill -- -"$debug_suite" 2>/dev/null' EXIT
if kdir_debug=$(bash "$RIG_DIR/kernel.sh" debug); then
	# Its own process group, which the EXIT trap stops with its VM.
	setsid bash "$RIG_DIR/differential.sh" debug > "$debug_out" 2>&1 &
	debug_suite=$!
fi

log "lints: rustfmt, bindings only in the glue, clippy (6.12, 7.3 and 7.2), C warnings as errors"
{
	[ -n "$kdir_debug" ] && debian=$(debian_tree debian) && sid=$(debian_tree sid) &&
		bash "$RIG_DIR/lint.sh" "$kdir_debug" "$debian" "$sid"
} 2>&1 | tee "$out"
count_step lints "$out" "${PIPESTATUS[0]}"

log "what build-for-debian.sh refuses, each with its one sentence"
bash "$RIG_DIR/build-for-debian-checks.sh" 2>&1 | tee "$out"
count "build-for-debian.sh refusals" "$out" 1 "${PIPESTATUS[0]}"

for flavour in debian sid; do
	log "installing the package where the module cannot be built yet ($flavour): skipped, dpkg unbroken"
	bash "$RIG_DIR/debian-install-checks.sh" "$flavour" 2>&1 | tee "$out"
	count "install checks ($flavour)" "$out" 1 "${PIPESTATUS[0]}"
done

log "the patch series for 7.3, generated from the tree: each patch through git am and checkpatch --strict"
bash "$REPO_DIR/tools/upstream/series.sh" --check 2>&1 | tee "$out"
count "patch series" "$out" 1 "${PIPESTATUS[0]}"
log "the kernel with the whole series, in the debian root: built once with clippy, rustfmtcheck, rustdoc (build.sh --whole; per patch without it)"
bash "$REPO_DIR/tools/upstream/build.sh" --whole 2>&1 | tee "$out"
count "series kernel" "$out" 1 "${PIPESTATUS[0]}"

# One guest beside the debug suite's: a third at once on 2 cores made a
# timing test of the C driver's phase fail (a MAD timeout 11 ms short of
# what was asked, on the debian kernel).
for flavour in debian sid series race; do
	log "differential suite on the $flavour kernel"
	bash "$RIG_DIR/differential.sh" "$flavour" 2>&1 | tee "$out"
	count "$flavour suite" "$out" 1 "${PIPESTATUS[0]}"  # the report's closing line
done

# One round per driver shows the benchmark works; the figures in the README
# come from bench.sh with more rounds (the README says how many). Instruction
# counts only: wall time means nothing beside the debug suite's VM.
log "benchmarks, one round: ib_umad_rs against the C ib_umad, both in each boot (measured, not judged)"
RIG_BENCH_ROUNDS=1 RIG_BENCH_RATE_ROUNDS=1 RIG_BENCH_CLOCKS=icount bash "$RIG_DIR/bench.sh" debian 2>&1 | tee "$out"
count_step benchmarks "$out" "${PIPESTATUS[0]}"

log "differential suite on the debug kernel (it ran beside the steps above)"
if [ -n "$debug_suite" ]; then
	wait "$debug_suite"
	status=$?
	debug_suite=
else
	echo "kernel.sh debug failed" > "$debug_out"
	status=1
fi
cat "$debug_out"
count "debug suite" "$debug_out" 1 "$status"

# CI shows only the end of the output: name what failed there.
for failure in "${failures[@]}"; do
	echo "failed: $failure"
done
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
