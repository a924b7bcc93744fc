#!/usr/bin/env bash
# Performance of ib_umad_rs against the C ib_umad, measured in one VM boot of
# a kernel (samples/umad/umad_bench.c, rounds of one run per driver, on
# soft-RoCE and on ib_loopback) and reported as medians and ratios, with two
# charts in build/bench/ (bench-report.py), twice: in TCG's wall time, and with
# guest time counting instructions (qemu -icount), which is steady from run
# to run and does not weigh calls and jumps as heavily as TCG does. It
# measures; it does not judge.
#   bench.sh [flavour]   (plain: the rig's 6.12 kernel, the default; debian)
# RIG_BENCH_GROUPS: umad_bench's groups to run (all; while working on one).
# RIG_BENCH_ROUNDS: rounds of one run per driver (6). Take an even number:
# the first driver alternates by round, so then each goes first as often,
# and the middle two rounds, whose figures the medians are, straddle both
# orders. A cost that drifts from run to run (on Debian's kernel,
# ib_loopback's register+unregister grows by some 9% over a boot's runs
# for both drivers) then favours neither; with 9 rounds the middle round
# ran C first, and the drift showed as 1.01 for ib_umad_rs.
# RIG_BENCH_CLOCKS: which of the two ("tcg icount"); wall time means
# nothing beside another VM.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:-plain}

for clock in ${RIG_BENCH_CLOCKS:-tcg icount}; do
	extra=
	[ $clock = tcg ] || extra="-icount shift=0,sleep=off"
	log=$(RIG_QEMU_EXTRA=$extra bash "$RIG_DIR/vm.sh" "$flavour" bench) ||
		die "the benchmark VM did not finish (log: $log)"
	cp "$log" "${log%.log}-$clock.log"
	if [ $clock = tcg ]; then
		title="TCG wall time"
	else
		title="guest time counting instructions (-icount shift=0)"
	fi
	mkdir -p "$REPO_DIR/build/bench"
	# Debian's python3, which has Debian's matplotlib (setup.sh).
	/usr/bin/python3 "$RIG_DIR/bench-report.py" "$flavour kernel, $title" "$log" \
		"$REPO_DIR/build/bench/$flavour-$clock"
done
