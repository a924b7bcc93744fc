# SPDX-License-Identifier: GPL-2.0
"""Instruction-exact traces of umad_bench's steps, run by gdb (trace.sh).

Attached to the guest through QEMU's gdb stub, this stops at every system
call whose first argument is one of the steps' descriptors (STEPS_FD up
to the last that ROUND names), single-steps it to its return to user
space, and counts each instruction against the function it is in, under the chain of
callers it was reached through. Single steps run with interrupts and timers
off (QEMU's default), so a count is the call's own, the same from round to
round. A close of STEPS_FD ends a driver's phase; it detaches then, while
the guest changes drivers (it would stop at each of the guest's system
calls, and Debian's kallsyms takes thousands), and attaches again once the
next phase is ready; after TRACE_PHASES of them the guest goes on.

Symbols: the guest's /proc/kallsyms lines ("@@ksym"), where KASLR put
them (Debian ships no System.map): the kernel's text, which the log has
once, and the modules', which it has before each phase's "@@rig trace
ready"; c++filt demangles Rust's.

Writes one JSON line per call to TRACE_OUT: phase, the call's name, its
instruction count, its folded stacks, and how often each instruction of
the two drivers' own functions ran (by offset in its function), to read
beside objdump's disassembly of the module.
"""
import bisect
import json
import os
import re
import subprocess
import time

import gdb

STEPS_FD = 100
SYS_CLOSE = 3
# umad_bench's steps, one round: (system call number, descriptor, name).
ROUND = [
    (16, 100, "register (ioctl)"),
    (16, 100, "unregister (ioctl)"),
    (1, 100, "write, EIO"),
    (1, 100, "write"),
    (0, 101, "read"),
    (1, 107, "write, 4096 outstanding"),
    (257, 102, "open (openat)"),
    (3, 104, "close"),
    (17, 103, "sysfs ibdev (pread)"),
    (1, 105, "write, RMPP 2 segments"),
    (0, 106, "read, RMPP 2 segments"),
]
# The descriptors the steps use, from STEPS_FD on.
STEPS_FDS = range(STEPS_FD, max(fd for _, fd, _ in ROUND) + 1)
USER_TOP = 1 << 63
DRIVERS = ("[ib_umad]", "[ib_umad_rs]")

log_path = os.environ["TRACE_LOG"]
phases = int(os.environ["TRACE_PHASES"])


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), text=True,
                         capture_output=True, check=True).stdout.split("\n")
    # Rust's crate disambiguators say nothing here.
    return [re.sub(r"\[[0-9a-f]+\]", "", n) for n in out[:len(names)]]


def text_symbols(lines):
    syms = []
    for line in lines:
        f = line.split()
        if len(f) >= 3 and f[1] in "tTwW":
            module = f[3] if len(f) > 3 else ""
            syms.append((int(f[0], 16), f[2], module))
    return syms


def ksyms(lines):
    """The text symbols of the log's "@@ksym" lines among lines."""
    return text_symbols(line[len("@@ksym "):] for line in lines if line.startswith("@@ksym "))


class Symbols:
    """The text symbols of the kernel and its modules, phase by phase."""

    def __init__(self):
        self.load()

    def load(self):
        with open(log_path, errors="replace") as f:
            log = f.read().split("\n")
        ready = max(i for i, line in enumerate(log)
                    if line.startswith("@@rig trace ready"))
        start = max((i for i in range(ready) if log[i] == "@@rig trace symbols"),
                    default=0)
        kernel = [s for s in ksyms(log[:ready]) if not s[2]]
        modules = [s for s in ksyms(log[start:ready]) if s[2]]
        syms = sorted(kernel + modules)
        self.addrs = [s[0] for s in syms]
        names = demangle([s[1] for s in syms])
        self.names = [n + (" " + s[2] if s[2] else "") for n, s in zip(names, syms)]
        self.in_driver = [s[2] in DRIVERS for s in syms]

    def find(self, pc):
        """The index of the symbol pc is in, and whether pc is its start."""
        i = bisect.bisect_right(self.addrs, pc) - 1
        return i, self.addrs[i] == pc


def register(name):
    return int(gdb.parse_and_eval("$" + name)) & ((1 << 64) - 1)


def trace_call(symbols):
    """Single-steps the system call the stub stopped at; its folded stacks,
    and the drivers' instructions, by function and offset."""
    folded = {}
    lines = {}
    stack = []
    pc = register("pc")
    while pc >= USER_TOP:
        i, at_start = symbols.find(pc)
        if not stack or stack[-1] != i:
            if at_start or i not in stack:
                stack.append(i)
            else:
                del stack[stack.index(i) + 1:]
        key = tuple(stack)
        folded[key] = folded.get(key, 0) + 1
        if symbols.in_driver[i]:
            at = (i, pc - symbols.addrs[i])
            lines[at] = lines.get(at, 0) + 1
        gdb.execute("stepi", to_string=True)
        pc = register("pc")
    by_function = {}
    for (i, offset), n in sorted(lines.items()):
        by_function.setdefault(symbols.names[i], {})["%#x" % offset] = n
    return {";".join(symbols.names[i] for i in k): n for k, n in folded.items()}, by_function


def ready_phases():
    """How many phases the log says are ready for the tracer."""
    with open(log_path, errors="replace") as f:
        return sum(line.startswith("@@rig trace ready") for line in f)


def main():
    symbols = Symbols()
    gdb.execute("set pagination off")
    gdb.execute("target remote " + os.environ["TRACE_TARGET"])
    entry = symbols.addrs[symbols.names.index("entry_SYSCALL_64")]
    stop = gdb.Breakpoint("*%#x" % entry, internal=True)
    stop.condition = "$rdi >= %d && $rdi < %d" % (STEPS_FDS.start, STEPS_FDS.stop)
    out = open(os.environ["TRACE_OUT"], "w")
    phase, seq = 0, 0
    while phase < phases:
        gdb.execute("continue", to_string=True)
        nr, fd = register("rax"), register("rdi")
        if nr == SYS_CLOSE and fd == STEPS_FD:
            phase, seq = phase + 1, 0
            if phase < phases:
                # The steps wait a few seconds after "ready": time to attach.
                gdb.execute("detach", to_string=True)
                while ready_phases() <= phase:
                    time.sleep(0.2)
                gdb.execute("target remote " + os.environ["TRACE_TARGET"], to_string=True)
            continue
        if seq == 0:
            # The phase's modules, loaded before it began.
            symbols.load()
        stop.enabled = False
        folded, lines = trace_call(symbols)
        stop.enabled = True
        want = ROUND[seq % len(ROUND)]
        name = want[2] if want[:2] == (nr, fd) else "syscall %d on fd %d" % (nr, fd)
        json.dump({"phase": phase, "round": seq // len(ROUND), "call": name,
                   "instructions": sum(folded.values()), "folded": folded,
                   "lines": lines}, out)
        out.write("\n")
        out.flush()
        seq += 1
    gdb.execute("detach")


main()
