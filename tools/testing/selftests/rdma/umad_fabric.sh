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
# topology (a diff); the SA's NodeRecord, PortInfoRecord and PathRecord
# tables (RMPP) have every node and port, and are those the other driver
# got in this boot, if it ran first; osmtest's inventory and validation
# pass (the PathRecords of every pair of ports on the first fabric only);
# opensm started again with max_wire_smps raised to 64, as large sites
# run it, brings the subnet up; after ibsim's console unlinks a switch,
# opensm sweeps again and the SA has lost it, and after ibsim links it
# again, has every node again; and no response came back that matched
# no request the kernel sent. Then, on the first fabric, faults in the
# middle of a sweep: ibsim dies, umad_ibsim_wire dies, the device is
# removed; opensm sees each (its MADs time out, its read fails), and
# sweeps the fabric up again once it is back.
# With UMAD_FABRIC_BENCH=1, for the benchmark, each fabric is only brought
# up, from a fresh ibsim, by opensm with its defaults and then with
# max_wire_smps 64, and measured to its first light sweep.
# What each bring-up measured is in /tmp/umad_fabric.<driver>/figures,
# a line a figure: "<fabric>[/<setting>] <figure> <value> <unit>".
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
BENCH=${UMAD_FABRIC_BENCH:-0}
export IBSIM_SOCKNAME=umad_fabric.$$
export OSM_CACHE_DIR=$OUT/cache
# What opensm logs of a MAD the kernel reported failed (timed out, or
# not sent): its vendor layer's ERR 5410 and 5411.
MAD_ERROR='completed with error (IB_TIMEOUT)'
# What large sites raise opensm's max_wire_smps to (its default is 4).
MAX_WIRE_SMPS=64
# How long opensm may take to bring a fabric up, in seconds: generous,
# since a debugging kernel under emulation is slow; the wait ends at
# SUBNET UP.
UP_TIMEOUT=${UMAD_FABRIC_UP_TIMEOUT:-300}
# saquery's time for the SA's answer, in milliseconds: a table of
# thousands of records comes in hundreds of RMPP segments, which a guest
# that shares its host's cores with two others took longer to get than
# saquery's default second (the PortInfoRecords of 1344 nodes, through C,
# in a CI run of 2026-11-30).
SA_TIMEOUT=${UMAD_FABRIC_SA_TIMEOUT:-20000}

ktap_print_header
skip_all() { # why
	ktap_skip_all "$1"
	exit "$KSFT_SKIP"
}
for need in ibsim opensm osmtest ibnetdiscover saquery; do
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

ibsim_pid= wire_pid= osm_pid= watch_pid=
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
	stop watch_pid
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

# Waits up to $2 seconds for the command $1 to succeed, asking up to five
# times a second: the benchmark's figures are taken when it does.
wait_for() { # command seconds
	deadline=$(($(now_ms) + $2 * 1000))
	while ! eval "$1"; do
		[ "$(now_ms)" -lt "$deadline" ] || return 1
		sleep 0.2
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
	# A new fabric: opensm's cache (its LIDs by GUID) starts empty.
	rm -rf "$OSM_CACHE_DIR"
	ibsim -s -N "$1" -S "$2" -P "$3" "$OUT/topology" < "$OUT/console" \
		> "$OUT/ibsim.log" 2>&1 &
	ibsim_pid=$!
	wait_for "grep -q '@$IBSIM_SOCKNAME:ctl' /proc/net/unix" 60
}

# opensm, with options "$@" besides: -d2, it flushes its log after each
# line, so that what it logs shows when it happens; and in a
# configuration file of its own, only a per-module log level: its sweeps'
# state machine's verbose notes, which say when a light sweep starts and
# ends (those of the whole of opensm, on a fabric of 1344 nodes, made the
# way to SUBNET UP twice as long: 84 s instead of 45).
start_opensm() { # options
	: > "$OUT/opensm.log"
	echo "osm_state_mgr.c 0x87" > "$OUT/per-module-logging.conf"
	echo "per_module_logging_file $OUT/per-module-logging.conf" > "$OUT/opensm.conf"
	opensm -d2 -F "$OUT/opensm.conf" -g $PORT_GUID -f "$OUT/opensm.log" "$@" \
		> "$OUT/opensm.out" 2>&1 &
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

show() { # file
	ktap_print_msg "$1:"
	tail -n 30 "$1" | sed 's/^/# /'
}

# umad_ibsim_wire for the wired device, and its port up (INIT, as ibsim's links
# start).
start_wire() {
	dropped0=$(wire_stat wire_dropped)
	"$HERE/umad_ibsim_wire" "$CA=$node" >> "$OUT/wire.out" 2>&1 &
	wire_pid=$!
	wait_for "[ \"\$(port_attr state)\" != '1: DOWN' ]" 60
}

# A count of ib_loopback's stats: wire_out, the MADs the wired device has
# sent on the wire, wire_in, those it received, wire_dropped.
wire_stat() { # name
	sed -n "s/^$1 //p" "$DBG/stats"
}

# The kernel's CPU time so far, all CPUs' and all programs' (ibsim's and
# umad_ibsim_wire's too), in clock ticks: system, irq and softirq.
kernel_ticks() {
	awk '/^cpu / { print $4 + $7 + $8; exit }' /proc/stat
}

# A process's CPU time so far in user space and in the kernel (where the
# umad driver's calls are), in clock ticks.
process_ticks() { # pid
	awk '{ print $14, $15 }' "/proc/$1/stat"
}

# The slab the kernel cannot reclaim (not the dentries and inodes of
# the programs run meanwhile), in KiB.
slab_kb() {
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

# Writes the highest slab_kb to $1 until it is stopped.
slab_watch() { # file
	peak=$(slab_kb)
	while :; do
		now=$(slab_kb)
		if [ "$now" -gt "$peak" ]; then
			peak=$now
			echo "$peak" > "$1.new" && mv "$1.new" "$1"
		fi
		sleep 0.2
	done
}

# For awk, the time of day of an opensm log's line ("Nov 30 05:40:01
# 123456 [..."), in milliseconds, in now: a line of a message box has
# none, and takes that of its message's first; and the time since an
# earlier one.
LOG_TIME='
$3 ~ /^[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$/ {
	split($3, hms, ":")
	# The microseconds with a 1 before them: busybox awk before 1.36
	# reads a number with a leading 0 as octal.
	now = (hms[1] * 3600 + hms[2] * 60 + hms[3]) * 1000 + int(("1" $4) / 1000) - 1000
}
function since(earlier) {
	return (now - earlier + 86400000) % 86400000
}'

# The milliseconds between the opensm log's first line and its first line
# matching $1.
log_ms() { # pattern
	awk -v pattern="$1" "$LOG_TIME"'
	NR == 1 { start = now }
	$0 ~ pattern { print since(start); exit }' "$OUT/opensm.log"
}

# The milliseconds the first light sweep after SUBNET UP took: from its
# "INITIATING LIGHT SWEEP" to its "LIGHT SWEEP COMPLETE" (each in a
# message box).
light_sweep_ms() {
	awk "$LOG_TIME"'
	/SUBNET UP/ { up = 1 }
	up && /INITIATING LIGHT SWEEP/ { start = now }
	up && start != "" && /LIGHT SWEEP COMPLETE/ { print since(start); exit }' "$OUT/opensm.log"
}

figure() { # name value unit
	echo "$run $1 $2 $3" >> "$OUT/figures"
}

# A new opensm (options "$@") brings the subnet up; what it took goes to
# $OUT/figures under $run: the time to SUBNET UP by opensm's log, the MADs
# on the wire until then, those of them that timed out, opensm's CPU time
# a MAD in user space and in the kernel, the kernel's a MAD, and the
# unreclaimable slab's highest above where it was. False without a
# SUBNET UP.
bring_up() { # opensm options
	out0=$(wire_stat wire_out) in0=$(wire_stat wire_in) kernel0=$(kernel_ticks)
	slab0=$(slab_kb)
	echo "$slab0" > "$OUT/slab.peak"
	slab_watch "$OUT/slab.peak" &
	watch_pid=$!
	start_opensm "$@"
	wait_subnet_up 0 || return 1
	set -- $(process_ticks "$osm_pid")
	osm_user=$1 osm_system=$2
	kernel=$(($(kernel_ticks) - kernel0))
	mads=$(($(wire_stat wire_out) - out0 + $(wire_stat wire_in) - in0))
	stop watch_pid
	# /proc's ticks are USER_HZ, 100 but on alpha.
	hz=$(getconf CLK_TCK 2>/dev/null) || hz=100
	figure nodes "$(count_nodes "$OUT/topology")" nodes
	figure subnet_up "$(log_ms 'SUBNET UP')" ms
	figure mads "$mads" MADs
	figure timeouts "$(sed -n "/SUBNET UP/q; /$MAD_ERROR/p" "$OUT/opensm.log" | wc -l)" MADs
	for cpu in opensm_user:$osm_user opensm_system:$osm_system kernel:$kernel; do
		figure "${cpu%:*}_cpu_per_mad" "$(awk -v t="${cpu#*:}" -v hz="$hz" -v n="$mads" \
			'BEGIN { printf "%.2f", t * 1e6 / hz / (n ? n : 1) }')" us
	done
	figure slab_peak "$(($(cat "$OUT/slab.peak") - slab0))" KiB
}

# Waits for opensm's first light sweep after SUBNET UP (its sweeps come
# every 10 seconds) and puts its time with the figures.
light_sweep() {
	wait_for '[ -n "$(light_sweep_ms)" ]' 60 || return 1
	figure light_sweep "$(light_sweep_ms)" ms
}

# What umad_ibsim_wire carried in its life, once it stopped: the MADs the
# MAD layer sent again, and those dropped anywhere (bounced by ibsim,
# dropped by umad_ibsim_wire or by ib_loopback).
wire_figures() {
	set -- $(tail -n 1 "$OUT/wire.out")
	[ "$1" = umad_ibsim_wire: ] || return 0
	figure resent "$7" MADs
	figure dropped "$(($9 + ${13} + $(wire_stat wire_dropped) - dropped0))" MADs
}

# Freezes the fabric in the middle of a sweep, the one opensm is in or,
# with "hup", one it is told to start now (SIGHUP): once opensm has sent $1
# more MADs, ibsim stops (SIGSTOP) and answers nothing more. The count
# starts before the SIGHUP: a sweep of a small fabric can end before a
# slow kernel's shell has read a count, and the light sweeps after it
# send few MADs. If the sweep ended first, opensm is told to
# sweep again, into the frozen fabric. True once opensm has sent a MAD
# there, which the kernel will time out.
freeze_mid_sweep() { # MADs [hup]
	ups_before=$(subnet_ups)
	base=$(wire_stat wire_out)
	[ "$2" != hup ] || kill -HUP "$osm_pid" || return 1
	if ! wait_for "[ \$((\$(wire_stat wire_out) - $base)) -ge $1 ]" 60; then
		ktap_print_msg "opensm sent fewer than $1 MADs in 60 s: no sweep to freeze"
		return 1
	fi
	kill -STOP "$ibsim_pid"
	sent=$(wire_stat wire_out)
	[ "$(subnet_ups)" = "$ups_before" ] || kill -HUP "$osm_pid"
	wait_for "[ \$(wire_stat wire_out) -gt $sent ]" 30 && return 0
	ktap_print_msg "opensm sent nothing into the frozen fabric in 30 s"
	return 1
}

# The MADs whose failure opensm logged: those the kernel reported timed
# out (or not sent), which opensm logs alike.
mad_errors() {
	grep -c "$MAD_ERROR" "$OUT/opensm.log"
}

# Waits for opensm to log MADs failed beyond the first $1: what it saw of
# a fault.
timeouts_seen() { # earlier count
	wait_for "[ \$(mad_errors) -gt $1 ]" 30 && return 0
	ktap_print_msg "opensm saw no MAD time out in 30 s of the fault"
	return 1
}

# A fault's two results: whether opensm saw it ($1, test $2) and whether
# it swept the fabric up after it ($3, test $4).
fault_results() { # seen test ok test
	[ "$1" = 1 ] && ktap_test_pass "$2" || ktap_test_fail "$2"
	[ "$3" = 1 ] && ktap_test_pass "$4" || {
		show "$OUT/opensm.log"
		show "$OUT/wire.out"
		ktap_test_fail "$4"
	}
}

# The SA's tables, as saquery prints them, in $OUT/$tag.sa: every
# NodeRecord, every PortInfoRecord, and the PathRecords from the SM's port
# to every port (RMPP, in many segments on a large fabric); true if they
# have every node, every port the SM knows (all of a switch's, and port 0;
# the linked ones of a CA) and a path to every node's port.
sa_tables() {
	set -- $(awk '/^(Switch|Hca|Ca)[ \t]/ { n++; sw = $1 == "Switch"; if (sw) p += $2 + 1 }
		!sw && /^\[[0-9]+\]/ { p++ }
		/^[ \t]*$/ { sw = 0 }
		END { print n + 0, p + 0 }' "$OUT/topology")
	nodes=$1 ports=$2
	lid=$(($(port_attr lid)))
	# Their warnings (a width of 0, which ibsim's ports of a switch not
	# linked have) name saquery's pid: apart.
	err=$OUT/$tag.sa.err
	saquery -t "$SA_TIMEOUT" NR > "$OUT/$tag.nr" 2> "$err" &&
		saquery -t "$SA_TIMEOUT" PIR > "$OUT/$tag.pir" 2>> "$err" &&
		saquery -t "$SA_TIMEOUT" PR --slid "$lid" > "$OUT/$tag.pr" 2>> "$err" || {
		show "$err"
		return 1
	}
	# But for a switch's local port, PortInfo's LocalPort and NodeInfo's
	# LocalPortNum (saquery's port_num): the port its SMPs came in by, on
	# the path opensm first found to it, which the order of the answers
	# decides (the two drivers' differed on 1344 nodes, 2026-11-30).
	cat "$OUT/$tag.nr" "$OUT/$tag.pir" "$OUT/$tag.pr" |
		grep -Ev '^[[:space:]]*(LocalPort:|port_num\.)' > "$OUT/$tag.sa"
	set -- "$(grep -c '^NodeRecord dump' "$OUT/$tag.nr")" \
		"$(grep -c '^PortInfoRecord dump' "$OUT/$tag.pir")" \
		"$(grep -c '^PathRecord dump' "$OUT/$tag.pr")"
	[ "$1 $2 $3" = "$nodes $ports $nodes" ] && return 0
	ktap_print_msg "$1 NodeRecords, $2 PortInfoRecords, $3 PathRecords;" \
		"the topology has $nodes nodes, $ports ports"
	return 1
}

# The topology's last switch: a spine or a core of a fat tree, away from
# the SM's host, which its leaf keeps linked to the rest.
last_switch() {
	awk '/^Switch/ { match($0, /"[^"]*"/); sw = substr($0, RSTART + 1, RLENGTH - 2) }
		END { print sw }' "$OUT/topology"
}

# The NodeRecords the SA has.
node_records() {
	saquery -t "$SA_TIMEOUT" NR 2> /dev/null | grep -c '^NodeRecord dump'
}

set -- $UMAD_FABRICS
first=$1
if [ "$BENCH" = 1 ]; then
	ktap_set_plan $((4 * $#))
else
	ktap_set_plan $((7 * $# + 6))
fi
rm -rf "$OUT"
mkdir -p "$OUT"
echo wire > "$DBG/add_device"

# The benchmark's: each fabric from a fresh ibsim, brought up by opensm
# with its defaults and with max_wire_smps raised, to the first light
# sweep.
if [ "$BENCH" = 1 ]; then
	for fabric in "$@"; do
		for smps in 4 $MAX_WIRE_SMPS; do
			tag=$(echo "$fabric" | tr ':.-' '___')_smps$smps
			run=$fabric/smps$smps
			: > "$OUT/wire.out"
			if topology "$fabric" && start_ibsim && start_wire &&
			   bring_up --maxsmps $smps; then
				ktap_test_pass "subnet_up_$tag"
				light_sweep && ktap_test_pass "light_sweep_$tag" ||
					ktap_test_fail "light_sweep_$tag"
			else
				show "$OUT/opensm.log"
				ktap_test_fail "subnet_up_$tag"
				ktap_test_fail "light_sweep_$tag"
			fi
			stop_all
			wire_figures
		done
	done
	ktap_finished
fi

for fabric in "$@"; do
	tag=$(echo "$fabric" | tr ':.-' '___')
	run=$fabric
	tests="subnet_up ibnetdiscover_finds_every_link sa_tables
		restart_with_max_wire_smps_$MAX_WIRE_SMPS
		resweep_after_a_switch_goes_and_comes_back nothing_lost osmtest"
	: > "$OUT/wire.out"
	# 1: opensm's SUBNET UP.
	if ! topology "$fabric" || ! start_ibsim || ! start_wire || ! bring_up; then
		show "$OUT/ibsim.log"
		show "$OUT/opensm.log"
		show "$OUT/wire.out"
		for t in $tests; do
			ktap_test_fail "${t}_$tag"
		done
		stop_all
		continue
	fi
	ktap_test_pass "subnet_up_$tag"

	# 2: ibnetdiscover finds the topology's links, every one.
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

	# 3: the SA's tables are whole, and the other driver's, where it
	# ran first in this boot (the same fabric, the same opensm: the same
	# LIDs and paths).
	other=/tmp/umad_fabric.c
	[ "$DRIVER" = c ] && other=/tmp/umad_fabric.rust
	if ! sa_tables; then
		ktap_test_fail "sa_tables_$tag"
	elif [ -r "$other/$tag.sa" ] &&
	     ! diff -u "$other/$tag.sa" "$OUT/$tag.sa" > "$OUT/$tag.sa.diff"; then
		ktap_print_msg "the SA's tables differ from those through $other's driver"
		show "$OUT/$tag.sa.diff"
		ktap_test_fail "sa_tables_$tag"
	else
		ktap_test_pass "sa_tables_$tag"
	fi

	# 4: osmtest takes an inventory of the subnet through the SA (RMPP),
	# and validates the SA against it. Its PathRecords are each pair of
	# ports' path, asked alone, n * n queries: on a fat tree of 80 nodes,
	# 6400 of them, they took about 3 minutes of a TCG guest; on one of
	# 1344 nodes they would be 1.8 million. So only the first fabric's
	# inventory has them; on the others osmtest leaves them out (its
	# "-d 1"), and the PathRecords from the SM's port (sa_tables) stand
	# for them.
	inventory=$OUT/osmtest.dat
	paths=
	[ "$fabric" = "$first" ] || paths="-d 1"
	if (cd "$OUT" && osmtest -g $PORT_GUID $paths -f c -i "$inventory" &&
	    osmtest -g $PORT_GUID $paths -f a -i "$inventory") > "$OUT/osmtest.out" 2>&1; then
		ktap_test_pass "osmtest_$tag"
	else
		show "$OUT/osmtest.out"
		ktap_test_fail "osmtest_$tag"
	fi

	# 5: opensm, started again with max_wire_smps raised, brings the
	# subnet up again.
	stop osm_pid
	run=$fabric/restart_smps$MAX_WIRE_SMPS
	if bring_up --maxsmps $MAX_WIRE_SMPS; then
		ktap_test_pass "restart_with_max_wire_smps_${MAX_WIRE_SMPS}_$tag"
	else
		show "$OUT/opensm.log"
		ktap_test_fail "restart_with_max_wire_smps_${MAX_WIRE_SMPS}_$tag"
	fi

	# 6: a switch goes: ibsim's console unlinks all its links; the
	# traps of its neighbours' ports, or opensm's next light sweep, make
	# it sweep again, and the SA loses the switch and what it alone
	# linked; when ibsim links it again, opensm sweeps it back in (the
	# opensm of 5, whose sweeps go faster).
	sw=$(last_switch)
	nodes=$(count_nodes "$OUT/topology")
	ups=$(subnet_ups)
	echo "Unlink \"$sw\"" >&3
	ok=0
	if wait_subnet_up "$ups"; then
		gone=$(node_records)
		ups=$(subnet_ups)
		echo "ReLink \"$sw\"" >&3
		if [ "$gone" -lt "$nodes" ] && wait_subnet_up "$ups" &&
		   wait_for '[ "$(node_records)" = "$nodes" ]' 30; then
			ok=1
		else
			ktap_print_msg "NodeRecords: $gone without $sw," \
				"$(node_records) with it again, of $nodes"
		fi
	fi
	if [ $ok = 1 ]; then
		ktap_test_pass "resweep_after_a_switch_goes_and_comes_back_$tag"
	else
		show "$OUT/opensm.log"
		ktap_test_fail "resweep_after_a_switch_goes_and_comes_back_$tag"
	fi

	# 7: what umad_ibsim_wire carried: no response it could not match to
	# a request the kernel sent.
	stop osm_pid
	stop wire_pid
	if grep -q ' unmatched 0 ' "$OUT/wire.out"; then
		ktap_test_pass "nothing_lost_$tag"
	else
		show "$OUT/wire.out"
		ktap_test_fail "nothing_lost_$tag"
	fi
	run=$fabric
	wire_figures
	measured=$(awk -v run="$fabric" '$1 == run { printf "%s %s %s, ", $2, $3, $4 }' \
		"$OUT/figures")
	ktap_print_msg "$fabric: $measured$(tail -n 1 "$OUT/wire.out")"
	stop_all
done

# Faults in the middle of a sweep, on the first fabric: ibsim dies, the
# wire's program dies, the device goes. Each time opensm sees it: the
# kernel reports its MADs timed out, or its read fails; once the fabric is
# back, opensm sweeps it to SUBNET UP, and the driver has lost and leaked
# nothing (the kernel's reports, and kmemleak, are the rig's to judge).
fabric=$first
ktap_print_msg "faults on $fabric"
: > "$OUT/wire.out"
ok=0 seen=0
if topology "$fabric" && start_ibsim && start_wire; then
	start_opensm
	if freeze_mid_sweep 20; then
		errors=$(mad_errors)
		kill -9 "$ibsim_pid"
		wait "$ibsim_pid" 2>/dev/null
		ibsim_pid=
		exec 3>&-
		ups=$(subnet_ups)
		timeouts_seen "$errors" && seen=1
		# umad_ibsim_wire goes with it: the wire closes, the port goes down.
		wait_for "! kill -0 $wire_pid 2>/dev/null" 30 &&
			wait_for "[ \"\$(port_attr state)\" = '1: DOWN' ]" 10 &&
			start_ibsim && start_wire && wait_subnet_up "$ups" && ok=1
	fi
fi
fault_results "$seen" opensm_sees_timeouts_when_ibsim_dies_mid_sweep \
	"$ok" sweep_after_ibsim_dies_mid_sweep

# SIGHUP: opensm sweeps the whole subnet again.
ok=0 seen=0
if [ -n "$osm_pid" ] && freeze_mid_sweep 20 hup; then
	errors=$(mad_errors)
	kill -9 "$wire_pid"
	wait "$wire_pid" 2>/dev/null
	wire_pid=
	ups=$(subnet_ups)
	timeouts_seen "$errors" && seen=1
	kill -CONT "$ibsim_pid"
	# ibsim keeps a client that did not detach, and refuses the node
	# another SM client, until its console detaches it, as an operator
	# would.
	client=$(sed -n 's/.* as ibsim.s client \([0-9]*\)$/\1/p' "$OUT/wire.out" | tail -n 1)
	echo "X $client" >&3
	wait_for "[ \"\$(port_attr state)\" = '1: DOWN' ]" 10 && start_wire &&
		wait_subnet_up "$ups" && ok=1
fi
fault_results "$seen" opensm_sees_timeouts_when_the_wire_dies_mid_sweep \
	"$ok" sweep_after_the_wire_dies_mid_sweep

# The device goes in a sweep: opensm's read, blocked for its next MAD,
# fails (it logs it and reads again, and fails again, until stopped). The
# device comes again, and a new opensm sweeps it. ibsim goes on at once:
# umad_ibsim_wire gives up on an ibsim that does not answer it for 10 s.
ok=0 seen=0
if [ -n "$osm_pid" ] && freeze_mid_sweep 20 hup; then
	echo "$CA" > "$DBG/remove_device"
	kill -CONT "$ibsim_pid"
	if wait_for "grep -q 'ERR 5404: recv error' '$OUT/opensm.log'" 10; then
		seen=1
	else
		ktap_print_msg "opensm's read was still blocked 10 s after the device went"
	fi
	stop osm_pid
	echo wire > "$DBG/add_device"
	if wait_for "[ \"\$(port_attr state)\" != '1: DOWN' ]" 30; then
		start_opensm
		wait_subnet_up 0 && ok=1
	fi
fi
fault_results "$seen" opensm_reads_an_error_when_the_device_goes_mid_sweep \
	"$ok" sweep_after_device_removal_mid_sweep
stop_all
ktap_finished
