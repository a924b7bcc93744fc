#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The umad driver under stress of coming and going: the pair's server
# removed and added back many times while its umad file is open and its
# sysfs attributes are being read, then the driver module unloaded and
# loaded many times with the devices present. Correctness is the nodes
# being right afterwards, and no kernel report (KASAN, lockdep, kmemleak)
# meanwhile.
# Needs umad_pair.sh's pair, and the loaded umad driver where modprobe finds
# it; DEVICE_CYCLES sets the soak length.
. "$(dirname "$0")/../kselftest/ktap_helpers.sh"
. "$(dirname "$0")/umad_pair.sh"

CLASS=/sys/class/infiniband_mad
DEVICE_CYCLES=${DEVICE_CYCLES:-200}
MODULE_CYCLES=${MODULE_CYCLES:-50}

# "ibdev/port" of every umad node, sorted.
nodes() {
	for n in "$CLASS"/umad*; do
		[ -e "$n/ibdev" ] && echo "$(cat "$n/ibdev")/$(cat "$n/port") $(basename "$n")"
	done | sort
}

# Passes test $1 if $2 is 1 and the nodes are what they were at the start.
verdict() {
	after=$(nodes)
	if [ "$2" = 1 ] && [ "$after" = "$before" ]; then
		ktap_test_pass "$1"
	else
		ktap_print_msg "after $i cycles: $(echo $after)"
		ktap_test_fail "$1"
	fi
}

ktap_print_header
pair_setup
ktap_set_plan 2

before=$(nodes)
ktap_print_msg "nodes: $(echo $before)"

# Readers of every node's attributes, racing the removals.
(while :; do cat "$CLASS"/*/ibdev "$CLASS"/*/port > /dev/null 2>&1; done) &
reader=$!
ok=1
i=0
start=$(date +%s)
while [ $i -lt "$DEVICE_CYCLES" ]; do
	node=$(nodes | sed -n "s|^$SERVER/1 ||p")
	if [ -z "$node" ]; then
		ktap_print_msg "cycle $i: $SERVER has no umad node"
		ok=0
		break
	fi
	exec 3<> "/dev/infiniband/$node"
	pair_remove_server || { ok=0; break; }
	exec 3>&-
	pair_add_server || { ok=0; break; }
	i=$((i + 1))
done
kill $reader
wait $reader 2> /dev/null
ktap_print_msg "$i device cycles in $(($(date +%s) - start))s"
verdict device_cycles_with_open_files_and_sysfs_readers $ok

module=$(sed -n 's/^\(ib_umad\(_rs\)\?\) .*/\1/p' /proc/modules)
if [ -z "$module" ]; then
	# Built in, or not there at all (then the nodes above were none).
	ktap_print_msg "no umad driver loaded as a module"
	ktap_test_skip module_cycles_with_devices_present
	ktap_finished
fi
ok=1
i=0
start=$(date +%s)
while [ $ok = 1 ] && [ $i -lt "$MODULE_CYCLES" ]; do
	rmmod "$module" && modprobe "$module" || ok=0
	i=$((i + 1))
done
ktap_print_msg "$i module cycles in $(($(date +%s) - start))s"
verdict module_cycles_with_devices_present $ok

ktap_finished
