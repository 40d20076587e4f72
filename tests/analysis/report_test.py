#!/usr/bin/env python3
"""Tests of analysis/report.py on hand-made run folders with known times.

The folders follow docs/outputs.md (scenario.json resolved, metrics.jsonl, summary.json). Every
expected number is computed here from the times written into the folders, so a wrong baseline,
speedup or crossover fails. Run by ctest (`report_test`) or directly with /usr/bin/python3.
Exit 77 (ctest: skipped) when matplotlib is missing.
"""
import csv
import html.parser
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skipped: no matplotlib for this Python", file=sys.stderr)
    sys.exit(77)

spec = importlib.util.spec_from_file_location("report", os.path.join(SOURCE, "analysis", "report.py"))
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)

BUCKETS = {"size_mb": 25, "first_mb": 1}
BUCKETS_LABEL = "buckets 25 MB (first 1 MB)"


def write_run(parent, name, *, rate, codec, workers=4, buckets="none", ttt=None,
              compute_s=0.01, comm_s=0.05, codec_s=None, target=0.5, evals=True):
    """A run folder. ttt None: the target was never reached."""
    path = os.path.join(parent, name)
    os.makedirs(path)
    scenario = {
        "gradwire": 1, "name": name, "seed": 1,
        "model": {"kind": "mlp", "hidden": [16]},
        "dataset": {"kind": "synthetic", "train_samples": 800, "test_samples": 200},
        "training": {"workers": workers, "steps": 10, "batch": 8, "eval_every": 5,
                     "target_accuracy": target, "buckets": buckets},
        "compute": {"mode": "fixed", "seconds": compute_s, "codec_time": "measured"},
        "network": {"family": "ethernet", "rate": rate},
        "topology": {"kind": "ring"},
        "codec": codec,
    }
    steps = 10
    step_s = compute_s + comm_s
    lines = []
    for i in range(1, steps + 1):
        rec = {"type": "step", "step": i, "sim_time_s": i * step_s, "loss": 1.0 / i,
               "compute_s": compute_s, "comm_s": comm_s, "comm_s_max": comm_s,
               "bytes_sent": [1000] * workers, "payload_bytes": [1000] * workers,
               "density": 1.0, "lr": 0.1, "wall_time_s": 0.01 * i}
        if codec_s is not None:
            rec["codec_s"] = codec_s
        lines.append(rec)
        if evals and i % 5 == 0:
            lines.append({"type": "eval", "step": i, "sim_time_s": i * step_s,
                          "accuracy": 0.1 * i / 2, "test_loss": 1.0, "samples": 200,
                          "consensus_distance": 0, "wall_time_s": 0.01 * i})
    with open(os.path.join(path, "metrics.jsonl"), "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    summary = {
        "name": name, "steps": steps, "workers": workers, "parameters": 1000,
        "codec": codec["kind"], "topology": "ring", "network": "ethernet",
        "final_accuracy": 0.5 if evals else None, "target_accuracy": target,
        "time_to_target_s": ttt, "steps_to_target": 5 if ttt else None,
        "sim_time_s": steps * step_s, "mean_step_compute_s": compute_s, "mean_step_comm_s": comm_s,
        "bytes_on_wire": 12345, "payload_bytes": 40000 * workers, "dense_bytes": 40000 * workers,
        "compression_ratio": 1.0, "wall_time_s": 1.5, "ns3_wall_time_s": 0.25,
    }
    if codec_s is not None:
        summary["mean_step_codec_s"] = codec_s
    with open(os.path.join(path, "summary.json"), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(path, "scenario.json"), "w") as f:
        json.dump(scenario, f)
    return path


class Tables(html.parser.HTMLParser):
    """{css class: [[cell, ...], ...]} for every <table class=...> in the page (header row first)."""

    def __init__(self, page):
        super().__init__()
        self.tables, self.current, self.row, self.cell = {}, None, None, None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.current = self.tables.setdefault(dict(attrs).get("class"), [])
        elif tag == "tr" and self.current is not None:
            self.row = []
            self.current.append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell)
            self.cell = None
        elif tag == "table":
            self.current = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def records(table):
    return [dict(zip(table[0], row)) for row in table[1:]]


# Times to target (s) of the 4-worker study, per rate. Best dense: fp16 with buckets at 100 Mbps
# and 1 Gbps, fp32 with buckets at 10 Gbps; top-k beats it at the two lower rates only.
TTT4 = {
    "100Mbps": {"none": 100.0, "none_b": 80.0, "fp16_b": 50.0, "topk": 20.0, "powersgd": 120.0},
    "1Gbps": {"none": 30.0, "none_b": 25.0, "fp16_b": 20.0, "topk": 16.0, "powersgd": 40.0},
    "10Gbps": {"none": 12.0, "none_b": 10.0, "fp16_b": 11.0, "topk": 15.0, "powersgd": 20.0},
}
# 8 workers: top-k beats dense at both rates.
TTT8 = {"100Mbps": {"none": 200.0, "topk": 40.0}, "1Gbps": {"none": 50.0, "topk": 30.0}}
# 2 workers, no run reaches the target: speedups from mean step time (compute + exposed comm).
STEP2 = {"100Mbps": {"none": (0.01, 0.09, None), "topk": (0.01, 0.02, 0.005)},
         "1Gbps": {"none": (0.01, 0.02, None), "topk": (0.01, 0.025, 0.005)}}

CODECS = {"none": ({"kind": "none"}, "none"), "none_b": ({"kind": "none"}, BUCKETS),
          "fp16_b": ({"kind": "fp16"}, BUCKETS),
          "topk": ({"kind": "topk", "ratio": 0.01}, "none"),
          "powersgd": ({"kind": "powersgd", "rank": 2}, "none")}


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gradwire-report-test-")
        runs = os.path.join(cls.tmp, "runs")
        for rate, times in TTT4.items():
            for key, t in times.items():
                codec, buckets = CODECS[key]
                write_run(runs, f"n4-{rate}-{key}", rate=rate, codec=codec, buckets=buckets, ttt=t,
                          codec_s=0.004 if key == "topk" else None)
        for rate, times in TTT8.items():
            for key, t in times.items():
                write_run(runs, f"n8-{rate}-{key}", rate=rate, codec=CODECS[key][0], workers=8, ttt=t)
        for rate, times in STEP2.items():
            for key, (compute, comm, codec_s) in times.items():
                write_run(runs, f"n2-{rate}-{key}", rate=rate, codec=CODECS[key][0], workers=2,
                          compute_s=compute, comm_s=comm, codec_s=codec_s)
        cls.out = os.path.join(cls.tmp, "report")
        assert report.main(["--out", cls.out, runs]) == 0
        with open(os.path.join(cls.out, "report.html")) as f:
            cls.page = f.read()
        cls.tables = Tables(cls.page).tables
        cls.speedups = {r["run"]: r for r in records(cls.tables["speedups"])}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_best_dense_is_picked_named_and_divided_by(self):
        for rate, times in TTT4.items():
            dense = {k: v for k, v in times.items() if k in ("none", "none_b", "fp16_b")}
            best = min(dense, key=dense.get)
            name = {"none": "none, no buckets", "none_b": "none, " + BUCKETS_LABEL,
                    "fp16_b": "fp16, " + BUCKETS_LABEL}[best]
            for key in ("topk", "powersgd"):
                row = self.speedups[f"n4-{rate}-{key}"]
                self.assertEqual(row["best dense"], name, rate)
                self.assertEqual(row["basis"], "time to target")
                self.assertEqual(row["speedup vs best dense (x)"], "%.3g" % (dense[best] / times[key]))
                # No buckets on top-k: dense fp32 without buckets is its fp32 baseline.
                self.assertEqual(row["speedup vs dense fp32 (x)"], "%.3g" % (times["none"] / times[key]))
            # A bucketed dense run's fp32 baseline is fp32 with the same buckets.
            row = self.speedups[f"n4-{rate}-fp16_b"]
            self.assertEqual(row["speedup vs dense fp32 (x)"], "%.3g" % (times["none_b"] / times["fp16_b"]))
        self.assertEqual(self.speedups["n4-100Mbps-topk"]["best dense"], "fp16, " + BUCKETS_LABEL)
        self.assertEqual(self.speedups["n4-10Gbps-topk"]["best dense"], "none, " + BUCKETS_LABEL)

    def test_step_time_basis_when_no_run_reached_the_target(self):
        for rate, times in STEP2.items():
            row = self.speedups[f"n2-{rate}-topk"]
            self.assertEqual(row["basis"], "step time")
            self.assertEqual(row["best dense"], "none, no buckets")
            dense_step = sum(times["none"][:2])
            self.assertEqual(row["speedup vs best dense (x)"], "%.3g" % (dense_step / sum(times["topk"][:2])))
            self.assertEqual(row["time_to_target_s"], "")
            self.assertEqual(row["mean step (ms)"], "%.4g" % (1e3 * sum(times["topk"][:2])))

    def test_crossover_rate_per_codec_and_worker_count(self):
        cross = {(r["method"], r["workers"]): r for r in records(self.tables["crossover"])}
        self.assertEqual(cross[("topk ratio 0.01 / ring", "4")]["stops paying at"], "10 Gbps")
        self.assertEqual(cross[("topk ratio 0.01 / ring", "4")]["beats best dense at"], "100 Mbps, 1 Gbps")
        self.assertEqual(cross[("powersgd rank 2 / ring", "4")]["stops paying at"], "never beats dense")
        self.assertEqual(cross[("topk ratio 0.01 / ring", "8")]["stops paying at"], "beats dense at every rate")
        self.assertEqual(cross[("topk ratio 0.01 / ring", "2")]["stops paying at"], "1 Gbps")
        # Dense configurations are baselines, not rows.
        self.assertFalse(any(m.startswith(("none", "fp16")) for m, _ in cross))
        self.assertEqual(len(cross), 4)

    def test_breakdown_has_codec_only_where_measured(self):
        table = self.tables["breakdown"]
        self.assertIn("codec (ms/step)", table[0])
        rows = {r["run"]: r for r in records(table)}
        self.assertEqual(rows["n4-1Gbps-topk"]["codec (ms/step)"], "%.4g" % 4.0)
        self.assertEqual(rows["n4-1Gbps-none"]["codec (ms/step)"], "-")
        self.assertEqual(rows["n2-1Gbps-topk"]["exposed communication (ms/step)"], "%.4g" % 25.0)
        self.assertEqual(rows["n2-1Gbps-topk"]["step (ms)"], "%.4g" % 35.0)

    def test_figures_and_results_agree_with_tables(self):
        for stem in ("accuracy_vs_time", "speedup_vs_bandwidth", "bytes_vs_accuracy", "step_breakdown"):
            self.assertGreater(os.path.getsize(os.path.join(self.out, stem + ".png")), 1000, stem)
            self.assertTrue(os.path.exists(os.path.join(self.out, stem + ".svg")), stem)
        self.assertNotIn("Figure omitted", self.page)
        with open(os.path.join(self.out, "results.csv"), newline="") as f:
            results = list(csv.reader(f))
        self.assertEqual(self.tables["results"], results)
        self.assertEqual(results[0][2:], report.SUMMARY_COLUMNS)
        by_run = {r["run"]: r for r in records(results)}
        for name, row in self.speedups.items():
            self.assertEqual(row["time_to_target_s"], by_run[name]["time_to_target_s"], name)
        self.assertEqual(by_run["n4-1Gbps-topk"]["mean_step_codec_s"], "0.004")
        self.assertEqual(by_run["n4-1Gbps-none"]["mean_step_codec_s"], "")

    def test_reference_still_selectable(self):
        out = os.path.join(self.tmp, "ref")
        self.assertEqual(report.main(["--out", out, "--reference", "name=n4-10Gbps-none",
                                      os.path.join(self.tmp, "runs")]), 0)
        with open(os.path.join(out, "report.html")) as f:
            rows = {r["run"]: r for r in records(Tables(f.read()).tables["speedups"])}
        row = rows["n4-100Mbps-topk"]
        self.assertEqual(row["reference"], "n4-10Gbps-none")
        self.assertEqual(row["speedup vs reference (x)"], "%.3g" % (TTT4["10Gbps"]["none"] / TTT4["100Mbps"]["topk"]))

    def test_no_empty_figures(self):
        # One compressing run at one rate, without evaluations or a dense run: nothing to plot
        # for accuracy, bytes or speedup; the page says what is missing instead.
        runs = os.path.join(self.tmp, "lonely")
        write_run(runs, "alone", rate="1Gbps", codec={"kind": "topk", "ratio": 0.01}, ttt=None,
                  evals=False)
        out = os.path.join(self.tmp, "lonely-report")
        shutil.copytree(self.out, out)  # figures of an earlier report must not survive
        self.assertEqual(report.main(["--out", out, runs]), 0)
        for stem in ("accuracy_vs_time", "speedup_vs_bandwidth", "bytes_vs_accuracy"):
            self.assertFalse(os.path.exists(os.path.join(out, stem + ".png")), stem)
            self.assertFalse(os.path.exists(os.path.join(out, stem + ".svg")), stem)
        self.assertTrue(os.path.exists(os.path.join(out, "step_breakdown.png")))
        with open(os.path.join(out, "report.html")) as f:
            page = f.read()
        self.assertEqual(page.count("Figure omitted"), 3)
        self.assertNotIn("alt='speedup_vs_bandwidth'", page)
        self.assertIn("No dense run", page)
        self.assertIn("crossover table", page)
        self.assertNotIn('class="crossover"', page)
        breakdown = Tables(page).tables["breakdown"]
        self.assertNotIn("codec (ms/step)", breakdown[0])  # no codec time recorded

    def test_summary_columns_match_the_sweep_runner(self):
        with open(os.path.join(SOURCE, "sim", "study", "SweepRunner.cpp")) as f:
            text = f.read()
        block = re.search(r"kColumns = \{(.*?)\};", text, re.S).group(1)
        cpp = re.findall(r'"([^"]+)"', block)
        self.assertEqual(report.SUMMARY_COLUMNS, cpp)


if __name__ == "__main__":
    unittest.main()
