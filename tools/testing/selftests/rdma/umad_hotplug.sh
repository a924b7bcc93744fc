#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# umad nodes follow their IB device: removing the pair's server takes its
# node away and leaves the client's; adding it back gives it the lowest free
# number again. The pair is umad_pair.sh's.
. "$(dirname "$0")/../kselftest/ktap_helpers.sh"
. "$(dirname "$0")/umad_pair.sh"

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
pair_setup
ktap_set_plan 3

client_before=$(node_of $CLIENT)
server_before=$(node_of $SERVER)
ktap_print_msg "before: $CLIENT ${client_before:-none}, $SERVER ${server_before:-none}"

pair_remove_server
if [ -n "$server_before" ] && [ -z "$(node_of $SERVER)" ] &&
   [ ! -e "/dev/infiniband/$server_before" ] &&
   [ ! -e "$CLASS/$server_before" ]; then
	ktap_test_pass node_goes_with_its_device
else
	ktap_test_fail node_goes_with_its_device
fi

if [ -n "$client_before" ] && [ "$(node_of $CLIENT)" = "$client_before" ] &&
   [ -c "/dev/infiniband/$client_before" ]; then
	ktap_test_pass other_device_keeps_its_node
else
	ktap_test_fail other_device_keeps_its_node
fi

pair_add_server
server_after=$(node_of $SERVER)
ktap_print_msg "after adding $SERVER back: ${server_after:-none}"
if [ -n "$server_before" ] && [ "$server_after" = "$server_before" ] &&
   [ -c "/dev/infiniband/$server_after" ]; then
	ktap_test_pass readded_device_gets_the_lowest_free_number
else
	ktap_test_fail readded_device_gets_the_lowest_free_number
fi

ktap_finished
