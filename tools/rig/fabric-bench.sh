#!/usr/bin/env bash
# opensm at work on simulated fabrics through each driver, measured:
# umad_fabric.sh's benchmark in a boot of Debian's 7.3 that runs both
# drivers, in rounds of one run per driver, the first driver alternating.
# Each run brings each fabric up from a fresh ibsim, by opensm with its
# defaults and with max_wire_smps 64, and takes it to its first light
# sweep. fabric-report.py reports the medians, the C/rust ratios with
# their spread from round to round, and a chart of the times against the
# fabric's size, into build/bench/fabric*. It measures; it does not judge.
#   fabric-bench.sh
# RIG_FABRICS: the ladder, umad_fabric.sh's fabrics (ibsim's example of
# 6 nodes and fat trees of 128, 1024 and 2048 hosts);
# RIG_BENCH_ROUNDS: rounds (3).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

export RIG_FABRICS=${RIG_FABRICS:-example:net.2sw2path4hca,fat:2:16:128,fat:3:16:1024,fat:3:24:2048}
export RIG_BENCH_ROUNDS=${RIG_BENCH_ROUNDS:-3}

log=$(bash "$RIG_DIR/vm.sh" debian fabric) ||
	die "the fabric benchmark's VM did not finish (log: $log)"
mkdir -p "$REPO_DIR/build/bench"
# Debian's python3, which has Debian's matplotlib (setup.sh).
/usr/bin/python3 "$RIG_DIR/fabric-report.py" "$log" "$REPO_DIR/build/bench/fabric"
keep_passed_boot "$log"
