"""fabric-report.py's reading of the guest's lines and its ratios.

    python3 -m unittest discover -s tools/rig/tests
"""
import importlib.util
import os
import tempfile
import unittest

RIG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("fabric_report",
                                              os.path.join(RIG, "fabric-report.py"))
fabric_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fabric_report)


class FabricReport(unittest.TestCase):
    def read(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as log:
            log.write(text)
        self.addCleanup(os.unlink, log.name)
        return fabric_report.read(log.name)

    def test_reads_each_driver_by_round(self):
        values, units = self.read(
            "@@fabric c 1 fat:2:16:128/smps4 subnet_up 3000 ms\n"
            "@@rig noise\n"
            "@@fabric rust 1 fat:2:16:128/smps4 subnet_up 2900 ms\n"
            "@@fabric c 2 fat:2:16:128/smps4 subnet_up 3100 ms\n"
            "@@fabric other 2 fat:2:16:128/smps4 subnet_up 1 ms\n")
        self.assertEqual(values["fat:2:16:128/smps4", "subnet_up"],
                         {"c": {1: 3000.0, 2: 3100.0}, "rust": {1: 2900.0}})
        self.assertEqual(units["fat:2:16:128/smps4", "subnet_up"], "ms")

    def test_ratio_pairs_the_same_round_and_spans_them(self):
        # C/rust of rounds 1, 3 and 4: 2.0, 1.0, 0.5; round 2 has no rust
        # figure, round 5 no C one.
        by = {"c": {1: 4, 2: 7, 3: 3, 4: 1}, "rust": {1: 2, 3: 3, 4: 2, 5: 8}}
        self.assertEqual(fabric_report.ratio(by), (1.0, 0.5, 2.0))

    def test_ratio_of_zeros(self):
        self.assertEqual(fabric_report.ratio({"c": {1: 0, 2: 0}, "rust": {1: 0, 2: 0}}),
                         (1.0, 1.0, 1.0))
        self.assertEqual(fabric_report.ratio({"c": {1: 1}, "rust": {1: 0}})[0], float("inf"))
        self.assertIsNone(fabric_report.ratio({"c": {1: 1}, "rust": {2: 1}}))


if __name__ == "__main__":
    unittest.main()
