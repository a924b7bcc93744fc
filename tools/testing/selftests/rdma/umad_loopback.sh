#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The umad driver on InfiniBand ports, which soft-RoCE does not have: the
# test-only ib_loopback HCA (CONFIG_INFINIBAND_LOOPBACK) with 2 devices of
# 2 ports each. Its ports get umad and issm nodes; holding an issm node open
# sets IsSM in the port's capability mask; devices added and removed at
# runtime take their nodes with them, an open umad file notwithstanding; a
# 70-port device gets numbers from the dynamic region; and the module loads
# and unloads cleanly many times. Leaves ib_loopback unloaded.
. "$(dirname "$0")/../kselftest/ktap_helpers.sh"

CLASS=/sys/class/infiniband_mad
IB=/sys/class/infiniband
DBG=/sys/kernel/debug/ib_loopback
LOAD_CYCLES=${LOAD_CYCLES:-50}
IB_PORT_SM=2
BASE_LID=1
LID_STRIDE=128

# "ibdev/port name" of every umad (or issm, $1) node, sorted. Builtins
# only in the loop: forks are slow under emulation with KASAN.
nodes() {
	for n in "$CLASS"/${1:-umad}*; do
		[ -e "$n/ibdev" ] || continue
		read -r ibdev < "$n/ibdev"
		read -r port < "$n/port"
		echo "$ibdev/$port ${n##*/}"
	done | sort
}

# Lists of the nodes now, for node_of.
snapshot() {
	UMADS=$(nodes umad)
	ISSMS=$(nodes issm)
}

# The node ($1: umad or issm) of IB device $2, port $3 in the last
# snapshot; empty if none.
node_of() {
	if [ "$1" = umad ]; then list=$UMADS; else list=$ISSMS; fi
	echo "$list" | sed -n "s|^$2/$3 ||p"
}

# Sets want_minor to the minor of node $1 (umad|issm) number $2: below 64
# on major 231, N (umad) or 64+N (issm); above, on the dynamic major, N-64
# (umad) or 8128+N-64 (issm).
expected_minor() {
	if [ "$2" -lt 64 ]; then
		[ "$1" = umad ] && want_minor=$2 || want_minor=$(($2 + 64))
	else
		[ "$1" = umad ] && want_minor=$(($2 - 64)) ||
			want_minor=$((8128 + $2 - 64))
	fi
}

# Checks, in the last snapshot, that port $2 of device $1 has its umad and
# issm nodes, same number, char devices with the right numbers; $3 is the
# major expected for numbers >= 64 (empty: any but 231). Sets num to the
# node number; tells what is wrong.
check_port_nodes() {
	umad=$(node_of umad "$1" "$2")
	issm=$(node_of issm "$1" "$2")
	num=${umad#umad}
	if [ -z "$umad" ] || [ "$num" != "${issm#issm}" ]; then
		ktap_print_msg "$1/$2: umad '$umad' issm '$issm'"
		return 1
	fi
	for kind in umad issm; do
		read -r dev < "$CLASS/$kind$num/dev"
		major=${dev%:*}
		minor=${dev#*:}
		expected_minor $kind "$num"
		if [ "$num" -lt 64 ]; then
			want_major=231
		elif [ "$major" = 231 ]; then
			want_major=not-231
		else
			want_major=${3:-$major}
		fi
		if [ "$major" != "$want_major" ] || [ "$minor" != "$want_minor" ] ||
		   [ ! -c "/dev/infiniband/$kind$num" ]; then
			ktap_print_msg "$1/$2: $kind$num dev $dev"
			return 1
		fi
	done
}

cap_mask() { # dev port
	echo $(($(cat "$IB/$1/ports/$2/cap_mask")))
}

has_sm_bit() { # dev port
	[ $(($(cap_mask "$1" "$2") & IB_PORT_SM)) -ne 0 ]
}

loaded() {
	grep -q '^ib_loopback ' /proc/modules
}

ktap_print_header
if ! modinfo ib_loopback > /dev/null 2>&1; then
	ktap_skip_all "no ib_loopback, the test HCA (CONFIG_INFINIBAND_LOOPBACK)"
	exit "$KSFT_SKIP"
fi
ktap_set_plan 13

other_nodes=$(nodes)
ktap_print_msg "nodes before: $(echo $other_nodes)"

# 1
if modprobe ib_loopback ndevs=2 nports=2 base_lid=$BASE_LID; then
	ktap_test_pass "insmod_2_devices_of_2_ports"
else
	ktap_exit_fail_msg "modprobe ib_loopback failed"
fi

# 2: iblo0 and iblo1, InfiniBand ports, ACTIVE, LID base + 128 * i + p - 1.
ok=1
for d in 0 1; do
	for p in 1 2; do
		port=$IB/iblo$d/ports/$p
		lid=$((BASE_LID + LID_STRIDE * d + p - 1))
		ll=$(cat "$port/link_layer" 2>/dev/null)
		state=$(cat "$port/state" 2>/dev/null)
		got_lid=$(($(cat "$port/lid" 2>/dev/null || echo -1)))
		if [ "$ll" != InfiniBand ] || [ "$state" != "4: ACTIVE" ] ||
		   [ "$got_lid" != "$lid" ]; then
			ktap_print_msg "iblo$d/$p: link_layer '$ll' state '$state' lid $got_lid," \
				"want InfiniBand, 4: ACTIVE, $lid"
			ok=0
		fi
	done
done
[ -e "$IB/iblo0/ports/3" ] && { ktap_print_msg "iblo0 has a port 3"; ok=0; }
[ -e "$IB/iblo2" ] && { ktap_print_msg "there is an iblo2"; ok=0; }
[ $ok = 1 ] && ktap_test_pass "devices_have_infiniband_active_ports_with_lids" ||
	ktap_test_fail "devices_have_infiniband_active_ports_with_lids"

# 3: every port has umadN and issmN with the same N, nodes in /dev.
ok=1
snapshot
for d in 0 1; do
	for p in 1 2; do
		check_port_nodes "iblo$d" $p || ok=0
	done
done
[ $ok = 1 ] && ktap_test_pass "every_port_has_umad_and_issm_nodes" ||
	ktap_test_fail "every_port_has_umad_and_issm_nodes"

# 4, 5: IsSM while an issm file is held open, on that port only.
issm=$(node_of issm iblo1 2)
before=$(cap_mask iblo1 2)
ok=0
if [ -n "$issm" ] && ! has_sm_bit iblo1 2; then
	exec 3< "/dev/infiniband/$issm"
	if has_sm_bit iblo1 2 && ! has_sm_bit iblo1 1 && ! has_sm_bit iblo0 2 &&
	   [ $(cap_mask iblo1 2) = $((before | IB_PORT_SM)) ]; then
		ok=1
	fi
	ktap_print_msg "iblo1/2 cap_mask $before, with $issm open $(cap_mask iblo1 2)"
	exec 3<&-
fi
[ $ok = 1 ] && ktap_test_pass "open_issm_sets_issm_in_cap_mask_of_its_port" ||
	ktap_test_fail "open_issm_sets_issm_in_cap_mask_of_its_port"
if [ -n "$issm" ] && [ "$(cap_mask iblo1 2)" = "$before" ]; then
	ktap_test_pass "closed_issm_clears_issm_in_cap_mask"
else
	ktap_test_fail "closed_issm_clears_issm_in_cap_mask"
fi

# 6: the fault knobs take values and give them back.
ok=1
for knob in drop_every_nth drop_next delay_ms; do
	echo 7 > "$DBG/$knob" && [ "$(cat "$DBG/$knob")" = 7 ] || ok=0
	echo 0 > "$DBG/$knob" && [ "$(cat "$DBG/$knob")" = 0 ] || ok=0
done
echo 60001 > "$DBG/delay_ms" 2>/dev/null && ok=0
grep -q '^tx [0-9]' "$DBG/stats" || ok=0
[ $ok = 1 ] && ktap_test_pass "debugfs_knobs_read_back" ||
	ktap_test_fail "debugfs_knobs_read_back"

# 7: a device added at runtime gets the lowest free index and its nodes.
before=$(nodes)
ok=0
if echo 3 > "$DBG/add_device" && [ -e "$IB/iblo2/ports/3" ] &&
   [ ! -e "$IB/iblo2/ports/4" ] &&
   [ "$(cat "$DBG/devices" | sed -n 's/^iblo2 //p')" = "3 $((BASE_LID + 2 * LID_STRIDE))" ]; then
	ok=1
	snapshot
	for p in 1 2 3; do
		check_port_nodes iblo2 $p || ok=0
	done
fi
[ $ok = 1 ] && ktap_test_pass "add_device_makes_iblo2_with_nodes" ||
	ktap_test_fail "add_device_makes_iblo2_with_nodes"

# 8: removing it, with its umad file open, takes its nodes and only them.
snapshot
umad=$(node_of umad iblo2 1)
ok=0
if [ -n "$umad" ]; then
	exec 4<> "/dev/infiniband/$umad"
	if echo iblo2 > "$DBG/remove_device" && [ ! -e "$IB/iblo2" ] &&
	   [ ! -e "$CLASS/$umad" ] && [ ! -e "/dev/infiniband/$umad" ] &&
	   [ "$(nodes)" = "$(echo "$before" | grep -v '^iblo2/')" ]; then
		ok=1
	fi
	exec 4>&-
fi
echo iblo2 > "$DBG/remove_device" 2>/dev/null && ok=0
[ $ok = 1 ] && ktap_test_pass "remove_device_with_open_umad_takes_only_its_nodes" ||
	ktap_test_fail "remove_device_with_open_umad_takes_only_its_nodes"

# 9, 10: a 70-port device: nodes numbered past 63 are on the dynamic major.
ok=0
t0=$(date +%s)
if echo 70 > "$DBG/add_device" && [ -e "$IB/iblo2/ports/70" ]; then
	ktap_print_msg "adding 70 ports took $(($(date +%s) - t0)) s"
	ok=1
	snapshot
	high=$(echo "$UMADS" | sed -n 's|^iblo2/[0-9]* umad||p' | sort -n | tail -1)
	dyn=
	for p in $(seq 70); do
		check_port_nodes iblo2 "$p" $dyn || { ok=0; break; }
		[ "$num" -ge 64 ] && [ -z "$dyn" ] && dyn=$major
	done
	ktap_print_msg "iblo2: highest umad$high, dynamic major ${dyn:-none}"
	[ "${high:-0}" -ge 64 ] && [ -n "$dyn" ] || ok=0
fi
[ $ok = 1 ] && ktap_test_pass "seventy_port_device_gets_dynamic_numbers" ||
	ktap_test_fail "seventy_port_device_gets_dynamic_numbers"
echo 2 > "$DBG/remove_device"
if [ ! -e "$IB/iblo2" ] && [ -z "$(nodes | grep '^iblo2/')" ] &&
   [ -z "$(nodes issm | grep '^iblo2/')" ]; then
	ktap_test_pass "seventy_port_device_removed_with_its_nodes"
else
	ktap_test_fail "seventy_port_device_removed_with_its_nodes"
fi

# 11: rmmod takes every loopback device and node; others stay as they were.
if rmmod ib_loopback && ! loaded && [ ! -e "$IB/iblo0" ] &&
   [ "$(nodes)" = "$other_nodes" ] && [ -z "$(nodes issm)" ]; then
	ktap_test_pass "rmmod_removes_devices_and_nodes"
else
	ktap_test_fail "rmmod_removes_devices_and_nodes"
fi

# 12: load and unload cycles with the umad driver present.
ok=1
i=0
t0=$(date +%s)
while [ $i -lt "$LOAD_CYCLES" ]; do
	if ! modprobe ib_loopback || [ ! -e "$IB/iblo1/ports/2" ] || ! rmmod ib_loopback; then
		ktap_print_msg "cycle $i failed"
		ok=0
		break
	fi
	i=$((i + 1))
done
ktap_print_msg "$i cycles took $(($(date +%s) - t0)) s"
[ $ok = 1 ] && [ "$(nodes)" = "$other_nodes" ] &&
	ktap_test_pass "load_unload_${LOAD_CYCLES}_cycles" ||
	ktap_test_fail "load_unload_${LOAD_CYCLES}_cycles"

# 13: bad parameters are refused.
ok=1
for args in nports=0 nports=129 ndevs=65 base_lid=0 base_lid=49152; do
	if modprobe ib_loopback $args 2>/dev/null; then
		ktap_print_msg "modprobe ib_loopback $args succeeded"
		ok=0
	fi
	loaded && rmmod ib_loopback
done
[ $ok = 1 ] && ktap_test_pass "bad_parameters_refused" ||
	ktap_test_fail "bad_parameters_refused"

loaded && rmmod ib_loopback
ktap_finished
