#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The ib_umad tracepoints: the three events exist with the C driver's record
# (the fields and print format of each format file, hashed, must equal the
# C driver's on the machine's architecture), and a
# write, a received read and a timeout report each fire theirs. Needs a
# kernel with event tracing, and umad_data beside it for the traffic;
# SKIPs without.
. "$(dirname "$0")/../kselftest/ktap_helpers.sh"

TRACING=/sys/kernel/tracing
EVENTS="ib_umad_write ib_umad_read_recv ib_umad_read_send"
# md5 of the field lines and print format of each event's format file, as
# the C ib_umad has them (the event id line differs between loads; it is
# left out), on each architecture: the print format's arguments are the
# preprocessed byte swaps, which differ between them.
case $(uname -m) in
x86_64) FIELDS_MD5=2d8d088c7d1df81dc24f63e6b3eb53aa ;;
aarch64) FIELDS_MD5=c0141b18f0619a45cf64243806cea48c ;;
*) FIELDS_MD5= ;;
esac

ktap_print_header
[ -d $TRACING/events ] || mount -t tracefs nodev $TRACING 2>/dev/null
ktap_set_plan 2
if [ ! -d $TRACING/events/ib_umad ]; then
	# Both tests by name, each with its reason (the reason precedes each:
	# a skip's text is what the test printed since the result before it).
	for test in records_match_the_c_driver every_event_fires; do
		ktap_print_msg "kernel without event tracing: no $TRACING/events/ib_umad"
		ktap_test_skip $test
	done
	ktap_print_totals
	exit "$KSFT_SKIP"
fi

record() { # event
	grep -E '^\s*field:|^print fmt' $TRACING/events/ib_umad/$1/format
}
fields=$(for e in $EVENTS; do record $e; done | md5sum | cut -d' ' -f1)
ktap_print_msg "fields md5 $fields"
if [ -z "$FIELDS_MD5" ]; then
	ktap_print_msg "no record of the C ib_umad's on $(uname -m) to compare with"
	ktap_test_skip records_match_the_c_driver
elif [ "$fields" = "$FIELDS_MD5" ]; then
	ktap_test_pass records_match_the_c_driver
else
	# What differs, for the log.
	for e in $EVENTS; do
		record $e | while read -r line; do ktap_print_msg "$e: $line"; done
	done
	ktap_test_fail records_match_the_c_driver
fi

# umad_data's timeout test writes, reads what it received, and reads a
# timeout report: each event must show up.
echo > $TRACING/trace
echo 1 > $TRACING/events/ib_umad/enable
"$(dirname "$0")/umad_data" -r data.an_unanswered_request_is_reported_as_timed_out > /dev/null 2>&1
data=$?
echo 0 > $TRACING/events/ib_umad/enable
if [ $data = "$KSFT_SKIP" ] || [ ! -x "$(dirname "$0")/umad_data" ]; then
	ktap_print_msg "umad_data did not run its timeout test (no devices, or no umad_data)"
	ktap_test_skip every_event_fires
	ktap_finished
fi
ok=1
for e in $EVENTS; do
	n=$(grep -c " $e: " $TRACING/trace)
	ktap_print_msg "$e: $n events"
	[ "$n" -gt 0 ] || ok=0
done
grep -q 'ib_umad_read_send: .*status 0x0000006e.*class 0xa ' $TRACING/trace || ok=0
[ $ok = 1 ] && ktap_test_pass every_event_fires || ktap_test_fail every_event_fires

ktap_finished
