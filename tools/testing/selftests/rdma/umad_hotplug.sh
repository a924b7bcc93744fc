#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# umad nodes follow their IB device: deleting rxe1 takes its node away and
# leaves rxe0's; adding it back gives it the lowest free number again. Needs
# rxe1 on vethB (umad_test.h), and rdma from iproute2.
. "$(dirname "$0")/../kselftest/ktap_helpers.sh"

CLASS=/sys/class/infiniband_mad

# The umad node (umadN) of IB device $1, port 1; empty if there is none.
node_of() {
	for n in "$CLASS"/umad*; do
		[ -e "$n/ibdev" ] || continue
		if [ "$(cat "$n/ibdev")" = "$1" ] && [ "$(cat "$n/port")" = 1 ]; then
			basename "$n"
			return
		fi
	done
}

ktap_print_header
if [ ! -e /sys/class/infiniband/rxe0 ] || [ ! -e /sys/class/infiniband/rxe1 ]; then
	ktap_skip_all "no rxe0 and rxe1 (soft-RoCE on vethA and vethB)"
	exit "$KSFT_SKIP"
fi
if ! command -v rdma > /dev/null; then
	ktap_skip_all "no rdma (iproute2)"
	exit "$KSFT_SKIP"
fi
ktap_set_plan 3

rxe0_before=$(node_of rxe0)
rxe1_before=$(node_of rxe1)
ktap_print_msg "before: rxe0 ${rxe0_before:-none}, rxe1 ${rxe1_before:-none}"

rdma link delete rxe1
if [ -n "$rxe1_before" ] && [ -z "$(node_of rxe1)" ] &&
   [ ! -e "/dev/infiniband/$rxe1_before" ] &&
   [ ! -e "$CLASS/$rxe1_before" ]; then
	ktap_test_pass node_goes_with_its_device
else
	ktap_test_fail node_goes_with_its_device
fi

if [ -n "$rxe0_before" ] && [ "$(node_of rxe0)" = "$rxe0_before" ] &&
   [ -c "/dev/infiniband/$rxe0_before" ]; then
	ktap_test_pass other_device_keeps_its_node
else
	ktap_test_fail other_device_keeps_its_node
fi

rdma link add rxe1 type rxe netdev vethB
rxe1_after=$(node_of rxe1)
ktap_print_msg "after re-adding rxe1: ${rxe1_after:-none}"
if [ -n "$rxe1_before" ] && [ "$rxe1_after" = "$rxe1_before" ] &&
   [ -c "/dev/infiniband/$rxe1_after" ]; then
	ktap_test_pass readded_device_gets_the_lowest_free_number
else
	ktap_test_fail readded_device_gets_the_lowest_free_number
fi

ktap_finished
