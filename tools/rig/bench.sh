#!/usr/bin/env bash
# Performance of ib_umad_rs against the C ib_umad, measured in VM boots of a
# kernel that each run both drivers (samples/umad/umad_bench.c, rounds of one
# run per driver, on soft-RoCE and on ib_loopback) and reported as medians
# and ratios (bench-report.py: a round's own ratios, their median), with two
# charts in build/bench/ (bench-report.py), twice: in TCG's wall time, and with
# guest time counting instructions (qemu -icount), which is steady from run
# to run and does not weigh calls and jumps as heavily as TCG does. It
# measures; it does not judge.
#   bench.sh [flavour]   (plain: the rig's 6.12 kernel, the default; debian, sid)
# RIG_BENCH_GROUPS: umad_bench's groups to run (all; while working on one).
# RIG_BENCH_ROUNDS: rounds of one run per driver (6; under the instruction
# clock, of the costs). Take an even number:
# the first driver alternates by round, so then each goes first as often,
# and a cost that drifts from run to run (on Debian's kernel, ib_loopback's
# register+unregister grows by some 9% over a boot's runs for both
# drivers) pushes as many rounds' ratios up as down; with 9 rounds the
# middle round ran C first, and the drift showed as 1.01 for ib_umad_rs.
# RIG_BENCH_RATE_ROUNDS: rounds of the rates under the instruction clock
# (three times RIG_BENCH_ROUNDS). On rxe a rate's rounds spread by 2 to 4%
# (the device's work lands on either vCPU), where the drivers differ by
# less than 1%; a round of the rates takes some 26 s, one of the costs 60.
# RIG_BENCH_CLOCKS: which of the two ("tcg icount"); wall time means
# nothing beside another VM.
#
# Under the instruction clock, costs and rates boot guests of their own.
# -icount counts every vCPU's instructions on one clock, so on two vCPUs a
# call's CPU time also takes in whatever the other vCPU runs meanwhile: on
# rxe, the send work that 7.3 queues to a workqueue, charged to a write or
# not as the scheduler places the worker (the rows with few requests
# outstanding split into rounds of 13-15 and of 17-23 us). So the groups
# that time a caller's CPU (COST_GROUPS) run on one vCPU, where that time is
# the call's own with the softirqs that run in it. Rates are elapsed time,
# the whole path, and run on RIG_CPUS (2), like TCG's wall time: the SMP
# guest, where the device's work and the reader run beside the writer (on
# one vCPU, rxe's floods came in runs of about 13000 and 15300 MADs/s for
# both drivers alike).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:-plain}

COST_GROUPS="write_eio write_noah register open outstanding queued"
RATE_GROUPS="round_trip flood rmpp shared"
# Every group of umad_bench's table is one or the other, but the tracer's
# steps: a group in neither would silently not run.
table_groups=$(sed -n 's/^\t{ "\([a-z0-9_]*\)", [a-z0-9_]* },$/\1/p' \
	"$REPO_DIR/samples/umad/umad_bench.c")
[ -n "$table_groups" ] || die "bench.sh: no groups found in umad_bench.c's table"
for group in $table_groups; do
	case " $COST_GROUPS $RATE_GROUPS steps " in
	*" $group "*) ;;
	*) die "bench.sh: umad_bench's group '$group' is in neither COST_GROUPS nor RATE_GROUPS" ;;
	esac
done

# The groups of "$@" that RIG_BENCH_GROUPS (comma-separated) leaves in, as
# umad_bench takes them; empty when none is left.
chosen_groups() {
	local group out=
	for group in "$@"; do
		case ,${RIG_BENCH_GROUPS:-$group}, in
		*,$group,*) out+=${out:+,}$group ;;
		esac
	done
	echo "$out"
}

rounds=${RIG_BENCH_ROUNDS:-6}
rate_rounds=${RIG_BENCH_RATE_ROUNDS:-$((3 * rounds))}

# Boots a benchmark guest of cpus vCPUs running groups for rounds rounds,
# and appends its figures to the clock's log.
bench_boot() { # clock cpus groups rounds
	local extra= log
	[ "$1" = tcg ] || extra="-icount shift=0,sleep=off"
	[ -n "$3" ] || return 0
	log=$(RIG_CPUS=$2 RIG_BENCH_GROUPS=$3 RIG_BENCH_ROUNDS=$4 RIG_QEMU_EXTRA=$extra \
		bash "$RIG_DIR/vm.sh" "$flavour" bench) ||
		die "the benchmark VM did not finish (log: $log)"
	boot_logs+=("$log")
	cat "$log" >> "$clock_log"
}

mkdir -p "$REPO_DIR/build/bench" "$REPO_DIR/build/logs"
boot_logs=()
for clock in ${RIG_BENCH_CLOCKS:-tcg icount}; do
	clock_log=$REPO_DIR/build/logs/$flavour-bench-$clock.log
	rm -f "$clock_log"
	if [ $clock = tcg ]; then
		title="TCG wall time"
		bench_boot tcg "${RIG_CPUS:-2}" "$(chosen_groups $COST_GROUPS $RATE_GROUPS)" "$rounds"
	else
		title="guest time counting instructions (-icount shift=0)"
		bench_boot icount 1 "$(chosen_groups $COST_GROUPS)" "$rounds"
		bench_boot icount "${RIG_CPUS:-2}" "$(chosen_groups $RATE_GROUPS)" "$rate_rounds"
	fi
	# Debian's python3, which has Debian's matplotlib (setup.sh).
	/usr/bin/python3 "$RIG_DIR/bench-report.py" "$flavour kernel, $title" "$clock_log" \
		"$REPO_DIR/build/bench/$flavour-$clock"
done
for boot_log in "${boot_logs[@]}"; do
	keep_passed_boot "$boot_log"
done
