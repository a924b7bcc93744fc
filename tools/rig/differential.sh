#!/usr/bin/env bash
# One VM boot: the selftests against the kernel's C ib_umad, then against
# ib_umad_rs, judged side by side against the expected-failure lists and
# the list of expected skips.
#   differential.sh <plain|debug|race|lean|debian|rt-amd64|cloud-amd64|arm64|arm64-16k|rt-arm64|sid|rdma-rc|series>
# rdma-rc (Debian's 7.3 with series (a) alone, tools/upstream/rdma-rc.sh)
# runs the C driver alone: ib_umad_rs is not in that kernel.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:?usage: differential.sh <plain|debug|race|lean|debian|rt-amd64|cloud-amd64|arm64|arm64-16k|rt-arm64|sid|rdma-rc|series>}
drivers=c,rust
[ "$flavour" != rdma-rc ] || drivers=c
expected=$RIG_DIR/expected
# vm.sh fails when the guest did not finish; report.py says so too.
log=$(bash "$RIG_DIR/vm.sh" "$flavour" suite "$drivers") || true
[ -n "$log" ] || die "the VM did not run"
python3 "$RIG_DIR/report.py" "$flavour" "$log" \
	"$expected/expected-failures-c.txt" "$expected/expected-failures-rust.txt" \
	"$expected/expected-skips.txt"
keep_passed_boot "$log"
