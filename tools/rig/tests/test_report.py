"""report.py's verdicts on made-up serial logs, a rule a test.

    python3 -m unittest discover -s tools/rig/tests
"""
import contextlib
import importlib.util
import io
import os
import re
import tempfile
import textwrap
import unittest

RIG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTS = os.path.join(RIG, "expected")
spec = importlib.util.spec_from_file_location("report", os.path.join(RIG, "report.py"))
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)


def harness(*tests, plan=None):
    """A kselftest_harness.h program's output: tests are (name, outcome,
    lines printed while it runs); a skip's reason is its last line."""
    out = ["TAP version 13", f"1..{len(tests) if plan is None else plan}"]
    for number, (name, outcome, lines) in enumerate(tests, 1):
        out.append(f"#  RUN           {name} ...")
        out += lines
        out.append(f"#      {'FAIL' if outcome == 'fail' else '  OK'}  {name}")
        out.append({"pass": f"ok {number} {name}",
                    "fail": f"not ok {number} {name}",
                    "skip": f"ok {number} {name} # SKIP {lines[-1] if lines else ''}"}[outcome])
    return out


def program(driver, name, output, rc=0, exited=True):
    lines = [f"@@start {driver} {name}"] + [f"@@tap {driver} {name} {line}" for line in output]
    return lines + ([f"@@exit {driver} {name} {rc} 1s"] if exited else [])


def phase(driver, *runs, end=True):
    lines = [f"@@rig phase {driver} begin"]
    for run in runs:
        lines += run
    return lines + ([f"@@rig phase {driver} end"] if end else [])


def both(name, output, rc=0):
    """The same run against each driver, and the guest's verdict."""
    return phase("c", program("c", name, output, rc)) + \
        phase("rust", program("rust", name, output, rc)) + ["@@rig verdict done"]


class Report(unittest.TestCase):
    def judge(self, log, flavour="debian", xfail_c="", xfail_rust="", skips=""):
        """report.py's exit status and output on log (lines) and lists."""
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, text in (("serial.log", "\n".join(log) + "\n"),
                               ("expected-failures-c.txt", xfail_c),
                               ("expected-failures-rust.txt", xfail_rust),
                               ("expected-skips.txt", skips)):
                paths.append(os.path.join(tmp, name))
                with open(paths[-1], "w") as f:
                    f.write(textwrap.dedent(text))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                status = report.main([flavour] + paths)
        return status, out.getvalue()

    def assertPasses(self, verdict):
        status, out = verdict
        self.assertEqual(status, 0, out)
        self.assertNotIn("UNEXPECTED", out)
        return out

    def assertFails(self, verdict, *why):
        status, out = verdict
        self.assertEqual(status, 1, out)
        problems = "\n".join(line for line in out.splitlines() if line.startswith("UNEXPECTED: "))
        for text in why:
            self.assertIn(text, problems, out)
        return out

    def counts(self, out):
        """The last line's counts, as tools/rig/test.sh greps them."""
        last = out.splitlines()[-1]
        return tuple(int(re.search(rf"(\d+) {word}", last).group(1))
                     for word in ("passed", "failed", "skipped"))

    # A clean run, and the summary's format.

    def test_a_clean_run_passes_with_its_counts(self):
        out = self.assertPasses(self.judge(both("umad_open", harness(
            ("global.open", "pass", []), ("global.close", "pass", []),
        ))))
        self.assertEqual(self.counts(out), (4, 0, 0))
        self.assertRegex(out.splitlines()[-1], r"^debian: 4 passed, 0 failed, 0 skipped$")

    # What went missing: a pseudo-test, a program, a phase; twice reported.

    def test_a_rig_result_missing_for_one_driver_fails(self):
        # rust's rig:dmesg_clean line split by the kernel's console output.
        log = phase("c", ["@@result c rig:dmesg_clean ok"]) + \
            phase("rust", ["@@result rust rig:dm@@result-split"]) + ["@@rig verdict done"]
        self.assertFails(self.judge(log), "rust: rig:dmesg_clean did not run")

    def test_a_program_c_ran_and_rust_did_not_fails(self):
        log = phase("c", program("c", "umad_open", harness(("global.open", "pass", [])))) + \
            phase("rust") + ["@@rig verdict done"]
        self.assertFails(self.judge(log), "rust: umad_open:global.open did not run")

    def test_a_phase_the_guest_said_it_would_run_that_did_not_fails(self):
        log = ["@@rig drivers c,rust"] + \
            phase("c", program("c", "umad_open", harness(("global.open", "pass", [])))) + \
            ["@@rig verdict done"]
        self.assertFails(self.judge(log), "rust: its phase did not run")

    def test_a_test_reported_twice_fails(self):
        output = ["TAP version 13", "1..2", "not ok 1 x", "ok 2 x"]
        self.assertFails(self.judge(both("umad_open", output, rc=1)),
                         "c: umad_open:x is reported more than once")

    # The driver's earlier steps (the series kernel): each passes its share.

    def with_step(self, step_tests, whole_tests):
        """A series run: a step's phase of umad_ioctl, then C's and the
        whole driver's."""
        return ["@@rig drivers step-agents,c,rust"] + \
            phase("step-agents", program("step-agents", "umad_ioctl", harness(*step_tests))) + \
            phase("c", program("c", "umad_ioctl", harness(*whole_tests))) + \
            phase("rust", program("rust", "umad_ioctl", harness(*whole_tests))) + \
            ["@@rig verdict done"]

    def test_a_step_passing_its_share_passes(self):
        out = self.assertPasses(self.judge(self.with_step(
            [("global.register", "pass", [])],
            [("global.register", "pass", []), ("global.register_rmpp", "pass", [])]), "series"))
        self.assertIn("agents", out.splitlines()[0])
        self.assertRegex(out, r"global.register_rmpp +ok +ok +-")
        self.assertEqual(self.counts(out), (5, 0, 0))

    def test_a_step_failing_what_the_driver_passes_fails(self):
        self.assertFails(self.judge(self.with_step(
            [("global.register", "fail", ["# register: Test failed"])],
            [("global.register", "pass", [])]), "series"),
            "step-agents: umad_ioctl:global.register fails at this step, where ib_umad_rs passes it")

    def test_a_step_skipping_what_the_driver_runs_fails(self):
        self.assertFails(self.judge(self.with_step(
            [("global.register", "skip", ["no device"])],
            [("global.register", "pass", [])]), "series"),
            "step-agents: umad_ioctl:global.register skips at this step, where ib_umad_rs passes it")

    def test_a_step_may_skip_what_the_driver_skips(self):
        skip = [("global.register", "skip", ["no 32-bit"])]
        out = self.assertPasses(self.judge(self.with_step(skip, skip), "series",
                                           skips="umad_ioctl:global.register @series 32-bit | expect: no 32-bit\n"))
        self.assertEqual(self.counts(out), (0, 0, 3))

    def test_a_test_only_a_step_has_is_not_owed_by_the_drivers(self):
        out = self.assertPasses(self.judge(self.with_step(
            [("global.load_unload_2_cycles", "pass", [])],
            [("global.load_unload_5_cycles", "pass", [])]), "series"))
        self.assertRegex(out, r"global.load_unload_2_cycles +- +- +ok")

    def test_a_step_whose_phase_did_not_run_fails(self):
        log = ["@@rig drivers step-module,c,rust"] + both("umad_open", harness(("global.open", "pass", [])))
        self.assertFails(self.judge(log, "series"), "step-module: its phase did not run")

    # Programs: exit status, Bail out!, plan, the guest's time.

    def test_a_program_cut_off_by_the_guests_time_fails(self):
        log = phase("c", program("c", "umad_gsi", [], exited=False), end=False)
        self.assertFails(self.judge(log), "c: umad_gsi did not exit (the guest's time ran out)",
                         "the guest did not finish")

    def test_a_program_killed_by_its_timeout_loses_no_test_silently(self):
        # The same cut on both drivers: 1 of 8 tests, then SIGTERM.
        output = ["TAP version 13", "1..8", "#  RUN           gsi.first ...",
                  "#            OK  gsi.first", "ok 1 gsi.first", "#  RUN           gsi.second ..."]
        out = self.assertFails(self.judge(both("umad_gsi", output, rc=143)),
                               "c: umad_gsi reported 1 of the 8 tests of its plan, exited 143 (killed by signal 15)",
                               "rust: umad_gsi reported 1 of the 8 tests")
        self.assertIn("#  RUN           gsi.second ...", out)  # its last lines

    def test_a_bail_out_without_a_failed_test_fails(self):
        # umad_loopback.sh when ib_loopback does not load.
        output = ["TAP version 13", "1..13", "# nodes before: x",
                  "Bail out!  insmod /lib/modules/test/ib_loopback.ko failed",
                  "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:0 error:0"]
        self.assertFails(self.judge(both("umad_loopback.sh", output, rc=1)),
                         'c: umad_loopback.sh bailed out: "Bail out!  insmod',
                         "reported 0 of the 13 tests", "exited 1")

    def test_a_plan_not_met_fails_despite_exit_0(self):
        output = ["TAP version 13", "1..3", "ok 1 a", "ok 2 b"]
        self.assertFails(self.judge(both("umad_hotplug.sh", output)),
                         "c: umad_hotplug.sh reported 2 of the 3 tests of its plan")

    def test_a_program_without_a_plan_fails(self):
        self.assertFails(self.judge(both("umad_x", ["ok 1 a"])), "c: umad_x printed no TAP plan")

    def test_exit_1_without_a_failed_test_fails(self):
        self.assertFails(self.judge(both("umad_open", harness(("global.open", "pass", [])), rc=1)),
                         "c: umad_open exited 1")

    def test_exit_1_of_a_listed_failure_passes(self):
        output = harness(("removal.reader", "fail", ["# umad_removal.c:184:reader:read() still blocked 10 s"]))
        log = phase("c", program("c", "umad_removal", output, rc=1)) + ["@@rig verdict done"]
        out = self.assertPasses(self.judge(log, xfail_c="umad_removal:removal.reader why | expect: read() still blocked\n"))
        self.assertEqual(self.counts(out), (0, 0, 1))

    def test_exit_4_only_when_every_test_skips(self):
        skipping = harness(("faults.open", "skip", ["no fail-nth"]))
        skips = "umad_faults:faults.open @debian why | expect: no fail-nth\n"
        self.assertPasses(self.judge(both("umad_faults", skipping, rc=4), skips=skips))
        mixed = harness(("faults.open", "skip", ["no fail-nth"]), ("faults.close", "pass", []))
        self.assertFails(self.judge(both("umad_faults", mixed, rc=4), skips=skips),
                         "c: umad_faults exited 4")

    def test_a_whole_program_skip_is_judged_as_a_skip(self):
        # umad_opensm.sh without opensm: ktap_skip_all, exit $KSFT_SKIP.
        output = ["TAP version 13", "1..0 # SKIP no /usr/sbin/opensm"]
        self.assertFails(self.judge(both("umad_opensm.sh", output, rc=4)),
                         "c: umad_opensm.sh skips, and expected-skips.txt does not say it does on debian")
        out = self.assertPasses(self.judge(both("umad_opensm.sh", output, rc=4),
                                           skips="umad_opensm.sh @debian why | expect: no /usr/sbin/opensm\n"))
        self.assertEqual(self.counts(out), (0, 0, 2))

    # Skips.

    def test_an_unlisted_skip_fails(self):
        output = harness(("faults.open", "skip", ["no fail-nth or failslab on this kernel"]))
        self.assertFails(self.judge(both("umad_faults", output)),
                         "c: umad_faults:faults.open skips, and expected-skips.txt does not say it does on debian",
                         "rust: umad_faults:faults.open skips")

    def test_a_listed_skip_passes_and_is_counted_apart(self):
        output = harness(("faults.open", "skip", ["no fail-nth or failslab on this kernel"]),
                         ("faults.close", "pass", []))
        out = self.assertPasses(self.judge(both("umad_faults", output), skips="""
            # a comment
            umad_faults:faults.open @debian,sid no fault injection | expect: no fail-nth
            """))
        self.assertEqual(self.counts(out), (2, 0, 2))
        self.assertIn("debian: 0 expected failures and 2 expected skips counted as skipped", out)

    def test_a_skip_on_a_flavour_its_entry_does_not_name_fails(self):
        output = harness(("faults.open", "skip", ["no fail-nth"]))
        self.assertFails(self.judge(both("umad_faults", output), flavour="plain",
                                    skips="umad_faults:faults.open @debian why | expect: no fail-nth\n"),
                         "c: umad_faults:faults.open skips, and expected-skips.txt does not say it does on plain")

    def test_a_skip_for_another_reason_fails(self):
        output = harness(("load.cycle", "skip", ["needs the rig: UMAD_MODULE_KO and the driver loaded"]))
        self.assertFails(self.judge(both("umad_faults", output),
                                    skips="umad_faults:load.cycle @debian why | expect: no fail-nth\n"),
                         'c: umad_faults:load.cycle skips, but without "no fail-nth"')

    def test_a_skip_on_one_driver_where_the_other_ran_fails(self):
        log = phase("c", program("c", "umad_faults", harness(("faults.open", "pass", [])))) + \
            phase("rust", program("rust", "umad_faults", harness(("faults.open", "skip", ["no fail-nth"])))) + \
            ["@@rig verdict done"]
        self.assertFails(self.judge(log), "rust: umad_faults:faults.open skips")
        # Listed for both drivers, it still may not skip on one alone.
        self.assertFails(self.judge(log, skips="umad_faults:faults.open @debian? why | expect: no fail-nth\n"),
                         "rust: umad_faults:faults.open skips where c runs it")

    def test_a_skip_listed_for_its_driver_alone_may_be_one_sided(self):
        # umad_opensm.sh's comparisons: the first driver has nothing to compare with.
        def run(driver, outcome):
            output = ["TAP version 13", "1..1"]
            if outcome == "skip":
                output += ["# no output of rust's run in this boot yet",
                           "ok 1 output_matches_the_other_driver_ibstat # SKIP"]
            else:
                output += ["ok 1 output_matches_the_other_driver_ibstat"]
            return phase(driver, program(driver, "umad_opensm.sh", output))
        log = run("c", "skip") + run("rust", "pass") + ["@@rig verdict done"]
        entry = "c:umad_opensm.sh:output_matches_the_other_driver_ibstat why | expect: no output of rust's run\n"
        out = self.assertPasses(self.judge(log, skips=entry))
        self.assertEqual(self.counts(out), (1, 0, 1))
        # The entry is C's: the same skip on Rust fails.
        self.assertFails(self.judge(run("c", "pass") + run("rust", "skip") + ["@@rig verdict done"], skips=entry),
                         "rust: umad_opensm.sh:output_matches_the_other_driver_ibstat skips, and",
                         "c: umad_opensm.sh:output_matches_the_other_driver_ibstat runs, but expected-skips.txt says it skips")

    def test_a_stale_expected_skip_fails(self):
        output = harness(("faults.open", "pass", []))
        self.assertFails(self.judge(both("umad_faults", output),
                                    skips="umad_faults:faults.open @debian why | expect: no fail-nth\n"),
                         "c: umad_faults:faults.open runs, but expected-skips.txt says it skips on debian")

    def test_an_expected_skip_of_a_test_that_does_not_exist_fails(self):
        output = harness(("faults.open", "pass", []))
        self.assertFails(self.judge(both("umad_faults", output),
                                    skips="umad_faults:faults.gone @debian why | expect: x\n"),
                         "c: umad_faults:faults.gone is listed in expected-skips.txt but does not exist")

    def test_a_conditional_skip_passes_either_way(self):
        skips = "umad_smp:lo.removal @debian? slow | expect: took more than the delay\n"
        skipping = harness(("lo.removal", "skip", ["removing iblo1 took more than the delay"]))
        self.assertPasses(self.judge(both("umad_smp", skipping), skips=skips))
        self.assertPasses(self.judge(both("umad_smp", harness(("lo.removal", "pass", []))), skips=skips))

    def test_a_skip_of_a_certain_expected_failure_fails(self):
        output = harness(("removal.reader", "skip", ["why"]))
        self.assertFails(self.judge(both("umad_removal", output),
                                    xfail_c="umad_removal:removal.reader why | expect: still blocked\n",
                                    skips="umad_removal:removal.reader @debian why | expect: why\n"),
                         "c: umad_removal:removal.reader skips but is listed as expected to fail")

    # Test names.

    def test_a_ktap_description_with_spaces_is_the_whole_test_id(self):
        # umad_trace.sh without event tracing, as ktap_helpers.sh prints it.
        output = ["TAP version 13", "1..1",
                  "ok 1 kernel without event tracing: no /sys/kernel/tracing/events/ib_umad # SKIP",
                  "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0"]
        test = "umad_trace.sh:kernel_without_event_tracing:_no_/sys/kernel/tracing/events/ib_umad"
        self.assertFails(self.judge(both("umad_trace.sh", output)), f"c: {test} skips")
        out = self.assertPasses(self.judge(both("umad_trace.sh", output), skips=f"""
            {test} @debian no tracing | expect: kernel without event tracing
            """))
        self.assertNotIn("umad_trace.sh:kernel ", out)

    def test_a_result_without_description_is_named_by_its_number(self):
        output = ["TAP version 13", "1..2", "ok 1 first", "ok 2 # SKIP no more"]
        self.assertFails(self.judge(both("umad_x", output, rc=4)), "c: umad_x:2 skips")

    def test_a_test_that_expects_its_own_failure_fails(self):
        output = ["TAP version 13", "1..1", "ok 1 global.flaky # XFAIL unknown"]
        self.assertFails(self.judge(both("umad_x", output)), "c: umad_x:global.flaky fails")

    # Expected failures.

    def test_an_expected_failure_passes_only_with_its_text(self):
        def log(diagnostic):
            output = harness(("rename.ibdev", "fail", ["# reader 0: 1 of 9 reads torn", diagnostic]))
            return phase("c", program("c", "umad_sysfs", output, rc=1)) + \
                phase("rust", program("rust", "umad_sysfs", harness(("rename.ibdev", "pass", [])))) + \
                ["@@rig verdict done"]
        xfail = 'umad_sysfs:rename.ibdev @nowhere torn | expect: last torn: "\n'
        self.assertPasses(self.judge(log('# umad_sysfs.c:225:ibdev:last torn: "rx"'), xfail_c=xfail))
        out = self.assertFails(self.judge(log("# umad_sysfs.c:215:ibdev:Expected 'a' == 'b'."), xfail_c=xfail),
                               'c: umad_sysfs:rename.ibdev fails, but without "last torn: ""')
        self.assertIn("Expected 'a' == 'b'.", out)  # the failure shown

    def test_a_listed_failure_that_passes_fails(self):
        self.assertFails(self.judge(both("umad_removal", harness(("removal.reader", "pass", []))),
                                    xfail_c="umad_removal:removal.reader why | expect: x\n"),
                         "c: umad_removal:removal.reader passes but is listed as expected to fail")

    def test_a_race_may_pass_and_an_excluded_flavour_must(self):
        xfail = "umad_removal:removal.reader @!series why | expect: x\n"
        log = both("umad_removal", harness(("removal.reader", "pass", [])))
        self.assertFails(self.judge(log, xfail_c=xfail))
        self.assertPasses(self.judge(log, flavour="series", xfail_c=xfail))
        self.assertPasses(self.judge(log, xfail_c="umad_removal:removal.reader @plain why | expect: x\n"))

    def test_a_failure_of_a_pseudo_test_matches_its_reason(self):
        log = phase("c", ["@@result c rig:unload ok"]) + \
            phase("rust", ["@@result rust rig:unload fail rmmod: busy"]) + ["@@rig verdict done"]
        self.assertPasses(self.judge(log, xfail_rust="rig:unload why | expect: busy\n"))

    # The lists.

    def test_an_entry_without_its_expected_text_is_refused(self):
        with self.assertRaisesRegex(SystemExit, "does not end in '| expect:"):
            self.judge(both("umad_x", ["1..0"]), xfail_c="umad_x:t @plain a reason\n")

    def test_an_unknown_flavour_is_refused(self):
        with self.assertRaisesRegex(SystemExit, "no flavour 'degub'"):
            self.judge(both("umad_x", ["1..0"]), skips="umad_x:t @degub why | expect: x\n")

    def test_the_lists_in_the_tree_read_on_every_flavour(self):
        for flavour in report.FLAVOURS:
            for name in ("expected-failures-c.txt", "expected-failures-rust.txt"):
                report.read_expected_failures(os.path.join(LISTS, name), flavour)
            report.read_expected_skips(os.path.join(LISTS, "expected-skips.txt"), flavour)


if __name__ == "__main__":
    unittest.main()
