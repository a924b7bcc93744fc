#!/usr/bin/env bash
# Counts, instruction by instruction, what each call that umad_bench times
# costs in the kernel, for the C ib_umad and ib_umad_rs in one boot of the
# plain kernel: umad_bench's steps group (a register, an unregister, writes,
# a read, the node's open and close, a sysfs read, an RMPP response's
# write and read; three rounds), each
# system call single-stepped through QEMU's gdb stub by gdb (trace.py) from
# its entry to its return to user space. Unlike the benchmark's figures,
# these counts are exact, and say in which function the instructions go.
#   trace.sh [iblo|rxe] [plain|debian|sid]
# (the device: ib_loopback, the default, or rxe; the kernel: the rig's plain
# 6.12, the default, or Debian's 7.3, the benchmark's, with the module DKMS
# built). Writes build/trace/<flavour>-<device>.jsonl (each call's folded
# stacks) and prints trace-report.py's comparison.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

device=${1:-iblo}
flavour=${2:-plain}
case $flavour in
plain | debian | sid) ;;
*) die "trace.sh: no kernel '$flavour' (plain, debian or sid)" ;;
esac
out=$REPO_DIR/build/trace
mkdir -p "$out"
logdir=$out/logs
log=$logdir/$flavour-trace.log
rm -f "$log"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# One vCPU: a traced call cannot wait on another CPU that the stub holds.
# Single steps are slow (about a thousand instructions a second): the VM
# gets 40 minutes.
VM_TIMEOUT=${VM_TIMEOUT:-2400} RIG_CPUS=1 RIG_LOG_DIR=$logdir RIG_TRACE_DEVICE=$device \
	RIG_QEMU_EXTRA="-gdb tcp:127.0.0.1:$port" \
	bash "$RIG_DIR/vm.sh" "$flavour" trace > /dev/null &
vm=$!
until grep -qs '^@@rig trace ready' "$log"; do
	kill -0 $vm 2> /dev/null || die "the VM ended before the steps began (log: $log)"
	sleep 0.2
done
log "tracing umad_bench's steps on $device"
TRACE_LOG=$log TRACE_TARGET=127.0.0.1:$port \
	TRACE_PHASES=2 TRACE_OUT=$out/$flavour-$device.jsonl \
	gdb -q -nx -batch -x "$RIG_DIR/trace.py" > "$out/gdb.log" 2>&1 ||
	die "gdb did not finish the trace (its output: $out/gdb.log)"
wait $vm || die "the VM did not finish (log: $log)"
python3 "$RIG_DIR/trace-report.py" "$out/$flavour-$device.jsonl"
