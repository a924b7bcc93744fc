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
#
# The instruction clock runs on one vCPU. Under -icount one clock counts
# every vCPU's instructions, so on two a call's CPU time also takes in
# whatever the other vCPU runs meanwhile: on rxe, the send work that 7.3
# queues to a workqueue, charged to a write or not as the scheduler places
# the worker (the rows with few requests outstanding split into rounds of
# 13-15 and of 17-23 us). On one vCPU a call's CPU time is its own, with the
# softirqs that run in it. TCG's wall time keeps RIG_CPUS (2): it shows
# the SMP guest, contention included.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:-plain}

for clock in ${RIG_BENCH_CLOCKS:-tcg icount}; do
	extra= cpus=${RIG_CPUS:-2}
	[ $clock = tcg ] || extra="-icount shift=0,sleep=off" cpus=1
	log=$(RIG_CPUS=$cpus RIG_QEMU_EXTRA=$extra bash "$RIG_DIR/vm.sh" "$flavour" bench) ||
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
