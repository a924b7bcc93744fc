#!/usr/bin/env bash
# Performance of ib_umad_rs against the C ib_umad, measured in one VM boot of
# a kernel (samples/umad/umad_bench.c, rounds of one run per driver)
# and reported as medians and ratios, twice: in TCG's wall time, and with
# guest time counting instructions (qemu -icount), which is steady from run
# to run and does not weigh calls and jumps as heavily as TCG does. It
# measures; it does not judge.
#   bench.sh [flavour]   (plain: the rig's 6.12 kernel, the default; debian)
# RIG_BENCH_ROUNDS: rounds of one run per driver (6). RIG_BENCH_CLOCKS: which
# of the two ("tcg icount"); wall time means nothing beside another VM.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:-plain}

report() { # title, serial log
	python3 - "$1" "$2" <<'PY'
import statistics, sys
title, log = sys.argv[1:]
runs, cpus = {}, "?"
for line in open(log, errors="replace"):
    f = line.split()
    if len(f) == 5 and f[0] == "@@bench":
        runs.setdefault((f[2], f[4]), {}).setdefault(f[1], []).append(float(f[3]))
    elif f[:2] == ["@@rig", "cpus"] and len(f) == 3:
        cpus = f[2]
rounds = max((len(v) for by in runs.values() for v in by.values()), default=0)
print(f"{title} (guest with {cpus} CPUs, medians of {rounds} runs)")
print(f"{'benchmark':<24} {'C ib_umad':>12} {'ib_umad_rs':>12} {'rust/C':>8}")
for (name, unit), by in sorted(runs.items()):
    c, rust = statistics.median(by.get("c", [0])), statistics.median(by.get("rust", [0]))
    better = "lower is better" if unit == "us" or name.endswith("_lost") else "higher is better"
    ratio = rust / c if c else float("nan")
    print(f"{name + ' (' + unit + ')':<24} {c:>12.1f} {rust:>12.1f} {ratio:>8.2f}  {better}")
PY
}

for clock in ${RIG_BENCH_CLOCKS:-tcg icount}; do
	extra=
	[ $clock = tcg ] || extra="-icount shift=0,sleep=off"
	log=$(RIG_QEMU_EXTRA=$extra bash "$RIG_DIR/vm.sh" "$flavour" bench) ||
		die "the benchmark VM did not finish (log: $log)"
	cp "$log" "${log%.log}-$clock.log"
	if [ $clock = tcg ]; then
		report "TCG wall time:" "$log"
	else
		report "guest time counting instructions (-icount shift=0):" "$log"
	fi
done
