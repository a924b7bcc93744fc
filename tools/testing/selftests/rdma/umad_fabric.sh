#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A subnet manager at work on a simulated fabric, through the kernel's real
# MAD path: ibsim simulates the fabric; ib_loopback's wired device is the
# HCA of one of its hosts (umad_ibsim_wire carries the wire); Debian's opensm
# brings the subnet up through the umad driver and the MAD layer on that
# HCA, and infiniband-diags read it. Each fabric of UMAD_FABRICS (default:
# one of ibsim's examples and a 2-level fat tree of 64 hosts):
#   example:NAME       ibsim's net-examples/NAME, attached at its Hca1
#   fat:LEVELS:K:HOSTS a fat tree (umad_fat_tree.sh), attached at its H-1
# For each: opensm's SUBNET UP; ibnetdiscover finds every link of the
# topology (a diff); saquery's NodeRecord table (RMPP) has every node;
# after ibsim's console unlinks a switch's port, opensm sweeps again and
# the port is Down, and after it links it again, Active; and no response
# came back that matched no request the kernel sent. Then, on the first
# fabric, faults in the middle of a sweep: ibsim dies, umad_ibsim_wire dies, the
# device is removed; opensm sweeps the fabric up again once it is back.
# The times of each fabric, for the benchmark, in
# /tmp/umad_fabric.<driver>/times.
# Leaves ib_loopback unloaded.
. "$(dirname "$0")/../kselftest/ktap_helpers.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
IB=/sys/class/infiniband
DBG=/sys/kernel/debug/ib_loopback
DRIVER=c
grep -q '^ib_umad_rs ' /proc/modules && DRIVER=rust
OUT=/tmp/umad_fabric.$DRIVER
UMAD_FABRICS=${UMAD_FABRICS:-example:net.2sw2path4hca fat:2:16:64}
EXAMPLES=${IBSIM_EXAMPLES:-/usr/share/doc/ibsim-utils/net-examples}
# ib_loopback's first device's GUIDs, which the attached host takes: the
# subnet manager finds its own port in the fabric by them.
CA=iblo0
NODE_GUID=0x49424c4f00000000
PORT_GUID=0x49424c4f00000001
export IBSIM_SOCKNAME=umad_fabric.$$
export OSM_CACHE_DIR=$OUT/cache
# How long opensm may take to bring a fabric up, in seconds: generous,
# since a debugging kernel under emulation is slow; the wait ends at
# SUBNET UP.
UP_TIMEOUT=${UMAD_FABRIC_UP_TIMEOUT:-300}

ktap_print_header
skip_all() { # why
	ktap_skip_all "$1"
	exit "$KSFT_SKIP"
}
for need in ibsim opensm ibnetdiscover saquery smpquery; do
	command -v $need > /dev/null || skip_all "no $need (ibsim-utils, opensm, infiniband-diags)"
done
[ -x "$HERE/umad_ibsim_wire" ] || skip_all "no umad_ibsim_wire"
grep -q '^ib_loopback ' /proc/modules &&
	skip_all "ib_loopback is loaded already: its devices are someone else's"
modprobe ib_loopback ndevs=0 2>/dev/null ||
	skip_all "no ib_loopback, the test HCA (CONFIG_INFINIBAND_LOOPBACK)"
if [ ! -e "$DBG/wire" ]; then
	rmmod ib_loopback
	skip_all "no debugfs, or an ib_loopback without a wire"
fi

ibsim_pid= wire_pid= osm_pid=
# Stops a program: TERM, and KILL if it is still there after 10 seconds.
stop() { # pid variable
	eval "pid=\$$1"
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 10 ]; do
		sleep 1
		i=$((i + 1))
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	eval "$1="
}
stop_all() {
	stop osm_pid
	stop wire_pid
	[ -z "$ibsim_pid" ] || echo quit >&3
	stop ibsim_pid
	exec 3>&-
}
cleanup() {
	stop_all
	grep -q '^ib_loopback ' /proc/modules && rmmod ib_loopback
}
trap cleanup EXIT
trap 'exit 1' INT TERM

port_attr() { # attribute
	cat "$IB/$CA/ports/1/$1" 2>/dev/null
}

now_ms() {
	awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime
}

# Waits up to $2 seconds for the command $1 to succeed.
wait_for() { # command seconds
	i=0
	while ! eval "$1"; do
		[ "$i" -lt "$2" ] || return 1
		sleep 1
		i=$((i + 1))
	done
}

# The links of a topology in ibsim's format or of ibnetdiscover's output,
# one "A[p] B[q]" a line, sorted: nodes by their description, the last
# quoted name of a node's line or of a port's (ibnetdiscover's comment
# names it last; ibsim describes a node by its id, the only name there), a
# remote port 1 where none is named.
links() { # file
	awk '
	function name(line,   last) {
		while (match(line, /"[^"]*"/)) {
			last = substr(line, RSTART + 1, RLENGTH - 2)
			line = substr(line, RSTART + RLENGTH)
		}
		return last
	}
	/^(Switch|Hca|Ca|Rt)[ \t]/ { node = name($0); next }
	/^\[[0-9]+\]/ && node != "" {
		match($0, /^\[[0-9]+\]/)
		local = substr($0, 2, RLENGTH - 2)
		rport = 1
		if (match($0, /"[^"]*"\[[0-9]+\]/)) {
			s = substr($0, RSTART, RLENGTH)
			sub(/^"[^"]*"\[/, "", s)
			rport = substr(s, 1, length(s) - 1)
		}
		print node "[" local "] " name($0) "[" rport "]"
		next
	}
	/^[ \t]*$/ { node = "" }' "$1" | sort
}

# The nodes of a topology.
count_nodes() { # file
	awk '/^(Switch|Hca|Ca)[ \t]/ { n++ } END { print n + 0 }' "$1"
}

# The topology of fabric $1 in $OUT/topology, its SM host's id in $node.
topology() { # fabric
	case $1 in
	example:*)
		node=Hca1
		[ -r "$EXAMPLES/${1#example:}" ] || return 1
		awk -v guid=$NODE_GUID '/^Hca[ \t].*"Hca1"/ { print "caguid=" guid } { print }' \
			"$EXAMPLES/${1#example:}" > "$OUT/topology"
		;;
	fat:*)
		node=H-1
		set -- $(echo "$1" | tr : ' ')
		sh "$HERE/umad_fat_tree.sh" "$2" "$3" "$4" $NODE_GUID > "$OUT/topology"
		;;
	*) return 1 ;;
	esac
}

# ibsim on $OUT/topology, its console on fd 3 (a FIFO held open: at EOF it
# would spin), sized for the topology.
start_ibsim() {
	set -- $(awk '/^(Switch|Hca|Ca)[ \t]/ { n++; p += $2 + 1; if ($1 == "Switch") s++ }
		END { print n + 0, s + 0, p + 0 }' "$OUT/topology")
	rm -f "$OUT/console"
	mkfifo "$OUT/console"
	exec 3<> "$OUT/console"
	ibsim -s -N "$1" -S "$2" -P "$3" "$OUT/topology" < "$OUT/console" \
		> "$OUT/ibsim.log" 2>&1 &
	ibsim_pid=$!
	wait_for "grep -q '@$IBSIM_SOCKNAME:ctl' /proc/net/unix" 60
}

# -d2: opensm flushes its log after each line, so that "SUBNET UP" shows
# when it happens.
start_opensm() {
	: > "$OUT/opensm.log"
	opensm -d2 -g $PORT_GUID -f "$OUT/opensm.log" > "$OUT/opensm.out" 2>&1 &
	osm_pid=$!
}

subnet_ups() {
	grep -c 'SUBNET UP' "$OUT/opensm.log"
}

# Waits for a SUBNET UP after the first $1.
wait_subnet_up() { # earlier count
	wait_for "[ \$(subnet_ups) -gt $1 ] || ! kill -0 $osm_pid 2>/dev/null" "$UP_TIMEOUT" &&
		[ "$(subnet_ups)" -gt "$1" ]
}

# Whether port $2 of the node of LID $1 is in link state $3, as its
# PortInfo says (smpquery, by LID).
link_state() { # lid port state
	state=$(smpquery portinfo "$1" "$2" 2>&1 | sed -n 's/^LinkState:\.*//p')
	[ "$state" = "$3" ] && return 0
	ktap_print_msg "LID $1 port $2: link state '$state', want $3"
	return 1
}

show() { # file
	ktap_print_msg "$1:"
	tail -n 30 "$1" | sed 's/^/# /'
}

# umad_ibsim_wire for the wired device, and its port up (INIT, as ibsim's links
# start).
start_wire() {
	"$HERE/umad_ibsim_wire" "$CA=$node" >> "$OUT/wire.out" 2>&1 &
	wire_pid=$!
	wait_for "[ \"\$(port_attr state)\" != '1: DOWN' ]" 60
}

# The MADs the wired device has sent on the wire.
wire_out() {
	sed -n 's/^wire_out //p' "$DBG/stats"
}

# Waits until opensm is in the middle of a sweep: $1 more MADs out.
mid_sweep() { # MADs
	base=$(wire_out)
	wait_for "[ \$((\$(wire_out) - $base)) -ge $1 ]" 60
}

set -- $UMAD_FABRICS
first=$1
ktap_set_plan $((5 * $# + 3))
rm -rf "$OUT"
mkdir -p "$OUT"
echo wire > "$DBG/add_device"

for fabric in "$@"; do
	tag=$(echo "$fabric" | tr ':.-' '___')
	if ! topology "$fabric" || ! start_ibsim; then
		show "$OUT/ibsim.log"
		for t in subnet_up ibnetdiscover_finds_every_link node_records \
			 resweep_after_a_link_flaps nothing_lost; do
			ktap_test_fail "${t}_$tag"
		done
		stop_all
		continue
	fi

	# 1: opensm's SUBNET UP.
	: > "$OUT/wire.out"
	start=$(now_ms)
	ok=0
	if start_wire; then
		start_opensm
		wait_subnet_up 0 && ok=1
	fi
	up_ms=$(($(now_ms) - start))
	if [ $ok = 1 ]; then
		ktap_test_pass "subnet_up_$tag"
	else
		show "$OUT/opensm.log"
		show "$OUT/wire.out"
		ktap_test_fail "subnet_up_$tag"
	fi

	# 2: ibnetdiscover finds the topology's links, every one.
	start=$(now_ms)
	if ibnetdiscover > "$OUT/ibnetdiscover" 2>&1 &&
	   links "$OUT/topology" > "$OUT/links.want" &&
	   links "$OUT/ibnetdiscover" > "$OUT/links.got" &&
	   [ -s "$OUT/links.want" ] &&
	   diff -u "$OUT/links.want" "$OUT/links.got" > "$OUT/links.diff"; then
		ktap_test_pass "ibnetdiscover_finds_every_link_$tag"
	else
		show "$OUT/links.diff"
		ktap_test_fail "ibnetdiscover_finds_every_link_$tag"
	fi
	discover_ms=$(($(now_ms) - start))

	# 3: the SA's NodeRecord table, in RMPP segments, has every node.
	start=$(now_ms)
	want=$(count_nodes "$OUT/topology")
	got=$(saquery -N 2>&1 | grep -c '^NodeRecord dump')
	if [ "$got" = "$want" ]; then
		ktap_test_pass "node_records_$tag"
	else
		ktap_print_msg "saquery -N: $got NodeRecords, the topology has $want nodes"
		ktap_test_fail "node_records_$tag"
	fi
	records_ms=$(($(now_ms) - start))

	# 4: a link flaps, the first switch's last one (an uplink, away from
	# the SM's host): ibsim's console unlinks it and links it again; the
	# switch's traps make opensm sweep again, and the subnet comes back up
	# each time.
	set -- $(awk '
	/^Switch/ {
		if (sw != "")
			exit
		match($0, /"[^"]*"/)
		sw = substr($0, RSTART + 1, RLENGTH - 2)
		next
	}
	sw != "" && /^\[[0-9]+\]/ {
		match($0, /^\[[0-9]+\]/)
		port = substr($0, 2, RLENGTH - 2)
	}
	END { print sw, port }' "$OUT/topology")
	sw=$1 port=$2
	# The switch's LID, as ibnetdiscover found it.
	lid=$(awk -v sw="\"$sw\"" '/^Switch/ && index($0, "# " sw) {
		for (i = 1; i < NF; i++) if ($i == "lid") { print $(i + 1); exit } }' \
		"$OUT/ibnetdiscover")
	start=$(now_ms)
	ups=$(subnet_ups)
	echo "Unlink \"$sw\"[$port]" >&3
	ok=0
	if [ -n "$lid" ] && wait_subnet_up "$ups" &&
	   link_state "$lid" "$port" Down; then
		ups=$(subnet_ups)
		echo "ReLink \"$sw\"[$port]" >&3
		wait_subnet_up "$ups" && link_state "$lid" "$port" Active && ok=1
	fi
	if [ $ok = 1 ]; then
		ktap_test_pass "resweep_after_a_link_flaps_$tag"
	else
		show "$OUT/opensm.log"
		ktap_test_fail "resweep_after_a_link_flaps_$tag"
	fi
	resweep_ms=$(($(now_ms) - start))

	# 5: what umad_ibsim_wire carried: no response it could not match to a
	# request the kernel sent.
	stop osm_pid
	stop wire_pid
	if grep -q ' unmatched 0 ' "$OUT/wire.out"; then
		ktap_test_pass "nothing_lost_$tag"
	else
		show "$OUT/wire.out"
		ktap_test_fail "nothing_lost_$tag"
	fi
	carried=$(tail -n 1 "$OUT/wire.out")
	echo "$fabric $want nodes: up ${up_ms} ms, ibnetdiscover ${discover_ms} ms," \
		"saquery -N ${records_ms} ms, resweep ${resweep_ms} ms; $carried" >> "$OUT/times"
	ktap_print_msg "$(tail -n 1 "$OUT/times")"
	stop_all
done

# Faults in the middle of a sweep, on the first fabric: ibsim dies, the
# wire's program dies, the device goes. Each time opensm's MADs time out
# or its port goes down; once the fabric is back it sweeps it to SUBNET UP,
# and the driver has lost and leaked nothing (the kernel's reports, and
# kmemleak, are the rig's to judge).
fabric=$first
tag=$(echo "$fabric" | tr ':.-' '___')
: > "$OUT/wire.out"
ok=0
if topology "$fabric" && start_ibsim && start_wire; then
	start_opensm
	if mid_sweep 20; then
		kill -9 "$ibsim_pid"
		wait "$ibsim_pid" 2>/dev/null
		ibsim_pid=
		exec 3>&-
		ups=$(subnet_ups)
		# umad_ibsim_wire goes with it: the wire closes, the port goes down.
		wait_for "! kill -0 $wire_pid 2>/dev/null" 30 &&
			wait_for "[ \"\$(port_attr state)\" = '1: DOWN' ]" 10 &&
			start_ibsim && start_wire && wait_subnet_up "$ups" && ok=1
	fi
fi
[ $ok = 1 ] && ktap_test_pass "sweep_after_ibsim_dies_mid_sweep_$tag" || {
	show "$OUT/opensm.log"
	show "$OUT/wire.out"
	ktap_test_fail "sweep_after_ibsim_dies_mid_sweep_$tag"
}

# SIGHUP: opensm sweeps the whole subnet again.
ok=0
ups=$(subnet_ups)
if [ -n "$osm_pid" ] && kill -HUP "$osm_pid" && mid_sweep 20; then
	kill -9 "$wire_pid"
	wait "$wire_pid" 2>/dev/null
	wire_pid=
	# ibsim keeps a client that did not detach, and refuses the node
	# another SM client, until its console detaches it, as an operator
	# would.
	client=$(sed -n 's/.* as ibsim.s client \([0-9]*\)$/\1/p' "$OUT/wire.out" | tail -n 1)
	echo "X $client" >&3
	wait_for "[ \"\$(port_attr state)\" = '1: DOWN' ]" 10 && start_wire &&
		wait_subnet_up "$ups" && ok=1
fi
[ $ok = 1 ] && ktap_test_pass "sweep_after_the_wire_dies_mid_sweep_$tag" || {
	show "$OUT/opensm.log"
	show "$OUT/wire.out"
	ktap_test_fail "sweep_after_the_wire_dies_mid_sweep_$tag"
}

# The device goes in a sweep, and comes again: a new opensm sweeps it.
ok=0
if [ -n "$osm_pid" ] && kill -HUP "$osm_pid" && mid_sweep 20; then
	echo "$CA" > "$DBG/remove_device"
	stop osm_pid
	echo wire > "$DBG/add_device"
	if wait_for "[ \"\$(port_attr state)\" != '1: DOWN' ]" 30; then
		start_opensm
		wait_subnet_up 0 && ok=1
	fi
fi
[ $ok = 1 ] && ktap_test_pass "sweep_after_device_removal_mid_sweep_$tag" || {
	show "$OUT/opensm.log"
	show "$OUT/wire.out"
	ktap_test_fail "sweep_after_device_removal_mid_sweep_$tag"
}
stop_all
ktap_finished
