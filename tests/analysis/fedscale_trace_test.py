#!/usr/bin/env python3
"""Tests of analysis/fedscale_trace.py (a FedScale behaviour trace into gradwire's availability
trace) on small hand-made traces: every expected interval is worked out here by hand. Given the
built gradwire (the first argument, as ctest passes it), a converted trace also drives
`gradwire validate`, and a trace with a bad line is exit 2 naming the file and the line.

Run by ctest (`fedscale_trace_test`) or directly with any python3; standard library only.
"""
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(SOURCE, "analysis", "fedscale_trace.py")
spec = importlib.util.spec_from_file_location("fedscale_trace", SCRIPT)
fedscale_trace = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fedscale_trace)

# Three clients as FedScale keys them (ids as strings in the JSON form). Client "10" sorts after
# "2" by value. Client "2" has two periods that touch after unrolling: [90, 100] and [100, 110].
TRACE = {
    "10": {"duration": 50, "active": [5], "inactive": [20], "finish_time": 100, "model": "x"},
    "2": {"duration": 40, "active": [0, 90], "inactive": [10, 100], "finish_time": 100},
    "3": {"duration": 0, "active": [], "inactive": [], "finish_time": 60},
}


def intervals(text):
    """{rank: [(start, end), ...]} from gradwire's format."""
    out = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if not line or line == "rank,start_s,end_s":
            continue
        rank, start, end = line.split(",")
        out.setdefault(int(rank), []).append((float(start), float(end)))
    return out


class Convert(unittest.TestCase):
    def test_one_period_ranks_by_numeric_id(self):
        text = fedscale_trace.convert(TRACE)
        # Ranks: "2" -> 0, "3" -> 1, "10" -> 2.
        self.assertEqual(intervals(text), {0: [(0.0, 10.0), (90.0, 100.0)], 2: [(5.0, 20.0)]})
        self.assertIn("# rank 1: client 3", text)  # never available: no interval line

    def test_unrolled_scaled_and_offset(self):
        # 250 FedScale seconds from second 95 ([95, 345)), at a tenth of the time: client "2"
        # is available [95, 110] (two periods joined), [190, 210], [290, 310] -> minus 95.
        text = fedscale_trace.convert(TRACE, scale=0.1, offset=95, until=250)
        got = intervals(text)[0]
        want = [(0.0, 1.5), (9.5, 11.5), (19.5, 21.5)]
        self.assertEqual(len(got), len(want))
        for (a, b), (c, d) in zip(got, want):
            self.assertAlmostEqual(a, c)
            self.assertAlmostEqual(b, d)
        # Client "10": [105, 120], [205, 220], [305, 320] -> minus 95, times 0.1.
        self.assertEqual([(round(a, 9), round(b, 9)) for a, b in intervals(text)[2]],
                         [(1.0, 2.5), (11.0, 12.5), (21.0, 22.5)])

    def test_clients_and_workers_choose_the_ranks(self):
        text = fedscale_trace.convert(TRACE, clients=["10", "2"])
        self.assertEqual(intervals(text)[0], [(5.0, 20.0)])
        self.assertEqual(intervals(fedscale_trace.convert(TRACE, workers=1)), {0: [(0.0, 10.0), (90.0, 100.0)]})
        with self.assertRaises(fedscale_trace.TraceError):
            fedscale_trace.convert(TRACE, workers=4)
        with self.assertRaises(fedscale_trace.TraceError):
            fedscale_trace.convert(TRACE, clients=["7"])

    def test_bad_records(self):
        for bad in ({"1": {"active": [1, 2], "inactive": [3], "finish_time": 10}},
                    {"1": {"active": [1], "inactive": [3]}},
                    {"1": {"active": [1], "inactive": ["x"], "finish_time": 10}},
                    {"1": {"active": [1], "inactive": [3], "finish_time": 0}},
                    {"1": [1, 2]},
                    {}):
            with self.assertRaises(fedscale_trace.TraceError, msg=repr(bad)):
                fedscale_trace.convert(bad)


class CommandLine(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_json_and_pickle_files(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "behave.json")
            with open(src, "w") as f:
                json.dump(TRACE, f)
            out = os.path.join(d, "trace.csv")
            r = self.run_script(src, "--workers", "2", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                self.assertEqual(intervals(f.read()), {0: [(0.0, 10.0), (90.0, 100.0)]})
            # FedScale's own pickle keys clients by integer.
            pkl = os.path.join(d, "behave.pkl")
            with open(pkl, "wb") as f:
                pickle.dump({int(k): v for k, v in TRACE.items()}, f)
            r = self.run_script(pkl, "--pickle")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(intervals(r.stdout)[2], [(5.0, 20.0)])

    def test_errors_exit_2_naming_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "broken.json")
            with open(src, "w") as f:
                f.write("{not json")
            r = self.run_script(src)
            self.assertEqual(r.returncode, 2)
            self.assertIn("broken.json", r.stderr)
            with open(src, "w") as f:
                json.dump({"5": {"active": [1], "inactive": [], "finish_time": 9}}, f)
            r = self.run_script(src)
            self.assertEqual(r.returncode, 2)
            self.assertIn("client 5", r.stderr)
            self.assertEqual(self.run_script(os.path.join(d, "missing.json")).returncode, 2)
            self.assertEqual(self.run_script(src, "--scale", "0").returncode, 2)


# The built binary, when given as the first argument.
GRADWIRE = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None


def scenario(trace_path):
    return {"gradwire": 1, "name": "fedscale-trace", "seed": 3,
            "model": {"kind": "mlp", "hidden": [8]},
            "dataset": {"kind": "synthetic", "features": 8, "train_samples": 400,
                        "test_samples": 100},
            "training": {"workers": 3, "steps": 4, "batch": 8},
            "compute": {"mode": "fixed", "seconds": 0.002},
            "topology": {"kind": "ps"},
            "participation": {"clients_per_round": 2, "deadline": "1s",
                              "availability": {"trace": trace_path}},
            "network": {"rate": "1Gbps"}}


@unittest.skipIf(GRADWIRE is None, "no gradwire binary given")
class WithGradwire(unittest.TestCase):
    def test_converted_trace_validates_and_a_bad_line_is_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "behave.json")
            with open(src, "w") as f:
                json.dump(TRACE, f)
            trace = os.path.join(d, "trace.csv")
            r = subprocess.run([sys.executable, SCRIPT, src, "-o", trace], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            path = os.path.join(d, "scenario.json")
            with open(path, "w") as f:
                json.dump(scenario(trace), f)
            r = subprocess.run([GRADWIRE, "validate", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(trace, "a") as f:
                f.write("1,5\n")
            with open(trace) as f:
                bad_line = len(f.read().splitlines())
            r = subprocess.run([GRADWIRE, "validate", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn(f"{trace}:{bad_line}:", r.stderr)
            self.assertIn("participation.availability.trace", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[2 if GRADWIRE else 1:])
