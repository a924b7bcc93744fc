#!/usr/bin/env bash
# Everything the project tests: installs what is missing, runs the host unit
# tests, then the differential suite on the plain and the debug kernel.
# Ends with one line "total: N passed, N failed".
set -uo pipefail
source "$(dirname "$0")/lib.sh"

bash "$RIG_DIR/setup.sh" || die "setup failed"

passed=0 failed=0
# Adds a step's counts to the totals: its last "N passed, N failed" line,
# or, for cargo, the sum of its "N passed; N failed" lines. A step that
# exited non-zero without counting a failure counts as one.
count() { # output file, which lines (tail -n), step exit status
	local p f
	p=$(grep -Eo '[0-9]+ passed' "$1" | tail -n "$2" | awk '{s += $1} END {print s + 0}')
	f=$(grep -Eo '[0-9]+ failed' "$1" | tail -n "$2" | awk '{s += $1} END {print s + 0}')
	[ "$3" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	passed=$((passed + p)) failed=$((failed + f))
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT

log "host unit tests"
(cd "$REPO_DIR" && cargo test --quiet 2>&1) | tee "$out"
count "$out" '+1' "${PIPESTATUS[0]}"  # every "test result:" line

log "lints: rustfmt, bindings only in the glue, clippy, C warnings as errors"
{
	kdir=$(bash "$RIG_DIR/kernel.sh" plain) && bash "$RIG_DIR/lint.sh" "$kdir"
} 2>&1 | tee "$out"
if [ "${PIPESTATUS[0]}" -eq 0 ]; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

# plain: the suite, on the kernel as distributions build it; debug: KASAN,
# lockdep, kmemleak; race: KCSAN and lockdep. All SMP, all both drivers.
for flavour in plain debug race; do
	log "differential suite on the $flavour kernel"
	bash "$RIG_DIR/differential.sh" "$flavour" 2>&1 | tee "$out"
	count "$out" 1 "${PIPESTATUS[0]}"  # the report's closing line
done

log "benchmarks: ib_umad_rs against the C ib_umad in one boot (measured, not judged)"
if bash "$RIG_DIR/bench.sh"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
