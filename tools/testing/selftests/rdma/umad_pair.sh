#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The pair of umad_test.h for the shell tests, sourced after ktap_helpers.sh:
# port 1 of $CLIENT and of $SERVER, which pair_remove_server and
# pair_add_server take away and put back. Soft-RoCE's rxe0 and rxe1 on vethA
# and vethB where rdma_rxe is loaded; else ib_loopback's iblo0 and iblo1, of
# two ports each, loaded by pair_setup and unloaded when the test exits, or
# is stopped.

LOOPBACK_DBG=/sys/kernel/debug/ib_loopback

pair_unload() {
	rmmod ib_loopback
}

# Sets CLIENT and SERVER, or ends the test as a skip (or a failure).
pair_setup() {
	if [ -e /sys/module/rdma_rxe ] || [ -e /sys/class/infiniband/rxe0 ]; then
		if [ ! -e /sys/class/infiniband/rxe0 ] || [ ! -e /sys/class/infiniband/rxe1 ]; then
			ktap_skip_all "no rxe0 and rxe1 (soft-RoCE on vethA and vethB)"
			exit "$KSFT_SKIP"
		fi
		if ! command -v rdma > /dev/null; then
			ktap_skip_all "no rdma (iproute2)"
			exit "$KSFT_SKIP"
		fi
		CLIENT=rxe0 SERVER=rxe1
		return
	fi
	if ! modinfo ib_loopback > /dev/null 2>&1; then
		ktap_skip_all "no rdma_rxe, and no ib_loopback"
		exit "$KSFT_SKIP"
	fi
	if [ -e /sys/module/ib_loopback ]; then
		ktap_exit_fail_msg "no rdma_rxe, and ib_loopback is loaded already"
	fi
	modprobe ib_loopback ndevs=2 nports=2 ||
		ktap_exit_fail_msg "no rdma_rxe, and modprobe ib_loopback ndevs=2 nports=2 failed"
	trap pair_unload EXIT
	trap 'exit 1' INT TERM
	if [ ! -w "$LOOPBACK_DBG/add_device" ]; then
		ktap_skip_all "no debugfs, where ib_loopback removes and adds devices"
		exit "$KSFT_SKIP"
	fi
	CLIENT=iblo0 SERVER=iblo1
}

pair_remove_server() {
	if [ "$SERVER" = rxe1 ]; then
		rdma link delete rxe1
	else
		echo iblo1 > "$LOOPBACK_DBG/remove_device"
	fi
}

# ib_loopback gives the new device the lowest free index: iblo1 again.
pair_add_server() {
	if [ "$SERVER" = rxe1 ]; then
		rdma link add rxe1 type rxe netdev vethB
	else
		echo 2 > "$LOOPBACK_DBG/add_device"
	fi
}
