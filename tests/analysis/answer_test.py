#!/usr/bin/env python3
"""Tests of analysis/answer.py (the demo's short answer) on hand-made run folders.

Every expected figure is computed here from what the folders say. Run by ctest (`answer_test`)
or directly with any python3.
"""
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
import importlib.util

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("answer", os.path.join(SOURCE, "analysis", "answer.py"))
answer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answer)


def write_run(parent, name, *, rate, codec, ttt, accuracy, workers=4, target=0.8, steps=600):
    path = os.path.join(parent, name)
    os.makedirs(path)
    # As gradwire resolves it: a ring, with the gradient buckets it takes by default.
    scenario = {"name": name, "codec": codec, "network": {"family": "ethernet", "rate": rate},
                "topology": {"kind": "ring", "mode": "sync"},
                "training": {"workers": workers, "steps": steps, "target_accuracy": target,
                             "buckets": {"size_mb": 25.0, "first_mb": 1.0}}}
    summary = {"name": name, "workers": workers, "steps": steps, "time_to_target_s": ttt,
               "final_accuracy": accuracy, "sim_time_s": 10.0}
    for file, doc in (("scenario.json", scenario), ("summary.json", summary)):
        with open(os.path.join(path, file), "w") as f:
            json.dump(doc, f)


def run_answer(*dirs):
    out = io.StringIO()
    with redirect_stdout(out):
        code = answer.main(["answer.py", *dirs])
    return code, out.getvalue().strip().splitlines()


TOPK = {"kind": "topk", "ratio": 0.01, "error_feedback": True}
DGC = {"kind": "dgc", "density": 0.001}


class Answer(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_fastest_codec_with_its_speedup_and_accuracy_cost(self):
        write_run(self.dir, "dense", rate="100Mbps", codec={"kind": "none"}, ttt=11.0, accuracy=0.854)
        write_run(self.dir, "topk", rate="100Mbps", codec=TOPK, ttt=2.2, accuracy=0.842)
        write_run(self.dir, "dgc", rate="100Mbps", codec=DGC, ttt=4.4, accuracy=0.81)
        code, lines = run_answer(self.dir)
        self.assertEqual(code, 0)
        self.assertEqual(len(lines), 1)
        line = lines[0]
        self.assertTrue(line.startswith("Ethernet 100 Mbit/s, 4 workers: topk (1%, error feedback)"), line)
        self.assertIn(f"{11.0 / 2.2:.2f}x sooner than dense SGD (11 s)", line)
        self.assertIn("final accuracy 84.2% against dense's 85.4% (-1.2 points)", line)

    def test_says_plainly_when_no_codec_beats_dense(self):
        write_run(self.dir, "dense", rate="10Gbps", codec={"kind": "none"}, ttt=2.0, accuracy=0.85)
        write_run(self.dir, "topk", rate="10Gbps", codec=TOPK, ttt=2.5, accuracy=0.84)
        write_run(self.dir, "dgc", rate="10Gbps", codec=DGC, ttt=None, accuracy=0.7)
        _, lines = run_answer(self.dir)
        self.assertIn("dense SGD reached 80% accuracy first", lines[0])
        self.assertIn("no codec beat dense here", lines[0])
        self.assertIn(f"topk (1%, error feedback) {2.5 / 2.0:.2f}x its time", lines[0])
        self.assertIn("dgc (0.1%) never reached it", lines[0])

    def test_networks_and_worker_counts_are_answered_separately(self):
        write_run(self.dir, "a", rate="1Gbps", codec={"kind": "none"}, ttt=2.6, accuracy=0.85)
        write_run(self.dir, "b", rate="1Gbps", codec=TOPK, ttt=1.6, accuracy=0.84)
        write_run(self.dir, "c", rate="1Gbps", codec={"kind": "none"}, ttt=3.0, accuracy=0.85, workers=8)
        write_run(self.dir, "d", rate="100Mbps", codec=TOPK, ttt=None, accuracy=0.6)
        _, lines = run_answer(self.dir)
        self.assertEqual(len(lines), 3)
        text = "\n".join(lines)
        self.assertIn(f"Ethernet 1 Gbit/s, 4 workers: topk (1%, error feedback) reached 80% accuracy "
                      f"first, at 1.6 s simulated, {2.6 / 1.6:.2f}x sooner", text)
        self.assertIn("Ethernet 1 Gbit/s, 8 workers: dense SGD reached", text)
        self.assertIn("Ethernet 100 Mbit/s, 4 workers: no run reached 80% accuracy", text)

    def test_dense_that_never_reached_the_target(self):
        write_run(self.dir, "dense", rate="100Mbps", codec={"kind": "none"}, ttt=None, accuracy=0.7)
        write_run(self.dir, "topk", rate="100Mbps", codec=TOPK, ttt=5.0, accuracy=0.81)
        _, lines = run_answer(self.dir)
        self.assertIn("dense SGD did not reach it in 600 steps", lines[0])
        self.assertIn("(+11.0 points)", lines[0])

    def test_no_runs_is_an_error(self):
        code, lines = run_answer(self.dir)
        self.assertEqual(code, 2)
        self.assertEqual(lines, [])


if __name__ == "__main__":
    unittest.main()
