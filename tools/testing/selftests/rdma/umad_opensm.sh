#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The real management stack over the umad driver, unchanged: opensm
# brings up ib_loopback's fabric (port_init=1: the ports start INIT, with no
# LID and no SM) through the driver's umad and issm nodes, and
# infiniband-diags ask the subnet what a user asks it, from the other end of
# the link: ibstat, sminfo, smpquery by LID and by directed route,
# ibnetdiscover, saquery (the SA's answers come in RMPP segments), perfquery
# (the PMA's counters move), ibping, ibaddr. Then opensm is killed and
# started again, and the subnet comes back.
#
# Differential: each tool's output, with what legitimately differs masked
# (times, counters, opensm's activity count), is kept per driver in
# /tmp/umad_opensm.<driver>; the driver that runs second in the boot compares
# its outputs with the first's, and so does the list of opensm's errors.
# Leaves ib_loopback unloaded.
. "$(dirname "$0")/../kselftest/ktap_helpers.sh"

IB=/sys/class/infiniband
DRIVER=c
grep -q '^ib_umad_rs ' /proc/modules && DRIVER=rust
OUT=/tmp/umad_opensm.$DRIVER
OSM_DIR=/tmp/opensm
# opensm's own files (its guid2lid cache) there, not in the host's
# /var/cache/opensm.
export OSM_CACHE_DIR=$OSM_DIR/cache
# How long opensm may take to bring the subnet up, in seconds, counted in
# sleeps of a second, so never less: the wait ends as soon as the subnet is
# up, and a debugging kernel under emulation may take a minute.
UP_TIMEOUT=200
# The SM's port and the port the diags ask from: the two ends of a cable.
SM_CA=iblo0 SM_PORT=1
CA=iblo1 PORT=1
# Every output compared with the other driver's, in the order made.
OUTPUTS="ibstat sminfo nodeinfo_by_lid portinfo_by_lid nodedesc_by_lid
	pkeys_by_lid nodeinfo_by_dr portinfo_by_dr nodedesc_by_dr
	ibnetdiscover saquery_node_records saquery_path_records perfquery
	perfquery_extended ibping ibaddr ibstat_after_restart opensm_errors"

ktap_print_header
skip_all() { # why
	ktap_skip_all "$1"
	exit "$KSFT_SKIP"
}
for need in opensm ibstat sminfo smpquery ibnetdiscover saquery perfquery ibping ibaddr; do
	command -v $need > /dev/null || skip_all "no $need (opensm, infiniband-diags)"
done
modinfo ib_loopback > /dev/null 2>&1 ||
	skip_all "no ib_loopback, the test HCA (CONFIG_INFINIBAND_LOOPBACK)"

osm_pid=
ping_pid=
cleanup() {
	[ -z "$ping_pid" ] || kill "$ping_pid" 2>/dev/null
	[ -z "$osm_pid" ] || stop_opensm
	grep -q '^ib_loopback ' /proc/modules && rmmod ib_loopback
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The value of a port's sysfs attribute.
port_attr() { # ca port attribute
	cat "$IB/$1/ports/$2/$3" 2>/dev/null
}

# Masks what differs from run to run and from driver to driver by right:
# times, counters, opensm's activity count, ibnetdiscover's date.
mask() {
	sed -e 's/activity count [0-9]*/activity count N/' \
	    -e 's/time [0-9.]* ms/time T ms/' \
	    -e 's|rtt min/avg/max = .*|rtt min/avg/max = T|' \
	    -e '/^#.*generated/d'
}

# Runs a tool, keeps its masked output as $OUT/<name>, and passes the test
# <name> if it exits 0 and its output has the line(s) grep -E -q $3 finds.
check_tool() { # name pattern tool args...
	name=$1 pattern=$2
	shift 2
	"$@" > "$OUT/$name.raw" 2>&1
	status=$?
	mask < "$OUT/$name.raw" > "$OUT/$name"
	if [ $status = 0 ] && grep -E -q "$pattern" "$OUT/$name.raw"; then
		ktap_test_pass "$name"
	else
		ktap_print_msg "$*: exit $status, output:"
		sed 's/^/# /' "$OUT/$name.raw"
		ktap_test_fail "$name"
	fi
}

# -d2: opensm flushes its log after each line, so that "SUBNET UP" shows
# when it happens.
start_opensm() {
	mkdir -p "$OSM_DIR"
	: > "$OSM_DIR/opensm.log"
	opensm -d2 -g "$SM_GUID" -f "$OSM_DIR/opensm.log" \
		> "$OSM_DIR/opensm.out" 2>&1 &
	osm_pid=$!
}

stop_opensm() {
	kill "$osm_pid" 2>/dev/null
	wait "$osm_pid" 2>/dev/null
	osm_pid=
}

# Waits for opensm's "SUBNET UP", counting those seen before: $1.
wait_subnet_up() { # earlier count
	i=0
	while [ "$i" -lt "$UP_TIMEOUT" ]; do
		n=$(grep -c 'SUBNET UP' "$OSM_DIR/opensm.log")
		[ "$n" -gt "$1" ] && return 0
		kill -0 "$osm_pid" 2>/dev/null || return 1
		sleep 1
		i=$((i + 1))
	done
	return 1
}

osm_failed() { # test name
	ktap_print_msg "opensm's output:"
	sed 's/^/# /' "$OSM_DIR/opensm.out"
	ktap_print_msg "the end of opensm's log:"
	tail -n 40 "$OSM_DIR/opensm.log" | sed 's/^/# /'
	ktap_test_fail "$1"
}

nout=$(echo $OUTPUTS | wc -w)
# 10 checks, a check of each output but opensm's errors, a comparison of each.
ktap_set_plan $((10 + nout - 1 + nout))

rm -rf "$OUT" "$OSM_DIR"
mkdir -p "$OUT"
grep -q '^ib_loopback ' /proc/modules && rmmod ib_loopback

# 1: a fabric before its SM: cabled ports INIT, no LID, no SM LID.
ok=1
if modprobe ib_loopback ndevs=2 nports=2 port_init=1; then
	for d in 0 1; do
		for p in 1 2; do
			state=$(port_attr iblo$d $p state)
			lid=$(port_attr iblo$d $p lid)
			sm=$(port_attr iblo$d $p sm_lid)
			if [ "$state" != "2: INIT" ] || [ "$lid" != 0x0 ] ||
			   [ "$sm" != 0x0 ]; then
				ktap_print_msg "iblo$d/$p: state '$state' lid $lid sm_lid $sm," \
					"want 2: INIT, 0x0, 0x0"
				ok=0
			fi
		done
	done
else
	ok=0
fi
[ $ok = 1 ] && ktap_test_pass "ports_start_init_without_lids" ||
	ktap_exit_fail_msg "ib_loopback port_init=1 did not start as a fabric without an SM"

# 2: a port without a cable is DOWN, Polling: iblo2 has no iblo3, so its
# ports 1 and 2 are cabled to each other, and 3 to nothing.
echo 3 > /sys/kernel/debug/ib_loopback/add_device
states="$(port_attr iblo2 1 state)/$(port_attr iblo2 3 state)/$(port_attr iblo2 3 phys_state)"
echo iblo2 > /sys/kernel/debug/ib_loopback/remove_device
[ "$states" = "2: INIT/1: DOWN/2: Polling" ] &&
	ktap_test_pass "an_uncabled_port_is_down" || {
	ktap_print_msg "iblo2 port 1 state/port 3 state/port 3 phys_state: $states"
	ktap_test_fail "an_uncabled_port_is_down"
}

# 3: opensm brings the subnet up through the SM port's umad and issm nodes.
# The port GUID: the lower half of its GID.
SM_GUID=0x$(port_attr "$SM_CA" "$SM_PORT" gids/0 | cut -d: -f5-8 | tr -d :)
start_opensm
if wait_subnet_up 0; then
	ktap_test_pass "opensm_brings_the_subnet_up"
else
	osm_failed "opensm_brings_the_subnet_up"
	ktap_exit_fail_msg "no subnet: the diags have nothing to ask"
fi

# 4: both ends ACTIVE, with LIDs and the SM's LID, as sysfs shows them.
sm_lid=$(port_attr "$SM_CA" "$SM_PORT" lid)
ok=1
for end in "$SM_CA $SM_PORT" "$CA $PORT"; do
	set -- $end
	state=$(port_attr "$1" "$2" state)
	lid=$(port_attr "$1" "$2" lid)
	sm=$(port_attr "$1" "$2" sm_lid)
	if [ "$state" != "4: ACTIVE" ] || [ "$lid" = 0x0 ] || [ "$sm" != "$sm_lid" ]; then
		ktap_print_msg "$1/$2: state '$state' lid $lid sm_lid $sm," \
			"want 4: ACTIVE, a LID, $sm_lid"
		ok=0
	fi
done
[ $ok = 1 ] && ktap_test_pass "both_ends_active_with_lids" ||
	ktap_test_fail "both_ends_active_with_lids"
lid=$(port_attr "$CA" "$PORT" lid)
sm_dec=$((sm_lid))

# The diags, from the other end of the cable.
at="-C $CA -P $PORT"
check_tool ibstat "State: Active" ibstat "$CA" "$PORT"
check_tool sminfo "sm lid $sm_dec .*SMINFO_MASTER" sminfo $at
check_tool nodeinfo_by_lid "NodeType:.*Channel Adapter" smpquery $at nodeinfo "$sm_dec"
check_tool portinfo_by_lid "LinkState:.*Active" smpquery $at portinfo "$sm_dec"
check_tool nodedesc_by_lid "ib_loopback iblo0" smpquery $at nodedesc "$sm_dec"
check_tool pkeys_by_lid "0xffff" smpquery $at pkeys "$sm_dec"
check_tool nodeinfo_by_dr "NodeType:.*Channel Adapter" smpquery $at -D nodeinfo 0,1
check_tool portinfo_by_dr "LinkState:.*Active" smpquery $at -D portinfo 0,1
check_tool nodedesc_by_dr "ib_loopback iblo0" smpquery $at -D nodedesc 0,1
check_tool ibnetdiscover "^Ca.*ib_loopback iblo0" ibnetdiscover $at

# 5: ibnetdiscover found every node: the two CAs of the subnet.
n=$(grep -c '^Ca' "$OUT/ibnetdiscover")
[ "$n" = 2 ] && ktap_test_pass "ibnetdiscover_finds_both_nodes" || {
	ktap_print_msg "$n CAs found, want 2"
	ktap_test_fail "ibnetdiscover_finds_both_nodes"
}

# The SA's tables: more than one MAD's worth, so opensm answers through
# RMPP (and its umad agent) and saquery reassembles through ours.
check_tool saquery_node_records "NodeRecord dump" saquery $at NodeRecord
check_tool saquery_path_records "PathRecord dump" saquery $at PathRecord

# 6: every node's record, every path between the two ports.
n=$(grep -c 'NodeRecord dump' "$OUT/saquery_node_records")
p=$(grep -c 'PathRecord dump' "$OUT/saquery_path_records")
[ "$n" = 2 ] && [ "$p" -ge 4 ] && ktap_test_pass "saquery_tables_are_whole" || {
	ktap_print_msg "$n NodeRecords (want 2), $p PathRecords (want 4 or more)"
	ktap_test_fail "saquery_tables_are_whole"
}

# The PMA's counters, of this port and of the SM's; the values are masked
# in what is compared, and test 7 checks they move.
check_tool perfquery "PortXmitPkts" perfquery $at
check_tool perfquery_extended "PortXmitData" perfquery $at -x "$sm_dec" "$SM_PORT"
counter() { # file name
	sed -n "s/^$2:\.*\([0-9]*\)$/\1/p" "$1"
}
before=$(counter "$OUT/perfquery.raw" PortXmitPkts)
perfquery $at > "$OUT/perfquery.again" 2>&1
after=$(counter "$OUT/perfquery.again" PortXmitPkts)
[ -n "$before" ] && [ -n "$after" ] && [ "$after" -gt "$before" ] &&
	ktap_test_pass "perfquery_counters_move" || {
	ktap_print_msg "PortXmitPkts $before, then $after"
	ktap_test_fail "perfquery_counters_move"
}
sed -i 's/^\([A-Za-z]*\):\.*[0-9]*$/\1:N/' "$OUT/perfquery" "$OUT/perfquery_extended"

# ibping: a server on the SM's port, pinged from here by LID. It answers
# once it has registered, which a slow guest takes longer to do: single
# pings until one is answered (30 at most), so that the three checked do
# not race its start.
ibping -S -C "$SM_CA" -P "$SM_PORT" > /dev/null 2>&1 &
ping_pid=$!
i=0
while [ $i -lt 30 ] && ! ibping $at -c 1 "$sm_dec" 2>/dev/null | grep -q ' 1 received'; do
	i=$((i + 1))
done
check_tool ibping "3 received" ibping $at -c 3 "$sm_dec"
kill "$ping_pid"
ping_pid=
check_tool ibaddr "LID start $sm_lid" ibaddr $at "$sm_dec"

# 8-9: opensm killed: its port gives IsSM back; started again, the subnet
# comes back with the same LIDs.
stop_opensm
cap=$(smpquery $at portinfo "$sm_dec" 2>/dev/null | sed -n 's/^CapMask:\.*//p')
case $cap in
*IsSM*)
	ktap_print_msg "CapMask after opensm ended: $cap"
	ktap_test_fail "opensm_gone_its_port_is_no_sm" ;;
*) ktap_test_pass "opensm_gone_its_port_is_no_sm" ;;
esac
ups=$(grep -c 'SUBNET UP' "$OSM_DIR/opensm.log")
mv "$OSM_DIR/opensm.log" "$OSM_DIR/opensm.log.1"
start_opensm
if wait_subnet_up 0; then
	ktap_test_pass "opensm_restarted_brings_the_subnet_up_again"
else
	osm_failed "opensm_restarted_brings_the_subnet_up_again"
fi
check_tool ibstat_after_restart "Base lid: $((lid))" ibstat "$CA" "$PORT"

# 10: the SA answers again.
if saquery $at NodeRecord > /dev/null 2>&1; then
	ktap_test_pass "saquery_after_restart"
else
	ktap_test_fail "saquery_after_restart"
fi
stop_opensm

# opensm's errors, both runs, without times and thread ids.
cat "$OSM_DIR/opensm.log.1" "$OSM_DIR/opensm.log" |
	sed -n 's/^.*\] 0x[0-9a-f]* -> \(.*ERR.*\)$/\1/p' > "$OUT/opensm_errors"
if [ -s "$OUT/opensm_errors" ]; then
	ktap_print_msg "opensm's errors ($ups SUBNET UP in the first run):"
	sed 's/^/# /' "$OUT/opensm_errors"
fi

# What the other driver's run in this boot printed, where it ran first.
other=c
[ "$DRIVER" = c ] && other=rust
for name in $OUTPUTS; do
	test=output_matches_the_other_driver_$name
	if [ ! -e "/tmp/umad_opensm.$other/$name" ]; then
		ktap_print_msg "no output of $other's run in this boot yet"
		ktap_test_skip "$test"
	elif cmp -s "/tmp/umad_opensm.$other/$name" "$OUT/$name"; then
		ktap_test_pass "$test"
	else
		diff -u "/tmp/umad_opensm.$other/$name" "$OUT/$name" | sed 's/^/# /'
		ktap_test_fail "$test"
	fi
done
ktap_finished
