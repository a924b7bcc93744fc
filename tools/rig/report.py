#!/usr/bin/env python3
"""Judges a differential suite run from the guest's serial log.

Reads the "@@" lines that guest/init writes, the TAP that the selftests print,
and the two expected-failure lists; prints every test's result per driver side
by side, and exits non-zero on any unexpected result: a failure that is not
listed, a listed failure that passed (so the lists cannot go stale), a test
missing for one driver, or a guest that did not finish. A program the guest
did not start for a driver (a flavour's selection, rig.c_tests) shows "-".
A list entry may name the flavours where its failure is certain
("@plain,race"; "@nowhere" for none); on the others it is a race the guest
may not lose, and either outcome passes. "@!series" names the flavours
where it is not expected at all (the series kernel's C driver has the fix):
there the test must pass.

    report.py <flavour> <serial log> <expected-failures-c> <expected-failures-rust>
"""
import re
import sys

DRIVERS = ("c", "rust")
TAP = re.compile(r"^(not ok|ok) \d+ (\S+)(?: # (SKIP|XFAIL)\b ?(.*))?")


def read_expected(path, flavour):
    """`<test id> [@flavour,... | @!flavour,...] <reason>` per line; #
    starts a comment. {test id: True where the failure is certain, False
    where it is a race that this flavour's guest may not lose (either
    outcome then passes)}; an entry "@!" excludes this flavour is left out."""
    expected = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                test, _, reason = line.partition(" ")
                where = None
                if reason.startswith("@"):
                    scope, _, reason = reason.partition(" ")
                    where = scope[1:].split(",")
                if not reason.strip():
                    sys.exit(f"{path}: {test} has no reason")
                if where and where[0].startswith("!"):
                    if flavour not in [w.lstrip("!") for w in where]:
                        expected[test] = True
                    continue
                expected[test] = where is None or flavour in where
    return expected


def read_results(log):
    """{driver: {test id: "pass" | "fail" | "skip"}}, {driver: programs
    started}, the set of drivers whose phase ended, whether the guest
    finished, and the lines to show."""
    results = {d: {} for d in DRIVERS}
    started = {d: set() for d in DRIVERS}
    ended, finished, details = set(), False, []
    running = None  # the test program that started and has not exited
    with open(log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            words = line.split(" ", 3)
            if line.startswith("@@tap ") and len(words) == 4:
                m = TAP.match(words[3])
                if m and words[1] in results:
                    outcome = "skip" if m.group(3) == "SKIP" else (
                        "pass" if m.group(1) == "ok" else "fail")
                    results[words[1]][f"{words[2]}:{m.group(2)}"] = outcome
            elif line.startswith("@@result ") and len(words) >= 4 and words[1] in results:
                results[words[1]][words[2]] = "pass" if words[3].startswith("ok") else "fail"
            elif line.startswith("@@rig phase ") and line.endswith(" end"):
                ended.add(line.split()[2])
            elif line.startswith("@@start ") and len(words) == 3:
                running = f"{words[1]}: {words[2]}"
                if words[1] in started:
                    started[words[1]].add(words[2])
            elif line.startswith("@@exit "):
                running = None
            elif line.startswith("@@rig verdict"):
                finished = True
            elif line.startswith("@@dmesg ") or line.startswith("@@known-report "):
                details.append(line)
    if running and not finished:
        details.append(f"@@rig time ran out in {running}")
    return results, started, ended, finished, details


def main():
    title, log, xfail_c, xfail_rust = sys.argv[1:5]
    expected = {"c": read_expected(xfail_c, title), "rust": read_expected(xfail_rust, title)}
    results, started, ended, finished, details = read_results(log)
    ran = [d for d in DRIVERS if results[d] or d in ended]
    tests = sorted(set().union(*(results[d] for d in ran)))

    passed = failed = xfailed = skipped = 0
    problems = []
    width = max([len(t) for t in tests] + [10])
    print(f"{'test':<{width}}  " + "  ".join(f"{d:<6}" for d in ran))
    for test in tests:
        cells = []
        for d in ran:
            outcome = results[d].get(test, "missing")
            listed = test in expected[d]
            certain = expected[d].get(test, False)
            program = test.split(":", 1)[0]
            if outcome == "missing" and finished and program not in started[d]:
                cell = "-"
            elif outcome == "skip":
                cell, skipped = "SKIP", skipped + 1
            elif outcome == "pass" and not certain:
                cell, passed = "ok", passed + 1
            elif outcome == "fail" and listed:
                cell, xfailed = "xfail", xfailed + 1
            else:
                cell = {"pass": "XPASS", "fail": "FAIL", "missing": "MISSING"}[outcome]
                failed += 1
                why = {"XPASS": "passes but is listed as expected to fail",
                       "FAIL": "fails", "MISSING": "did not run"}[cell]
                problems.append(f"{d}: {test} {why}")
            cells.append(f"{cell:<6}")
        print(f"{test:<{width}}  " + "  ".join(cells))

    programs = {t.split(":", 1)[0] for t in tests}
    for d in ran:
        for test in expected[d]:
            # A program left out (rig.tests) says nothing of its tests.
            if test not in tests and test.split(":", 1)[0] in programs:
                failed += 1
                problems.append(f"{d}: {test} is listed as expected to fail but does not exist")
    if not finished:
        failed += 1
        problems.append(f"the guest did not finish; see {log}")
    for line in details:
        print(line)
    for problem in problems:
        print(f"UNEXPECTED: {problem}")
    print(f"{title}: {xfailed} expected failures and {skipped} skips counted as skipped")
    print(f"{title}: {passed} passed, {failed} failed, {xfailed + skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
