#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Prints a fat tree of HOSTS hosts built of K-port switches, in ibsim's
# topology format (ibnetdiscover's), for umad_fabric.sh:
#   umad_fat_tree.sh LEVELS K HOSTS [GUID]
# LEVELS 2: leaves with K/2 hosts each and K/2 spines, each leaf linked
# to every spine (at most K leaves: K*K/2 hosts).
# LEVELS 3: pods of K/2 leaves and K/2 aggregation switches, each leaf
# linked to every aggregation switch of its pod, and (K/2)^2 cores, the
# i-th aggregation switch of each pod linked to cores i*K/2 .. i*K/2+K/2-1
# (at most K pods: K^3/4 hosts).
# Hosts are one-port CAs "H-1" to "H-HOSTS"; host H-1 is first in the file,
# and with GUID its node GUID is GUID (ibsim gives the next CAs the GUIDs
# after it): the GUIDs of the HCA the fabric is attached to, which a
# subnet manager there finds its own port by. Switches are "S-L-N" (L:
# leaf, agg, spine, core).
set -eu

usage() {
	echo "usage: umad_fat_tree.sh 2|3 K HOSTS [GUID]" >&2
	exit 2
}
[ $# -ge 3 ] || usage
awk -v levels="$1" -v k="$2" -v hosts="$3" -v guid="${4:-}" '
function fail(why) {
	print "umad_fat_tree.sh: " why > "/dev/stderr"
	exit 2
}
function ceil(x) {
	return x == int(x) ? x : int(x) + 1
}
# A switch, in the order the file lists them; its next free port.
function sw(name) {
	nextport[name] = 1
	order[nsw++] = name
}
function take_port(name) {
	if (nextport[name] > k)
		fail(name " has no free port")
	return nextport[name]++
}
# A cable from the next free port of switch a to host b.
function to_host(a, b,   pa) {
	pa = take_port(a)
	port[a, pa] = "\"" b "\"[1]"
	hostport[b] = "\"" a "\"[" pa "]"
}
# A cable between the next free ports of switches a and b.
function to_switch(a, b,   pa, pb) {
	pa = take_port(a)
	pb = take_port(b)
	port[a, pa] = "\"" b "\"[" pb "]"
	port[b, pb] = "\"" a "\"[" pa "]"
}
BEGIN {
	if (k < 2 || k % 2 || hosts < 1)
		fail("K must be even, HOSTS at least 1")
	half = k / 2
	leaves = ceil(hosts / half)
	if (levels == 2) {
		if (leaves > k)
			fail("2 levels of " k "-port switches have at most " k * half " hosts")
		for (l = 1; l <= leaves; l++)
			sw("S-leaf-" l)
		for (s = 1; s <= half; s++)
			sw("S-spine-" s)
		for (h = 1; h <= hosts; h++)
			to_host("S-leaf-" ceil(h / half), "H-" h)
		for (l = 1; l <= leaves; l++)
			for (s = 1; s <= half; s++)
				to_switch("S-leaf-" l, "S-spine-" s)
	} else if (levels == 3) {
		pods = ceil(leaves / half)
		if (pods > k)
			fail("3 levels of " k "-port switches have at most " \
			     k * half * half " hosts")
		for (l = 1; l <= leaves; l++)
			sw("S-leaf-" l)
		for (p = 1; p <= pods; p++)
			for (a = 1; a <= half; a++)
				sw("S-agg-" p "-" a)
		for (c = 1; c <= half * half; c++)
			sw("S-core-" c)
		for (h = 1; h <= hosts; h++)
			to_host("S-leaf-" ceil(h / half), "H-" h)
		for (l = 1; l <= leaves; l++)
			for (a = 1; a <= half; a++)
				to_switch("S-leaf-" l, "S-agg-" ceil(l / half) "-" a)
		for (p = 1; p <= pods; p++)
			for (a = 1; a <= half; a++)
				for (c = 1; c <= half; c++)
					to_switch("S-agg-" p "-" a, "S-core-" ((a - 1) * half + c))
	} else {
		fail("LEVELS is 2 or 3")
	}
	if (guid != "")
		print "caguid=" guid
	for (h = 1; h <= hosts; h++)
		printf "Hca 1 \"H-%d\"\n[1] %s\n\n", h, hostport["H-" h]
	for (i = 0; i < nsw; i++) {
		name = order[i]
		printf "Switch %d \"%s\"\n", k, name
		for (p = 1; p < nextport[name]; p++)
			printf "[%d] %s\n", p, port[name, p]
		print ""
	}
}'
