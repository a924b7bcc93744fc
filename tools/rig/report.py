#!/usr/bin/env python3
"""Judges a differential suite run from the guest's serial log.

Reads the "@@" lines that guest/init writes (a test program's output as
"@@tap <driver> <program> <line>", its exit status as "@@exit"), the TAP and
KTAP the selftests print, the two expected-failure lists and the list of
expected skips; prints every test's result per driver side by side, and
exits non-zero on anything unexpected:

- a failure that is not listed, or that does not show the text its entry
  expects; a listed failure that passes, or skips, where it is certain (so
  the lists cannot go stale); a test whose TAP says XFAIL, XPASS or TODO
  (only the lists may expect a failure);
- a skip that expected-skips.txt does not name for this flavour, or that
  does not show the text its entry expects; a skip on one driver of a test
  that the other driver ran, unless the entry names that driver alone; a
  test that runs where its entry says the skip is certain;
- a listed test that does not exist in a program that ran;
- a program that did not exit, that bailed out, that has no TAP plan or
  reported another number of tests than its plan, or that exited non-zero
  other than 1 with a failed test or 4 (KSFT_SKIP) with nothing but
  skips; its last lines are shown;
- a test missing for one driver: a rig:* result of a driver whose phase
  began, a program started for C but not for ib_umad_rs (which runs every
  program C runs), or a test of a program that ran; a driver the guest
  said it would run ("@@rig drivers", from rig.drivers) whose phase did
  not run; a test or
  result reported twice; a guest that did not finish;
- on the series kernel, a test of one of the driver's earlier steps
  ("step-NAME", a phase of its own that runs the tests of what the step
  adds) that does not pass where the whole driver passes it: a
  skip or a failure is the step's only where ib_umad_rs has the same.

A test is "<program>:<name>": the harness's "<fixture>[.<variant>].<test>",
a KTAP description (the text between the test number and " # ") with each
run of white space made one "_"; the test's number where it has no
description; the program alone where the program skipped whole
("1..0 # SKIP <reason>"). A program the guest did not start for a driver (a
flavour's selection, rig.c_tests) shows "-". Expected failures and skips
count as skipped.

Each list has an entry a line, a line starting with "#" being a comment:

    <test id> [@<scope>] <reason> | expect: <text>

where <text> is part of one line of the test's output: what the program
printed after the test before it up to the test's own result line (the
harness's "#" lines of a failed assertion and its TH_LOG, a KTAP script's
messages, the result line with a skip's reason).

expected-failures-{c,rust}.txt: the scope names the flavours where the
failure is certain ("@plain,race"; "@nowhere" for none); on the others it is
a race the guest may not lose, and either outcome passes. "@!series,!rdma-rc"
names the flavours where it is not expected at all (the series kernel's C
driver has the fix, as has rdma-rc's): there the test must pass. No scope: certain everywhere.

expected-skips.txt: a test id prefixed "c:" or "rust:" is that driver's
skip alone, and may skip where the other driver runs the test; unprefixed,
the entry is both drivers'. The scope names the flavours where the test
skips, certain there unless marked "?" ("@plain,debug?"): a "?" flavour's
skip depends on the run, and either outcome passes. On a flavour not named
the skip fails the run, unlike an unnamed flavour of an expected failure.
No scope: certain everywhere.

    report.py <flavour> <serial log> <expected-failures-c>
              <expected-failures-rust> <expected-skips>
"""
import os
import re
import sys
from dataclasses import dataclass, field

DRIVERS = ("c", "rust")
# The phases of the driver's earlier steps, judged against ib_umad_rs's.
STEP = "step-"
FLAVOURS = ("debian", "rt-amd64", "cloud-amd64", "arm64", "arm64-16k", "rt-arm64", "sid", "rdma-rc", "series", "debug", "race", "plain", "lean")
# KTAP: "ok|not ok <number> [<description>] [# <directive> [<reason>]]".
RESULT = re.compile(r"(ok|not ok) (\d+)(?: (.*))?$")
PLAN = re.compile(r"1\.\.(\d+)\s*(?:#\s*(.*))?$")
# kselftest.h's exit statuses.
KSFT_FAIL, KSFT_SKIP = 1, 4
# Directives by which a test expects its own failure: the lists do that here.
SELF_EXCUSED = ("TODO", "XFAIL", "XPASS")
# Lines shown of a program or a test that went wrong.
TAIL = 10


@dataclass(frozen=True)
class Entry:
    """A list's entry, as it applies to this flavour."""
    certain: bool  # the listed outcome must happen
    expect: str  # text one line of the test's output shows
    one_driver: bool = False  # an expected skip of one driver alone


@dataclass(frozen=True)
class Result:
    outcome: str  # "pass", "fail" or "skip"
    lines: list  # the test's output, through its result line


@dataclass
class Run:
    """One test program's run against one driver."""
    lines: list = field(default_factory=list)
    rc: int | None = None  # None: it did not exit
    plan: int | None = None
    skipped_whole: bool = False  # "1..0 # SKIP"
    bail: str | None = None
    outcomes: list = field(default_factory=list)  # one per result line
    first_unreported: int = 0  # the first line after the last result


@dataclass
class Log:
    results: dict  # {driver: {test id: Result}}
    runs: dict  # {(driver, program): Run}
    started: dict  # {driver: programs started}
    begun: set  # drivers whose phase began
    ended: set  # drivers whose phase ended
    finished: bool  # the guest reached its verdict
    details: list  # kernel reports to show
    drivers: list  # the drivers the guest said it would run ("@@rig drivers")
    twice: list  # (driver, test id) reported more than once


def read_entries(path):
    """(where, test id, scope or None, expected text) of each entry."""
    entries = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{path}:{number}"
            entry, _, expect = line.partition(" | expect: ")
            test, _, reason = entry.partition(" ")
            scope = None
            if reason.startswith("@"):
                token, _, reason = reason.partition(" ")
                scope = token[1:].split(",")
            if not reason.strip():
                sys.exit(f"{where}: {test} has no reason")
            if not expect.strip():
                sys.exit(f"{where}: {test} does not end in '| expect: <text its output shows>'")
            entries.append((where, test, scope, expect.strip()))
    return entries


def check_flavours(where, names, also=()):
    for name in names:
        if name not in FLAVOURS + also:
            sys.exit(f"{where}: no flavour '{name}' (flavours: {', '.join(FLAVOURS)})")


def read_expected_failures(path, flavour):
    """{test id: Entry} of the entries that apply to flavour."""
    expected = {}
    for where, test, scope, expect in read_entries(path):
        if scope is None:
            certain = True
        elif any(s.startswith("!") for s in scope):
            if not all(s.startswith("!") for s in scope):
                sys.exit(f"{where}: a scope is either all '!' or none")
            excluded = [s[1:] for s in scope]
            check_flavours(where, excluded)
            if flavour in excluded:
                continue
            certain = True
        else:
            check_flavours(where, scope, also=("nowhere",))
            certain = flavour in scope
        if test in expected:
            sys.exit(f"{where}: {test} is listed twice")
        expected[test] = Entry(certain, expect)
    return expected


def read_expected_skips(path, flavour):
    """{driver: {test id: Entry}} of the entries that apply to flavour."""
    skips = {d: {} for d in DRIVERS}
    for where, test, scope, expect in read_entries(path):
        prefix, _, rest = test.partition(":")
        drivers = (prefix,) if prefix in DRIVERS else DRIVERS
        if prefix in DRIVERS:
            test = rest
        if scope is None:
            certain = True
        else:
            check_flavours(where, [s.removesuffix("?") for s in scope])
            if flavour not in scope and f"{flavour}?" not in scope:
                continue
            certain = flavour in scope
        for d in drivers:
            if test in skips[d]:
                sys.exit(f"{where}: {d}: {test} is listed twice for {flavour}")
            skips[d][test] = Entry(certain, expect, one_driver=len(drivers) == 1)
    return skips


def parse_result(line):
    """(name, outcome) of a KTAP result line, or None; name is empty
    where the line has no description."""
    m = RESULT.match(line)
    if not m:
        return None
    ok, number, rest = m.group(1) == "ok", m.group(2), m.group(3) or ""
    # The description ends at " # "; "ok 3 # SKIP why" has none.
    if rest.startswith("#"):
        description, directive = "", rest[1:]
    else:
        description, _, directive = rest.partition(" # ")
    words = directive.split()
    keyword = words[0].upper() if words else ""
    if ok and keyword == "SKIP":
        outcome = "skip"
    elif ok and keyword not in SELF_EXCUSED:
        outcome = "pass"
    else:
        outcome = "fail"
    # The harness's names have no spaces; a KTAP script's may.
    return "_".join(description.split()) or number, outcome


def read_log(path):
    results = {d: {} for d in DRIVERS}
    runs, started = {}, {d: set() for d in DRIVERS}

    def phase(driver):
        """Whether driver is one the log's lines may name; a step's is
        taken in when first named."""
        if driver.startswith(STEP):
            results.setdefault(driver, {})
            started.setdefault(driver, set())
        return driver in results

    begun, ended, finished, details, drivers, twice = set(), set(), False, [], [], []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            words = line.split(" ", 3)
            if line.startswith("@@rig drivers ") and not drivers:
                drivers = [d for d in line.split()[2].split(",") if d]
            if line.startswith("@@tap ") and len(words) == 4 and phase(words[1]):
                driver, program, text = words[1:]
                run = runs.setdefault((driver, program), Run())
                run.lines.append(text)
                twice += [(driver, t) for t in read_tap(program, run, text, results[driver])]
            elif line.startswith("@@result ") and len(words) >= 4 and phase(words[1]):
                outcome = "pass" if words[3].startswith("ok") else "fail"
                if words[2] in results[words[1]]:
                    twice.append((words[1], words[2]))
                results[words[1]][words[2]] = Result(outcome, [words[3]])
            elif line.startswith("@@rig phase ") and line.endswith(" begin"):
                begun.add(line.split()[2])
            elif line.startswith("@@rig phase ") and line.endswith(" end"):
                ended.add(line.split()[2])
            elif line.startswith("@@start ") and len(words) == 3 and phase(words[1]):
                started[words[1]].add(words[2])
                runs[(words[1], words[2])] = Run()
            elif line.startswith("@@exit ") and len(words) == 4:
                run = runs.get((words[1], words[2]))
                status = words[3].split(" ", 1)[0]
                if run and status.isdigit():
                    run.rc = int(status)
            elif line.startswith("@@rig verdict"):
                finished = True
            elif line.startswith("@@dmesg ") or line.startswith("@@known-report "):
                details.append(line)
    return Log(results, runs, started, begun, ended, finished, details, drivers, twice)


def read_tap(program, run, text, results):
    """Takes one line of a program's output into its run and results;
    returns the test id it reported again, if it did."""
    if text.startswith("Bail out!") and run.bail is None:
        run.bail = text
    plan = PLAN.match(text)
    if plan and run.plan is None:
        run.plan = int(plan.group(1))
        if run.plan == 0 and (plan.group(2) or "").upper().startswith("SKIP"):
            run.skipped_whole = True
            results[program] = Result("skip", run.lines[run.first_unreported:])
    parsed = parse_result(text)
    if not parsed:
        return []
    name, outcome = parsed
    test = f"{program}:{name}"
    again = [test] if test in results else []
    results[test] = Result(outcome, run.lines[run.first_unreported:])
    run.outcomes.append(outcome)
    run.first_unreported = len(run.lines)
    return again


def run_problems(run, finished):
    """What is wrong with a program's run as a whole."""
    problems = []
    if run.rc is None:
        problems.append("did not exit" + ("" if finished else " (the guest's time ran out)"))
    if run.bail:
        problems.append(f'bailed out: "{run.bail}"')
    reported = len(run.outcomes)
    if run.plan is None:
        problems.append(f"printed no TAP plan ({reported} tests reported)")
    elif run.plan == 0 and not run.skipped_whole:
        problems.append("plans no tests")
    elif reported != run.plan:
        problems.append(f"reported {reported} of the {run.plan} tests of its plan")
    if run.rc:
        # 1: a test failed, and the lists judge it; 4: kselftest's skip of
        # the whole program (the harness exits 0 when all its tests skip).
        failed = run.rc == KSFT_FAIL and "fail" in run.outcomes
        skipped = run.rc == KSFT_SKIP and (run.skipped_whole or (
            run.outcomes and all(o == "skip" for o in run.outcomes)))
        if not failed and not skipped:
            signal = f" (killed by signal {run.rc - 128})" if run.rc > 128 else ""
            problems.append(f"exited {run.rc}{signal}")
    return problems


def shows(lines, text):
    return any(text in line for line in lines)


def judge(test, d, log, ran, flavour, xfail, skip, xfail_list):
    """(cell, problems) of one test against one driver."""
    result = log.results[d].get(test)
    program = test.split(":", 1)[0]
    if result is None:
        # rig:* results come from every phase; ib_umad_rs runs every
        # program C runs (rig.c_tests narrows C alone).
        owed = (program == "rig" and d in log.begun) or (
            d == "rust" and d in log.begun and program in log.started["c"])
        if log.finished and program not in log.started[d] and not owed:
            return "-", []
        return "MISSING", ["did not run"]
    other_ran = [o for o in ran if o != d and test in log.results[o]
                 and log.results[o][test].outcome != "skip"]
    problems = []
    if result.outcome == "skip":
        cell = "SKIP"
        if skip is None:
            problems.append(f"skips, and expected-skips.txt does not say it does on {flavour}")
        elif not shows(result.lines, skip.expect):
            problems.append(f'skips, but without "{skip.expect}" (expected-skips.txt)')
        elif other_ran and not skip.one_driver:
            problems.append(f"skips where {other_ran[0]} runs it, and expected-skips.txt "
                            f"does not list it for {d} alone")
        elif xfail and xfail.certain:
            problems.append(f"skips but is listed as expected to fail ({xfail_list})")
        else:
            cell = "xskip"
        return cell, problems
    if skip and skip.certain:
        problems.append(f"runs, but expected-skips.txt says it skips on {flavour}")
    if result.outcome == "pass":
        if xfail and xfail.certain:
            problems.append(f"passes but is listed as expected to fail ({xfail_list})")
            return "XPASS", problems
        return ("ok" if not problems else "RAN"), problems
    if xfail and shows(result.lines, xfail.expect):
        return "xfail", problems
    if xfail:
        problems.append(f'fails, but without "{xfail.expect}" ({xfail_list})')
    else:
        problems.append("fails")
    return "FAIL", problems


def judge_step(test, d, log):
    """(cell, problems) of one test against one of the driver's steps: a
    test not in the step's share shows "-"; one the step does not pass,
    ib_umad_rs must not pass either."""
    result = log.results[d].get(test)
    if result is None:
        return "-", []
    if result.outcome == "pass":
        return "ok", []
    whole = log.results["rust"].get(test)
    if whole is not None and whole.outcome == result.outcome:
        return ("xskip" if result.outcome == "skip" else "xfail"), []
    verb = "skips" if result.outcome == "skip" else "fails"
    did = {"pass": "passes it", "fail": "fails it", "skip": "skips it"}
    return result.outcome.upper(), [f"{verb} at this step, where ib_umad_rs "
                                    f"{did[whole.outcome] if whole else 'does not run it'}"]


def main(argv):
    flavour, log_path, xfail_c, xfail_rust, skips_path = argv
    check_flavours("report.py", [flavour])
    expected = {"c": read_expected_failures(xfail_c, flavour),
                "rust": read_expected_failures(xfail_rust, flavour)}
    xfail_lists = {"c": os.path.basename(xfail_c), "rust": os.path.basename(xfail_rust)}
    skips = read_expected_skips(skips_path, flavour)
    log = read_log(log_path)
    ran = [d for d in DRIVERS if log.results[d] or d in log.ended or d in log.drivers]
    steps = [d for d in log.results if d.startswith(STEP)]
    tests = sorted(set().union(*(log.results[d] for d in ran + steps)))

    passed = failed = xfailed = xskipped = 0
    problems, shown = [], []
    width = max([len(t) for t in tests] + [10])
    columns = {d: d.removeprefix(STEP) for d in ran + steps}
    print(f"{'test':<{width}}  " + "  ".join(f"{c:<6}" for c in columns.values()))
    for test in tests:
        cells = []
        for d in ran + steps:
            if d in steps:
                cell, wrong = judge_step(test, d, log)
            elif not any(test in log.results[w] for w in ran):
                # A test only a step has (its shorter cycles name it).
                cell, wrong = "-", []
            else:
                cell, wrong = judge(test, d, log, ran, flavour, expected[d].get(test),
                                    skips[d].get(test), xfail_lists[d])
            passed += cell == "ok"
            xfailed += cell == "xfail"
            xskipped += cell == "xskip"
            failed += len(wrong)
            problems += [f"{d}: {test} {w}" for w in wrong]
            if wrong and test in log.results[d]:
                shown.append((f"{d}: {test}", log.results[d][test].lines))
            cells.append(f"{cell:<{max(6, len(columns[d]))}}")
        print(f"{test:<{width}}  " + "  ".join(cells))

    # An entry of a program left out (rig.tests) says nothing; one of a
    # program that ran names a test that does not exist.
    programs = {t.split(":", 1)[0] for t in tests}
    for d in ran:
        listed = [(test, xfail_lists[d]) for test in expected[d]]
        listed += [(test, "expected-skips.txt") for test in skips[d]]
        for test, name in listed:
            if test not in tests and test.split(":", 1)[0] in programs:
                failed += 1
                problems.append(f"{d}: {test} is listed in {name} but does not exist")

    for (d, program), run in sorted(log.runs.items()):
        wrong = run_problems(run, log.finished)
        if wrong:
            failed += 1
            problems.append(f"{d}: {program} {', '.join(wrong)}")
            shown.append((f"{d}: {program}", run.lines))
    for d in log.drivers:
        if d not in log.begun:
            failed += 1
            problems.append(f"{d}: its phase did not run (the guest said it would)")
    for d, test in log.twice:
        failed += 1
        problems.append(f"{d}: {test} is reported more than once")
    if not log.finished:
        failed += 1
        problems.append(f"the guest did not finish; see {log_path}")

    for line in log.details:
        print(line)
    for what, lines in shown:
        print(f"{what}, its last lines:")
        for line in lines[-TAIL:]:
            print(f"    {line}")
    for problem in problems:
        print(f"UNEXPECTED: {problem}")
    print(f"{flavour}: {xfailed} expected failures and {xskipped} expected skips counted as skipped")
    print(f"{flavour}: {passed} passed, {failed} failed, {xfailed + xskipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__.rsplit("\n\n", 1)[1])
    sys.exit(main(sys.argv[1:]))
