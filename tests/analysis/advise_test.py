#!/usr/bin/env python3
"""Tests of analysis/advise.py (the projection and ranking of `gradwire advise`) on hand-made
screening folders whose accuracy curves follow known power laws, so every projected step and
time is computed here and a wrong fit, rounding, pace or ranking fails. Standard library only.
"""
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("advise", os.path.join(SOURCE, "analysis", "advise.py"))
advise = importlib.util.module_from_spec(spec)
spec.loader.exec_module(advise)

TARGET = 0.8
FULL, EVERY, SCREENED, SCREEN_EVERY = 600, 100, 200, 25


def k_reaching(step, alpha=0.5):
    """k of error = k step^-alpha that reaches 1 - TARGET exactly at `step`."""
    return (1 - TARGET) * step ** alpha


def write_run(screening, name, *, pace, accuracy, payload=1000, joules_per_step=None, devices=None):
    """A screening run: steps 1..SCREENED at `pace` simulated s each, evaluations every
    SCREEN_EVERY steps with accuracy(step); with joules_per_step, its lines carry the energy
    so far (energy_j) as a run on named devices writes it."""
    path = os.path.join(screening, name)
    os.makedirs(path)
    with open(os.path.join(path, "scenario.json"), "w") as f:
        json.dump({"training": {"target_accuracy": TARGET, "steps": SCREENED}}, f)
    summary = {"steps": SCREENED, "workers": 2, "payload_bytes": payload * SCREENED * 2,
               "final_accuracy": accuracy(SCREENED), "sim_time_s": SCREENED * pace}
    if devices:
        summary["energy"] = {"profiles": {name: {"workers": n, "mean_step_compute_s": step_s}
                                          for name, (n, step_s) in devices.items()}}
    with open(os.path.join(path, "summary.json"), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(path, "metrics.jsonl"), "w") as f:
        for step in range(1, SCREENED + 1):
            energy = {} if joules_per_step is None else {"energy_j": step * joules_per_step}
            f.write(json.dumps({"type": "step", "step": step, "sim_time_s": step * pace, **energy}) + "\n")
            if step % SCREEN_EVERY == 0:
                # An accuracy is a fraction: where the power law dips below 0 (the first
                # evaluations, before FIT_FROM), the run would have measured 0.
                f.write(json.dumps({"type": "eval", "step": step, "sim_time_s": step * pace,
                                    "accuracy": max(0.0, accuracy(step)), **energy}) + "\n")


class Advise(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gradwire-advise-test-")
        self.screening = os.path.join(self.dir, "screening")
        os.makedirs(self.screening)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def plan(self, candidates):
        plan = {"scenario": "x.json", "name": "x", "full_steps": FULL, "eval_every": EVERY,
                "screening_steps": SCREENED, "screening_eval_every": SCREEN_EVERY,
                "screening": self.screening, "budget_s": 60, "fixed_compute_s": None,
                "candidates": candidates}
        path = os.path.join(self.dir, "plan.json")
        with open(path, "w") as f:
            json.dump(plan, f)
        return path

    def run_advise(self, candidates, extra=()):
        self.assertEqual(advise.main(["--plan", self.plan(candidates), "--elapsed-s", "12", *extra]), 0)
        with open(os.path.join(self.dir, "advice.json")) as f:
            return json.load(f)

    @staticmethod
    def cand(run, kind, label, settled_after=0):
        return {"run": run, "family": kind, "label": label, "codec": {"kind": kind},
                "settled_after": settled_after}

    def test_measured_projected_warm_up_flat_and_failed_runs_are_ranked(self):
        k_dense, k_topk = k_reaching(150), k_reaching(350)
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_dense / math.sqrt(s),
                  payload=8000)
        write_run(self.screening, "topk", pace=0.004, accuracy=lambda s: 1 - k_topk / math.sqrt(s))
        write_run(self.screening, "dgc", pace=0.003, accuracy=lambda s: 0.6 + s / 2000)
        write_run(self.screening, "flat", pace=0.002, accuracy=lambda s: 0.5)
        advice = self.run_advise([
            self.cand("dense", "none", "dense SGD"), self.cand("topk", "topk", "top-k"),
            self.cand("dgc", "dgc", "DGC", settled_after=150), self.cand("flat", "qsgd", "flat"),
            self.cand("missing", "fp16", "fp16")])
        by = {e["run"]: e for e in advice["ranking"]}

        # Dense crosses 80% at step 150; the scenario evaluates every 100 steps, so its run
        # reports the target at step 200, measured in the screening.
        self.assertEqual(by["dense"]["how"], "measured")
        self.assertEqual(by["dense"]["steps_to_target"], 200)
        self.assertAlmostEqual(by["dense"]["time_to_target_s"], 200 * 0.01)
        # Top-k crosses at step 350: projected, reported at the scenario's next evaluation (400),
        # reached at the late pace of 0.004 s per step.
        self.assertEqual(by["topk"]["how"], "projected")
        self.assertAlmostEqual(by["topk"]["fit"]["alpha"], 0.5, places=6)
        self.assertAlmostEqual(by["topk"]["fit"]["k"], k_topk, places=6)
        self.assertEqual(by["topk"]["steps_to_target"], 400)
        self.assertAlmostEqual(by["topk"]["time_to_target_s"], 400 * 0.004)
        self.assertTrue(by["topk"]["within_scenario_steps"])
        # Evaluations exactly on the curve: no spread, so the range is the projection itself.
        self.assertAlmostEqual(by["topk"]["fit"]["spread"], 0.0, places=9)
        self.assertAlmostEqual(by["topk"]["time_range_s"][0], 1.6)
        self.assertAlmostEqual(by["topk"]["time_range_s"][1], 1.6)
        self.assertEqual(by["dense"]["time_range_s"], [2.0, 2.0])  # measured: exact
        self.assertAlmostEqual(by["topk"]["speedup_vs_dense"], 2.0 / 1.6)
        self.assertAlmostEqual(by["topk"]["projected_final_accuracy"], 1 - k_topk / math.sqrt(FULL))
        self.assertAlmostEqual(by["topk"]["quality_vs_dense"],
                               k_dense / math.sqrt(200) - k_topk / math.sqrt(200))
        self.assertAlmostEqual(by["dense"]["bytes_per_step"], 8000)
        # DGC's warm-up ends at 150 of the screening's 200 steps: what follows it is too short
        # a stretch of curve to extrapolate.
        self.assertEqual(by["dgc"]["how"], "not projected")
        self.assertIn("warm-up", by["dgc"]["reason"])
        self.assertEqual(by["flat"]["how"], "not projected")
        self.assertIn("not improving", by["flat"]["reason"])
        self.assertEqual(by["missing"]["how"], "failed")

        # Fastest first; without a time, the better accuracy first; failed last.
        self.assertEqual([e["run"] for e in advice["ranking"]], ["topk", "dense", "dgc", "flat", "missing"])
        self.assertIn("top-k reaches 80% test accuracy at 1.6 s (projected), 1.25x sooner than dense SGD",
                      advice["answer"])
        with open(os.path.join(self.dir, "advice.md")) as f:
            md = f.read()
        self.assertIn(advice["answer"], md)
        self.assertEqual(md.count("\n| "), 1 + 5)  # header and one row per candidate

    def test_a_warm_up_of_up_to_half_the_screening_is_left_out_of_the_fit(self):
        # Before step 100 the curve is a warm-up's (flat); after it, a power law reaching the
        # target at step 350. Fitting only after the warm-up recovers that law.
        k = k_reaching(350)
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_reaching(150) / math.sqrt(s))
        write_run(self.screening, "dgc", pace=0.004,
                  accuracy=lambda s: 0.3 if s <= 100 else 1 - k / math.sqrt(s))
        advice = self.run_advise([self.cand("dense", "none", "dense SGD"),
                                  self.cand("dgc", "dgc", "DGC", settled_after=100)])
        dgc = next(e for e in advice["ranking"] if e["run"] == "dgc")
        self.assertEqual(dgc["how"], "projected")
        self.assertAlmostEqual(dgc["fit"]["alpha"], 0.5, places=6)
        self.assertEqual(dgc["steps_to_target"], 400)
        # One step more of warm-up than half the screening: not projected.
        advice = self.run_advise([self.cand("dense", "none", "dense SGD"),
                                  self.cand("dgc", "dgc", "DGC", settled_after=101)])
        dgc = next(e for e in advice["ranking"] if e["run"] == "dgc")
        self.assertEqual(dgc["how"], "not projected")

    def test_scattered_evaluations_widen_the_range_and_a_close_call_is_named(self):
        k_dense, k_a, k_b = k_reaching(150), k_reaching(350), k_reaching(380)
        wobble = lambda s: 0.03 * (1 if (s // SCREEN_EVERY) % 2 else -1)
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_dense / math.sqrt(s))
        write_run(self.screening, "a", pace=0.003, accuracy=lambda s: 1 - k_a / math.sqrt(s) + wobble(s))
        write_run(self.screening, "b", pace=0.003, accuracy=lambda s: 1 - k_b / math.sqrt(s) + wobble(s))
        advice = self.run_advise([self.cand("dense", "none", "dense SGD"), self.cand("a", "topk", "A"),
                                  self.cand("b", "qsgd", "B")])
        a = next(e for e in advice["ranking"] if e["run"] == "a")
        self.assertGreater(a["fit"]["spread"], 0.02)
        low, high = a["time_range_s"]
        self.assertLess(low, a["time_to_target_s"])
        self.assertGreater(high, a["time_to_target_s"])
        # A and B cross near 350 and 380: the screening cannot tell which is faster, and the
        # answer says so.
        self.assertIn("Within the projection's spread, B", advice["answer"])

    def test_says_plainly_when_no_codec_beats_dense(self):
        k_dense, k_topk = k_reaching(150), k_reaching(350)
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_dense / math.sqrt(s))
        write_run(self.screening, "topk", pace=0.009, accuracy=lambda s: 1 - k_topk / math.sqrt(s))
        advice = self.run_advise([self.cand("dense", "none", "dense SGD"), self.cand("topk", "topk", "top-k")])
        self.assertEqual(advice["ranking"][0]["run"], "dense")
        self.assertTrue(advice["answer"].startswith("No codec beats dense SGD on this scenario"), advice["answer"])
        self.assertIn("top-k, needs 3.6 s", advice["answer"])

    def test_a_failed_first_candidate_leaves_the_target_to_the_others(self):
        # The target is read from a finished screening run, whichever candidate comes first.
        k_dense = k_reaching(150)
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_dense / math.sqrt(s))
        advice = self.run_advise([self.cand("missing", "fp16", "fp16"),
                                  self.cand("dense", "none", "dense SGD")])
        self.assertEqual(advice["target"]["accuracy"], TARGET)
        self.assertEqual([e["run"] for e in advice["ranking"]], ["dense", "missing"])
        self.assertEqual(advice["ranking"][1]["how"], "failed")

    def test_no_finished_screening_run_is_an_error(self):
        self.assertEqual(advise.main(["--plan", self.plan([self.cand("missing", "fp16", "fp16")])]), 2)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "advice.json")))

    def test_a_projection_past_the_scenarios_steps_is_marked(self):
        k_dense, k_slow = k_reaching(150), k_reaching(900)
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_dense / math.sqrt(s))
        write_run(self.screening, "slow", pace=0.001, accuracy=lambda s: 1 - k_slow / math.sqrt(s))
        advice = self.run_advise([self.cand("dense", "none", "dense SGD"), self.cand("slow", "topk", "slow")])
        slow = next(e for e in advice["ranking"] if e["run"] == "slow")
        self.assertEqual(slow["steps_to_target"], 900)
        self.assertFalse(slow["within_scenario_steps"])
        with open(os.path.join(self.dir, "advice.md")) as f:
            self.assertIn("(step 900, after the scenario's 600)", f.read())

    def test_ranks_by_energy_to_target_when_asked(self):
        # Dense is slower per step but draws less: 0.1 J a step against top-k's 0.4 J.
        k_dense, k_topk = k_reaching(150), k_reaching(350)
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_dense / math.sqrt(s),
                  joules_per_step=0.1, devices={"jetson-orin-nano": (1, 0.003), "raspberry-pi-5": (1, 0.0067)})
        write_run(self.screening, "topk", pace=0.004, accuracy=lambda s: 1 - k_topk / math.sqrt(s),
                  joules_per_step=0.4)
        cands = [self.cand("dense", "none", "dense SGD"), self.cand("topk", "topk", "top-k")]
        by_time = self.run_advise(cands)
        self.assertEqual([e["run"] for e in by_time["ranking"]], ["topk", "dense"])
        by = {e["run"]: e for e in by_time["ranking"]}
        # Measured at the evaluation that reached the target (step 200); projected to step 400
        # at the late pace of joules per step.
        self.assertAlmostEqual(by["dense"]["energy_to_target_j"], 200 * 0.1)
        self.assertAlmostEqual(by["topk"]["energy_to_target_j"], 400 * 0.4)
        self.assertAlmostEqual(by["topk"]["energy_vs_dense"], 8.0)
        by_energy = self.run_advise(cands, ["--rank-by", "energy"])
        self.assertEqual(by_energy["rank_by"], "energy")
        self.assertEqual([e["run"] for e in by_energy["ranking"]], ["dense", "topk"])
        self.assertIn("Least energy: dense SGD reaches 80% test accuracy with 20 J", by_energy["answer"])
        with open(os.path.join(self.dir, "advice.md")) as f:
            md = f.read()
        self.assertIn("energy to target", md)
        self.assertIn("| 160 J | 8.00x |", md)
        # The workers' devices and their compute per step, from the screening's runs.
        self.assertIn("Workers: 1 x jetson-orin-nano (3 ms of compute per step), "
                      "1 x raspberry-pi-5 (6.7 ms of compute per step).", md)
        self.assertEqual(by_energy["devices"][1], {"profile": "raspberry-pi-5", "workers": 1,
                                                   "mean_step_compute_s": 0.0067})

    def test_ranking_by_energy_without_devices_is_an_error(self):
        write_run(self.screening, "dense", pace=0.01, accuracy=lambda s: 1 - k_reaching(150) / math.sqrt(s))
        plan = self.plan([self.cand("dense", "none", "dense SGD")])
        self.assertEqual(advise.main(["--plan", plan, "--rank-by", "energy"]), 2)


if __name__ == "__main__":
    unittest.main()
