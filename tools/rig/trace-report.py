#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compares trace.py's counts of C's and Rust's calls (trace.sh): each
call's instructions per driver, and where they differ, function by function
(instructions in the function itself, and in it with its callees).
  trace-report.py <trace.jsonl> [call [function]]
With a call's name, its stacks instead, per driver, from the system call's
handler (__x64_sys_*) down; with a function of a driver too (part of its
name), how often each of its instructions ran, by offset, to read beside
objdump's disassembly of the module."""
import json
import sys

SHOWN = 12


def costs(folded):
    own, total = {}, {}
    for stack, n in folded.items():
        names = stack.split(";")
        own[names[-1]] = own.get(names[-1], 0) + n
        for name in set(names):
            total[name] = total.get(name, 0) + n
    return own, total


def differences(c, rust):
    rows = [(rust.get(k, 0) - c.get(k, 0), k) for k in set(c) | set(rust)]
    rows.sort(key=lambda r: -abs(r[0]))
    return [(k, c.get(k, 0), rust.get(k, 0)) for d, k in rows[:SHOWN] if d]


def print_stacks(name, phases):
    for phase, call in sorted(phases.items()):
        print("%s, phase %d: %d instructions" % (name, phase, call["instructions"]))
        for stack, n in sorted(call["folded"].items()):
            names = stack.split(";")
            below = [i for i, f in enumerate(names) if f.startswith("__x64_sys_")]
            if below:
                print("%6d %s" % (n, " ; ".join(names[below[0] + 1:])))


calls = [json.loads(line) for line in open(sys.argv[1])]
last = max(c["round"] for c in calls)
# The last round: the first ones also count slabs refilled, caches warmed.
by_name = {}
for c in calls:
    if c["round"] == last:
        by_name.setdefault(c["call"], {})[c["phase"]] = c

if len(sys.argv) > 3:
    for phase, call in sorted(by_name[sys.argv[2]].items()):
        for function, offsets in call["lines"].items():
            if sys.argv[3] in function:
                print("%s, phase %d: %s, %d instructions" %
                      (sys.argv[2], phase, function, sum(offsets.values())))
                for offset, n in offsets.items():
                    print("  %6s %4d" % (offset, n))
    sys.exit(0)
if len(sys.argv) > 2:
    print_stacks(sys.argv[2], by_name[sys.argv[2]])
    sys.exit(0)
print("%-22s %8s %8s %9s" % ("call (last round)", "C", "Rust", "rust/C"))
for name, p in by_name.items():
    print("%-22s %8d %8d %9.2f" % (name, p[0]["instructions"], p[1]["instructions"],
                                   p[1]["instructions"] / p[0]["instructions"]))
for name, p in by_name.items():
    c_own, c_total = costs(p[0]["folded"])
    r_own, r_total = costs(p[1]["folded"])
    print("\n%s: C %d, Rust %d" % (name, p[0]["instructions"], p[1]["instructions"]))
    for title, c, r in (("in itself", c_own, r_own), ("with callees", c_total, r_total)):
        print("  %-14s %7s %7s" % (title, "C", "Rust"))
        for k, a, b in differences(c, r):
            print("  %-14s %7d %7d  %s" % ("", a, b, k[:150]))
