#!/usr/bin/env python3
"""Tests of analysis/report.py on hand-made run folders with known times.

The folders follow docs/outputs.md (scenario.json resolved, metrics.jsonl, summary.json). Every
expected number is computed here from the times written into the folders, so a wrong baseline,
speedup or crossover fails. Run by ctest (`report_test`) or directly with /usr/bin/python3.
Exit 77 (ctest: skipped) when matplotlib is missing.
"""
import contextlib
import csv
import html.parser
import importlib.util
import io
import json
import math
import os
import re
import shutil
import statistics
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

# Buckets other than gradwire's default (25 MB, first 1 MB), and the methods' names in tables
# and figures (analysis/runs.py's method_label): the runs here are rings, whose default is to
# have buckets, so those without are named so.
BUCKETS = {"size_mb": 10, "first_mb": 1}
BUCKETS_LABEL = "buckets 10 MB (first 1 MB)"
TOPK_LABEL = "topk (1%), no buckets"
POWERSGD_LABEL = "powersgd (rank 2), no buckets"


def write_run(parent, name, *, rate, codec, workers=4, buckets="none", ttt=None,
              compute_s=0.01, comm_s=0.05, codec_s=None, target=0.5, evals=True, seed=1,
              accuracy=0.5, lost=None, network=None, energy=None, layers=None):
    """A run folder. ttt None: the target was never reached. lost: the run used UDP and lost
    that fraction of its gradient bytes. network: the whole network object (else Ethernet at
    `rate`). energy: summary.json's energy object (workers on named devices). layers:
    summary.json's layer_compression (a codec that selects per tensor)."""
    path = os.path.join(parent, name)
    os.makedirs(path)
    scenario = {
        "gradwire": 1, "name": name, "seed": seed,
        "model": {"kind": "mlp", "hidden": [16]},
        "dataset": {"kind": "synthetic", "train_samples": 800, "test_samples": 200},
        "training": {"workers": workers, "steps": 10, "batch": 8, "eval_every": 5,
                     "target_accuracy": target, "buckets": buckets},
        "compute": {"mode": "fixed", "seconds": compute_s, "codec_time": "measured"},
        "network": network or {"family": "ethernet", "rate": rate,
                               "transport": {"kind": "tcp" if lost is None else "udp"}},
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
                          "accuracy": accuracy * i / steps, "test_loss": 1.0, "samples": 200,
                          "consensus_distance": 0, "wall_time_s": 0.01 * i})
    with open(os.path.join(path, "metrics.jsonl"), "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    summary = {
        "name": name, "steps": steps, "workers": workers, "parameters": 1000,
        "codec": codec["kind"], "topology": "ring", "network": "ethernet",
        "final_accuracy": accuracy if evals else None, "target_accuracy": target,
        "time_to_target_s": ttt, "steps_to_target": 5 if ttt else None,
        "sim_time_s": steps * step_s, "mean_step_compute_s": compute_s, "mean_step_comm_s": comm_s,
        "bytes_on_wire": 12345, "payload_bytes": 40000 * workers, "dense_bytes": 40000 * workers,
        "compression_ratio": 1.0, "wall_time_s": 1.5, "ns3_wall_time_s": 0.25,
    }
    if codec_s is not None:
        summary["mean_step_codec_s"] = codec_s
    if lost is not None:
        summary["lost_gradient_fraction"] = lost
    if layers is not None:
        summary["layer_compression"] = layers
    if energy is not None:
        summary["energy"] = energy
        summary["energy_j"] = energy["total_j"]
        summary["energy_to_target_j"] = energy["energy_to_target_j"]
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


class Headline(html.parser.HTMLParser):
    """The headline table's rows: {"runs": [...], "cells": {data-column: {attributes, "text"}},
    "labels": [text of the cells without data-column]}; and the header."""

    def __init__(self, page):
        super().__init__()
        self.header, self.rows, self.inside, self.cell = [], [], False, None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.inside = attrs.get("class") == "headline"
        elif self.inside and tag == "tr" and "data-runs" in attrs:
            self.rows.append({"runs": json.loads(attrs["data-runs"]), "cells": {}, "labels": []})
        elif self.inside and tag in ("td", "th"):
            self.cell = dict(attrs, text="", tag=tag)

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif self.inside and tag in ("td", "th") and self.cell is not None:
            cell, self.cell = self.cell, None
            if cell["tag"] == "th":
                self.header.append(cell["text"])
            elif "data-column" in cell:
                self.rows[-1]["cells"][cell["data-column"]] = cell
            else:
                self.rows[-1]["labels"].append(cell["text"])

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data


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
            name = {"none": "dense SGD, no buckets", "none_b": "dense SGD, " + BUCKETS_LABEL,
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
        self.assertEqual(self.speedups["n4-10Gbps-topk"]["best dense"], "dense SGD, " + BUCKETS_LABEL)

    def test_step_time_basis_when_no_run_reached_the_target(self):
        for rate, times in STEP2.items():
            row = self.speedups[f"n2-{rate}-topk"]
            self.assertEqual(row["basis"], "step time")
            self.assertEqual(row["best dense"], "dense SGD, no buckets")
            dense_step = sum(times["none"][:2])
            self.assertEqual(row["speedup vs best dense (x)"], "%.3g" % (dense_step / sum(times["topk"][:2])))
            self.assertEqual(row["time_to_target_s"], "")
            self.assertEqual(row["mean step (ms)"], "%.4g" % (1e3 * sum(times["topk"][:2])))

    def test_crossover_rate_per_codec_and_worker_count(self):
        cross = {(r["method"], r["workers"]): r for r in records(self.tables["crossover"])}
        self.assertEqual(cross[(TOPK_LABEL, "4")]["stops paying at"], "10 Gbps")
        self.assertEqual(cross[(TOPK_LABEL, "4")]["beats best dense at"], "100 Mbps, 1 Gbps")
        self.assertEqual(cross[(POWERSGD_LABEL, "4")]["stops paying at"], "never beats dense")
        self.assertEqual(cross[(TOPK_LABEL, "8")]["stops paying at"], "beats dense at every rate")
        self.assertEqual(cross[(TOPK_LABEL, "2")]["stops paying at"], "1 Gbps")
        # Dense configurations are baselines, not rows.
        self.assertFalse(any(m.startswith(("dense SGD", "fp16")) for m, _ in cross))
        self.assertEqual(len(cross), 4)

    def test_breakdown_has_codec_only_where_measured(self):
        table = self.tables["breakdown"]
        self.assertIn("codec (ms/step)", table[0])
        rows = {r["run"]: r for r in records(table)}
        self.assertEqual(rows["n4-1Gbps-topk"]["codec (ms/step)"], "%.4g" % 4.0)
        self.assertEqual(rows["n4-1Gbps-none"]["codec (ms/step)"], "-")
        self.assertEqual(rows["n2-1Gbps-topk"]["exposed communication (ms/step)"], "%.4g" % 25.0)
        self.assertEqual(rows["n2-1Gbps-topk"]["step (ms)"], "%.4g" % 35.0)

    def test_headline_table_comes_first(self):
        # Right after the title: the first table of the page, before the definitions.
        first_table = self.page.index("<table")
        self.assertEqual(first_table, self.page.index('<table class="headline"'))
        self.assertLess(first_table, self.page.index("<h2>Definitions</h2>"))
        self.assertLess(self.page.index("</h1>"), self.page.index("<h2>Headline</h2>"))
        self.assertLess(self.page.index("<h2>Headline</h2>"), first_table)
        self.assertLess(self.page.index("alt='time_to_target'"), self.page.index("<h2>Definitions</h2>"))

    def test_single_seed_headline_rows_equal_results_csv(self):
        head = Headline(self.page)
        self.assertNotIn("lost gradient (fraction, UDP)", head.header)  # no run used UDP
        self.assertNotIn("settings", head.header)  # nothing varies beyond the shown columns
        with open(os.path.join(self.out, "results.csv"), newline="") as f:
            results = {r["run"]: r for r in csv.DictReader(f)}
        # Every run is its own configuration: seeds are all 1.
        self.assertEqual(sorted(n for row in head.rows for n in row["runs"]), sorted(results))
        for row in head.rows:
            self.assertEqual(len(row["runs"]), 1)
            name = row["runs"][0]
            cells = row["cells"]
            self.assertEqual(set(cells), {"time_to_target_s", "speedup_vs_dense_fp32",
                                          "speedup_vs_best_dense", "final_accuracy",
                                          "bytes_per_step", "runs"})
            self.assertEqual(cells["time_to_target_s"]["text"], results[name]["time_to_target_s"] or "-")
            self.assertEqual(cells["final_accuracy"]["text"], results[name]["final_accuracy"])
            self.assertEqual(cells["final_accuracy"]["data-sd"], "")
            workers = int(name.split("-")[0][1:])
            self.assertEqual(cells["bytes_per_step"]["text"],
                             report.fmt(float(results[name]["payload_bytes"]) / 10 / workers))
            self.assertEqual(cells["runs"]["text"], "1 (seed 1)")
            speedups = self.speedups[name]
            for column, header in (("speedup_vs_dense_fp32", "speedup vs dense fp32 (x)"),
                                   ("speedup_vs_best_dense", "speedup vs best dense (x)")):
                text = cells[column]["text"]
                if speedups["basis"] == "step time":
                    self.assertEqual(text, speedups[header] + " [step time]", name)
                else:
                    self.assertEqual(text, speedups[header], name)
        # The 4-worker top-k row at 100 Mbps: 100/20 against dense fp32, 50/20 against fp16.
        row = next(r for r in head.rows if r["runs"] == ["n4-100Mbps-topk"])
        self.assertEqual(float(row["cells"]["speedup_vs_dense_fp32"]["data-mean"]), 100.0 / 20.0)
        self.assertEqual(float(row["cells"]["speedup_vs_best_dense"]["data-mean"]), 50.0 / 20.0)
        self.assertEqual(row["labels"], ["Ethernet 100 Mbit/s", TOPK_LABEL, "4"])

    def test_headline_rows_fastest_first_per_network(self):
        head = Headline(self.page)
        networks = [row["labels"][0] for row in head.rows]
        # Each network's rows together, slowest link first.
        order = [n for i, n in enumerate(networks) if i == 0 or networks[i - 1] != n]
        self.assertEqual(order, ["Ethernet 100 Mbit/s", "Ethernet 1 Gbit/s", "Ethernet 10 Gbit/s"])
        for net in order:
            times = [row["cells"]["time_to_target_s"]["data-mean"] for row in head.rows
                     if row["labels"][0] == net]
            reached = [float(t) for t in times if t]
            self.assertEqual(reached, sorted(reached), net)
            # Runs that never reached the target come last.
            self.assertEqual(times[:len(reached)], [t for t in times if t], net)
        first = next(r for r in head.rows if r["labels"][0] == "Ethernet 100 Mbit/s")
        self.assertEqual(first["runs"], ["n4-100Mbps-topk"])  # 20 s: the fastest at 100 Mbps

    def test_figures_and_results_agree_with_tables(self):
        for stem in report.FIGURES:
            self.assertGreater(os.path.getsize(os.path.join(self.out, stem + ".png")), 1000, stem)
            self.assertTrue(os.path.exists(os.path.join(self.out, stem + ".svg")), stem)
        self.assertNotIn("Figure omitted", self.page)
        with open(os.path.join(self.out, "results.csv"), newline="") as f:
            results = list(csv.reader(f))
        # The page shows results.csv without the columns no run has a value in, and says which.
        kept = [i for i in range(len(results[0]))
                if i < 2 or any(row[i].strip() for row in results[1:])]
        left_out = [results[0][i] for i in range(len(results[0])) if i not in kept]
        self.assertTrue(left_out)  # these runs have no energy, perplexity or lost fraction
        self.assertEqual(self.tables["results"], [[row[i] for i in kept] for row in results])
        self.assertIn("left out here (they are in results.csv): " + ", ".join(left_out), self.page)
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

    def test_reference_rate_in_any_unit(self):
        # 10000 Mbit/s is the 10 Gbps network, however the scenario spells it.
        out = os.path.join(self.tmp, "ref-rate")
        self.assertEqual(report.main(["--out", out, "--reference", "codec=fp16,rate=10000 Mb/s",
                                      os.path.join(self.tmp, "runs")]), 0)
        with open(os.path.join(out, "report.html")) as f:
            rows = {r["run"]: r for r in records(Tables(f.read()).tables["speedups"])}
        self.assertEqual(rows["n4-100Mbps-topk"]["reference"], "n4-10Gbps-fp16_b")

    def test_a_malformed_reference_is_refused(self):
        for spec, said in (("rate=fast", "--reference: rate: expected a data rate"),
                           ("speed=1Gbps", "--reference: expected KEY=VALUE"),
                           ("codec", "--reference: expected KEY=VALUE")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = report.main(["--out", os.path.join(self.tmp, "bad-ref"), "--reference", spec,
                                    os.path.join(self.tmp, "runs")])
            self.assertEqual(code, 2, spec)
            self.assertIn(said, err.getvalue(), spec)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "bad-ref")))

    def test_no_empty_figures(self):
        # One compressing run at one rate, without evaluations or a dense run: nothing to plot
        # for accuracy, bytes or speedup; the page says what is missing instead.
        runs = os.path.join(self.tmp, "lonely")
        write_run(runs, "alone", rate="1Gbps", codec={"kind": "topk", "ratio": 0.01}, ttt=None,
                  evals=False)
        out = os.path.join(self.tmp, "lonely-report")
        shutil.copytree(self.out, out)  # figures of an earlier report must not survive
        self.assertEqual(report.main(["--out", out, runs]), 0)
        for stem in ("time_to_target", "accuracy_vs_time", "speedup_vs_bandwidth", "bytes_vs_accuracy"):
            self.assertFalse(os.path.exists(os.path.join(out, stem + ".png")), stem)
            self.assertFalse(os.path.exists(os.path.join(out, stem + ".svg")), stem)
        self.assertTrue(os.path.exists(os.path.join(out, "step_breakdown.png")))
        with open(os.path.join(out, "report.html")) as f:
            page = f.read()
        self.assertEqual(page.count("Figure omitted"), 4)
        self.assertIn("no run reached its target", page)
        self.assertNotIn("alt='speedup_vs_bandwidth'", page)
        self.assertIn("No dense run", page)
        self.assertIn("crossover table", page)
        self.assertNotIn('class="crossover"', page)
        breakdown = Tables(page).tables["breakdown"]
        self.assertNotIn("codec (ms/step)", breakdown[0])  # no codec time recorded

    def test_a_malformed_rate_is_refused_before_anything_is_written(self):
        runs = os.path.join(self.tmp, "bad-rate")
        write_run(runs, "fast", rate="fast", codec={"kind": "none"}, ttt=1.0)
        out = os.path.join(self.tmp, "bad-rate-report")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(report.main(["--out", out, runs]), 2)
        self.assertIn("fast/scenario.json: network.rate: expected a data rate", err.getvalue())
        self.assertFalse(os.path.exists(out))

    def test_summary_columns_match_the_sweep_runner(self):
        with open(os.path.join(SOURCE, "sim", "study", "SweepRunner.cpp")) as f:
            text = f.read()
        block = re.search(r"kColumns = \{(.*?)\};", text, re.S).group(1)
        cpp = re.findall(r'"([^"]+)"', block)
        self.assertEqual(report.SUMMARY_COLUMNS, cpp)


# A sweep over seeds 1-3 on two rates, every run over UDP. None: that seed never reached the
# target. Expected means and deviations are computed from these numbers in the test.
SEEDS = (1, 2, 3)
SEEDED_TTT = {"100Mbps": {"none": (100.0, 90.0, 120.0), "topk": (20.0, None, 30.0)},
              "1Gbps": {"none": (30.0, 28.0, 33.0), "topk": (16.0, 18.0, 15.0)}}
SEEDED_ACCURACY = {"none": (0.80, 0.82, 0.79), "topk": (0.75, 0.78, 0.70)}
SEEDED_LOST = {"none": (0.001, 0.003, 0.002), "topk": (0.01, 0.02, 0.04)}


def energy_of(profiles, to_target):
    """summary.json's energy object of a run whose workers run on `profiles`
    ({name: (workers, mean step compute s, busy s, compute J)})."""
    out = {"profiles": {}, "radio_j": None, "energy_to_target_j": to_target, "workers": []}
    for name, (workers, step_s, busy_s, joules) in profiles.items():
        out["profiles"][name] = {"workers": workers, "mean_step_compute_s": step_s, "busy_s": busy_s,
                                 "compute_j": joules, "radio_j": None, "total_j": joules}
    out["compute_j"] = out["total_j"] = sum(p[3] for p in profiles.values())
    return out


class EnergyReportTest(unittest.TestCase):
    """Runs on named devices: energy to target in the headline, compute per device below."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gradwire-report-energy-")
        runs = os.path.join(cls.tmp, "runs")
        write_run(runs, "mixed-dense", rate="1Gbps", codec={"kind": "none"}, ttt=3.0,
                  energy=energy_of({"jetson-orin-nano": (2, 0.004, 1.5, 40.0),
                                    "raspberry-pi-5": (2, 0.012, 4.5, 50.0)}, 61.5))
        write_run(runs, "mixed-topk", rate="1Gbps", codec={"kind": "topk", "ratio": 0.01}, ttt=2.0,
                  energy=energy_of({"jetson-orin-nano": (2, 0.004, 1.6, 30.0),
                                    "raspberry-pi-5": (2, 0.012, 4.6, 35.0)}, None))
        write_run(runs, "fixed-dense", rate="10Gbps", codec={"kind": "none"}, ttt=1.0)
        cls.out = os.path.join(cls.tmp, "report")
        assert report.main(["--out", cls.out, runs]) == 0
        with open(os.path.join(cls.out, "report.html")) as f:
            cls.page = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_energy_to_target_is_a_headline_column(self):
        head = Headline(self.page)
        self.assertEqual(head.header.index("energy to target (J)"),
                         head.header.index("time to target (s)") + 1)
        by_run = {row["runs"][0]: row["cells"]["energy_to_target_j"]["text"] for row in head.rows}
        self.assertEqual(by_run["mixed-dense"], "61.5")
        self.assertEqual(by_run["mixed-topk"], "-")  # never reached its target with energy known
        self.assertEqual(by_run["fixed-dense"], "-")  # fixed compute: no device, no energy

    def test_compute_per_device_lists_each_profile_of_each_run(self):
        rows = records(Tables(self.page).tables["devices"])
        self.assertEqual([(r["run"], r["device"]) for r in rows],
                         [("mixed-dense", "jetson-orin-nano"), ("mixed-dense", "raspberry-pi-5"),
                          ("mixed-topk", "jetson-orin-nano"), ("mixed-topk", "raspberry-pi-5")])
        pi = rows[1]
        self.assertEqual(pi["workers"], "2")
        self.assertEqual(pi["mean step compute (ms)"], "12")
        self.assertEqual(pi["busy (s)"], "4.5")
        self.assertEqual(pi["compute energy (J)"], "50")

    def test_a_device_list_is_named_by_its_runs_of_devices(self):
        run = type("Run", (), {"scenario": {"compute": {"mode": "profile", "profile": [
            "jetson-orin-nano", "jetson-orin-nano", "raspberry-pi-5", "jetson-orin-nano"]}}})()
        self.assertEqual(report.compute_label(run),
                         "profile 2 x jetson-orin-nano + 1 x raspberry-pi-5 + 1 x jetson-orin-nano")

    def test_runs_without_devices_have_neither(self):
        tmp = tempfile.mkdtemp(prefix="gradwire-report-noenergy-")
        try:
            write_run(os.path.join(tmp, "runs"), "plain", rate="1Gbps", codec={"kind": "none"}, ttt=1.0)
            out = os.path.join(tmp, "report")
            self.assertEqual(report.main(["--out", out, os.path.join(tmp, "runs")]), 0)
            with open(os.path.join(out, "report.html")) as f:
                page = f.read()
            self.assertNotIn("energy to target (J)", Headline(page).header)
            self.assertNotIn("devices", Tables(page).tables)
        finally:
            shutil.rmtree(tmp)


class LayerCompressionReportTest(unittest.TestCase):
    """A codec that selects per tensor: its compression by layer type in a table of its own."""

    def test_one_row_per_run_and_layer_type_and_none_without(self):
        tmp = tempfile.mkdtemp(prefix="gradwire-report-layers-")
        try:
            runs = os.path.join(tmp, "runs")
            by_type = {"conv": {"tensors": 19, "numel": 268336, "density": 0.0123,
                                "bytes_per_step": 26500.5, "compression": 40.5},
                       "fc": {"tensors": 1, "numel": 640, "density": 0.002,
                              "bytes_per_step": 12.8, "compression": 200.0},
                       "vector": {"tensors": 2, "numel": 74, "density": 0.05,
                                  "bytes_per_step": 9.0, "compression": None}}
            write_run(runs, "ada", rate="1Gbps", codec={"kind": "adacomp"}, ttt=1.0,
                      layers={"by_type": by_type, "tensors": []})
            write_run(runs, "dense", rate="1Gbps", codec={"kind": "none"}, ttt=2.0)
            out = os.path.join(tmp, "report")
            self.assertEqual(report.main(["--out", out, runs]), 0)
            with open(os.path.join(out, "report.html")) as f:
                page = f.read()
            rows = records(Tables(page).tables["layers"])
            self.assertEqual([(r["run"], r["layer type"]) for r in rows],
                             [("ada", "conv"), ("ada", "fc"), ("ada", "vector")])
            self.assertEqual(rows[0]["density (%)"], "1.23")
            self.assertEqual(rows[0]["compression (x)"], "40.5")
            self.assertEqual(rows[1]["compression (x)"], "200")
            self.assertEqual(rows[2]["compression (x)"], "")  # sent nothing: no ratio
            # Without such a codec, no table.
            os.remove(os.path.join(runs, "ada", "summary.json"))
            shutil.rmtree(os.path.join(runs, "ada"))
            self.assertEqual(report.main(["--out", out, runs]), 0)
            with open(os.path.join(out, "report.html")) as f:
                self.assertNotIn("layers", Tables(f.read()).tables)
        finally:
            shutil.rmtree(tmp)


def seeded_name(rate, key, seed):
    return f"s-{rate}-{key}-seed{seed}"


class SeededReportTest(unittest.TestCase):
    """Runs that differ only in their seed: one headline row, mean ± sample sd."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gradwire-report-seeded-test-")
        runs = os.path.join(cls.tmp, "runs")
        for rate, by_codec in SEEDED_TTT.items():
            for key, times in by_codec.items():
                for i, seed in enumerate(SEEDS):
                    write_run(runs, seeded_name(rate, key, seed), rate=rate, codec=CODECS[key][0],
                              ttt=times[i], seed=seed, accuracy=SEEDED_ACCURACY[key][i],
                              lost=SEEDED_LOST[key][i])
        cls.runs = runs
        cls.out = os.path.join(cls.tmp, "report")
        assert report.main(["--out", cls.out, runs]) == 0
        with open(os.path.join(cls.out, "report.html")) as f:
            cls.page = f.read()
        cls.head = Headline(cls.page)
        cls.rows = {tuple(row["runs"]): row for row in cls.head.rows}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def assert_stats(self, cell, values, label):
        present = [v for v in values if v is not None]
        mean, sd = statistics.mean(present), statistics.stdev(present)
        self.assertTrue(math.isclose(float(cell["data-mean"]), mean, rel_tol=1e-12), (label, cell, mean))
        self.assertTrue(math.isclose(float(cell["data-sd"]), sd, rel_tol=1e-12), (label, cell, sd))
        self.assertEqual(int(cell["data-n"]), len(present), label)
        text = "%.4g ± %.2g" % (mean, sd)
        if len(present) < len(values):
            text += f" ({len(present)} of {len(values)} runs)"
        self.assertEqual(cell["text"], text, label)

    def test_one_row_per_configuration_with_mean_and_sample_sd(self):
        self.assertEqual(len(self.head.rows), 4)
        self.assertIn("lost gradient (fraction, UDP)", self.head.header)
        self.assertNotIn("settings", self.head.header)  # the seed is not a setting
        for rate, by_codec in SEEDED_TTT.items():
            for key, times in by_codec.items():
                names = tuple(seeded_name(rate, key, s) for s in SEEDS)
                row = self.rows[names]
                label = f"{rate} {key}"
                cells = row["cells"]
                self.assertEqual(row["labels"][0], {"100Mbps": "Ethernet 100 Mbit/s",
                                                    "1Gbps": "Ethernet 1 Gbit/s"}[rate])
                self.assertEqual(cells["runs"]["text"], "3 (seeds 1, 2, 3)")
                self.assert_stats(cells["time_to_target_s"], times, label)
                self.assert_stats(cells["final_accuracy"], SEEDED_ACCURACY[key], label)
                self.assert_stats(cells["lost_gradient_fraction"], SEEDED_LOST[key], label)
                # Speedups per seed, against the same seed's dense run, then averaged.
                dense = by_codec["none"]
                per_seed = [d / t if t else None for d, t in zip(dense, times)]
                self.assert_stats(cells["speedup_vs_dense_fp32"], per_seed, label)
                self.assert_stats(cells["speedup_vs_best_dense"], per_seed, label)
        # A mean of ratios, not a ratio of means.
        row = self.rows[tuple(seeded_name("1Gbps", "topk", s) for s in SEEDS)]
        ratio_of_means = statistics.mean(SEEDED_TTT["1Gbps"]["none"]) / statistics.mean(SEEDED_TTT["1Gbps"]["topk"])
        self.assertNotAlmostEqual(float(row["cells"]["speedup_vs_dense_fp32"]["data-mean"]), ratio_of_means)

    def test_rows_sorted_fastest_mean_first(self):
        order = [(row["labels"][0], row["runs"][0].split("-")[2]) for row in self.head.rows]
        self.assertEqual(order, [("Ethernet 100 Mbit/s", "topk"), ("Ethernet 100 Mbit/s", "none"),
                                 ("Ethernet 1 Gbit/s", "topk"), ("Ethernet 1 Gbit/s", "none")])

    def test_speedup_figure_has_mean_and_sd_over_seeds(self):
        runs = [report.run_folders.load(os.path.join(self.runs, d)) for d in sorted(os.listdir(self.runs))]
        table = report.baselines(runs, report.make_reference(runs, ""))
        series = {k[0]: report.by_rate(v)
                  for k, v in report.rate_series(runs, table, with_seed=False).items()}
        top = series[TOPK_LABEL]
        self.assertEqual([p[0] for p in top], [1e8, 1e9])
        for (bw, mean, sd, n), rate in zip(top, ("100Mbps", "1Gbps")):
            per_seed = [d / t for d, t in zip(SEEDED_TTT[rate]["none"], SEEDED_TTT[rate]["topk"]) if t]
            self.assertEqual(n, len(per_seed), rate)
            self.assertTrue(math.isclose(mean, statistics.mean(per_seed), rel_tol=1e-12), rate)
            self.assertTrue(math.isclose(sd, statistics.stdev(per_seed), rel_tol=1e-12), rate)
        for stem in report.FIGURES:
            self.assertTrue(os.path.exists(os.path.join(self.out, stem + ".png")), stem)

    def test_other_differences_are_their_own_rows_and_named(self):
        runs = os.path.join(self.tmp, "compute")
        for seed in SEEDS[:2]:
            for compute in (0.01, 0.02):
                write_run(runs, f"c{compute}-seed{seed}", rate="1Gbps", codec={"kind": "none"},
                          ttt=10.0 * seed + 100 * compute, seed=seed, compute_s=compute)
        out = os.path.join(self.tmp, "compute-report")
        self.assertEqual(report.main(["--out", out, runs]), 0)
        with open(os.path.join(out, "report.html")) as f:
            page = f.read()
        head = Headline(page)
        self.assertIn("settings", head.header)
        self.assertNotIn("lost gradient (fraction, UDP)", head.header)  # TCP only
        self.assertEqual(sorted(row["runs"] for row in head.rows),
                         [["c0.01-seed1", "c0.01-seed2"], ["c0.02-seed1", "c0.02-seed2"]])
        # Every row has 4 workers: the workers column gives way to the common settings line.
        self.assertEqual(head.header[:3], ["network", "method", "settings"])
        self.assertEqual([row["labels"][2] for row in head.rows],
                         ["compute.seconds=0.01", "compute.seconds=0.02"])
        common = re.search(r"<p class='common'>Common to every row: (.*?)\.</p>", page)
        self.assertIsNotNone(common)
        self.assertEqual(common.group(1).split("; ")[:2], ["4 workers", "topology ring"])


def png_width(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return int.from_bytes(head[16:20], "big")


# Resolved network objects as scenario.json holds them (the keys that tell the families apart).
WIFI = {"family": "wifi", "standard": "ax", "band": "5GHz", "width_mhz": 80, "channel": 0,
        "spatial_streams": 1, "rate_control": "ideal", "mcs": 7, "tx_power_dbm": 20.0,
        "placement": {"kind": "disc", "radius_m": 15.0}, "server": "ap", "label": "",
        "transport": {"kind": "tcp"}}
LTE = {"family": "lte", "enbs": 1, "enb_spacing_m": 500.0, "ul_bandwidth": 100,
       "dl_bandwidth": 100, "scheduler": "pf", "server": "edge", "label": "",
       "placement": {"kind": "distances", "distances_m": [80.0, 150.0, 250.0, 400.0]},
       "transport": {"kind": "tcp"}}
HYBRID = {"family": "hybrid", "server_rate": "10Gbps", "label": "", "transport": {"kind": "tcp"},
          "groups": [dict(WIFI, workers=2), dict(LTE, workers=2),
                     {"family": "ethernet", "workers": 2, "rate": "1Gbps"}]}
WIRELESS = [("wifi", WIFI, 8, "802.11ax 80 MHz, 8 stations within 15 m"),
            ("lte", LTE, 4, "LTE 20 MHz, 4 UEs at 80-400 m"),
            ("hybrid", HYBRID, 6, "hybrid: 2 Wi-Fi + 2 LTE + 2 Ethernet")]


class WirelessReportTest(unittest.TestCase):
    """A study over Wi-Fi, LTE and hybrid networks, whose network objects share few keys: the
    headline names each network by its label and lists as settings only what its columns do not
    tell apart; figures stay at most 2,000 px wide however many and however long the labels."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gradwire-report-wireless-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def report(self, name, runs):
        folder = os.path.join(self.tmp, name)
        for run_name, kw in runs:
            write_run(folder, run_name, rate=None, **kw)
        out = os.path.join(self.tmp, name + "-report")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main(["--out", out, folder]), 0)
        with open(os.path.join(out, "report.html")) as f:
            return out, f.read()

    def study(self):
        return [(f"{family}-{kind}", dict(network=network, workers=workers, codec={"kind": kind},
                                          ttt=ttt))
                for family, network, workers, _ in WIRELESS
                for kind, ttt in (("none", 30.0), ("topk", 20.0))]

    def test_networks_by_label_and_no_settings_their_columns_tell(self):
        _, page = self.report("study", self.study())
        head = Headline(page)
        self.assertEqual(head.header[:3], ["network", "method", "workers"])
        self.assertNotIn("settings", head.header)  # every difference is the network's
        self.assertNotIn("network.enbs", page)
        self.assertEqual(sorted({row["labels"][0] for row in head.rows}),
                         sorted(label for *_, label in WIRELESS))
        for row in head.rows:
            family, network, workers, label = next(w for w in WIRELESS if row["runs"][0].startswith(w[0]))
            self.assertEqual(row["labels"][0], label)
            self.assertEqual(row["labels"][2], str(workers))

    def test_a_difference_within_one_network_label_is_named_where_it_is(self):
        runs = self.study() + [("wifi-weak-none", dict(network=dict(WIFI, tx_power_dbm=10.0),
                                                       workers=8, codec={"kind": "none"}, ttt=40.0))]
        _, page = self.report("tx-power", runs)
        head = Headline(page)
        self.assertEqual(head.header[3], "settings")
        settings = {row["runs"][0]: row["labels"][3] for row in head.rows}
        self.assertEqual(settings["wifi-none"], "network.tx_power_dbm=20")
        self.assertEqual(settings["wifi-weak-none"], "network.tx_power_dbm=10")
        # The LTE and hybrid networks have no such key: nothing to say, not "-".
        self.assertEqual(settings["lte-none"], "")
        self.assertEqual(settings["hybrid-topk"], "")

    def test_figures_are_at_most_2000_px_wide(self):
        # Seven networks with the longest labels a network may have, each run also told apart by
        # a long setting: the legends cut and wrap them and the panels wrap into rows.
        runs = []
        for i in range(7):
            label = f"network {i} " + "x" * 70
            for kind, ttt in (("none", 30.0 + i), ("topk", 20.0 + i)):
                runs.append((f"n{i}-{kind}", dict(network=dict(WIFI, label=label), workers=8,
                                                  codec={"kind": kind}, ttt=ttt,
                                                  compute_s=0.01 + 0.001 * i)))
        out, page = self.report("wide", runs)
        for stem in ("time_to_target", "accuracy_vs_time", "bytes_vs_accuracy", "step_breakdown"):
            width = png_width(os.path.join(out, stem + ".png"))
            self.assertLessEqual(width, 2000, stem)
        self.assertEqual(report.short_label("x" * 200, 90, 0), "x" * 89 + "…")
        self.assertTrue(all(len(line) <= report.WRAP_AT
                            for line in report.short_label("word " * 40).splitlines()))


class QuestionReportTest(unittest.TestCase):
    """A sweep folder with question.json: one verdict per worker count, computed here from the
    times written into the runs."""

    # workers -> {side: [time to target per seed, None = never reached]}
    TIMES = {4: {"dgc-1g": [2.0, 2.2], "dense-10g": [3.0, 3.4]},
             8: {"dgc-1g": [5.0, 5.5], "dense-10g": [4.0, 4.1]},
             16: {"dgc-1g": [6.0, None], "dense-10g": [None, None]},
             32: {"dgc-1g": [None, None], "dense-10g": [None, None]}}
    SIDES = {"dgc-1g": ({"kind": "dgc"}, "1Gbps"), "dense-10g": ({"kind": "none"}, "10Gbps")}
    QUESTION = {"text": "Does DGC over 1 Gbps reach the target before dense over 10 Gbps?",
                "candidate": {"codec.kind": "dgc", "network.rate": "1Gbps"},
                "baseline": {"codec.kind": "none", "network.rate": "10Gbps"},
                "per": ["training.workers"]}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gradwire-report-question-test-")
        sweep = os.path.join(cls.tmp, "sweep")
        for n, sides in cls.TIMES.items():
            for side, times in sides.items():
                codec, rate = cls.SIDES[side]
                for seed, t in enumerate(times, start=1):
                    # Dense over 10 Gbps steps faster: 60 ms against DGC's 80 ms.
                    write_run(sweep, f"{side}-n{n}-seed{seed}", rate=rate, codec=codec, workers=n,
                              ttt=t, seed=seed, comm_s=0.05 if side == "dense-10g" else 0.07)
        # Another rate of dense: matched by neither side.
        write_run(sweep, "dense-1g-n4-seed1", rate="1Gbps", codec={"kind": "none"}, ttt=1.0)
        with open(os.path.join(sweep, "question.json"), "w") as f:
            json.dump(cls.QUESTION, f)
        with open(os.path.join(sweep, "results.csv"), "w") as f:
            f.write("run,status\n")
        cls.out = os.path.join(cls.tmp, "report")
        assert report.main(["--out", cls.out, sweep]) == 0
        with open(os.path.join(cls.out, "report.html")) as f:
            cls.page = f.read()
        with open(os.path.join(cls.out, "answer.json")) as f:
            cls.answer = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def expected(self, n):
        c = [t for t in self.TIMES[n]["dgc-1g"] if t is not None]
        b = [t for t in self.TIMES[n]["dense-10g"] if t is not None]
        if c and b:
            return "yes" if statistics.mean(c) < statistics.mean(b) else "no"
        return "yes" if c else "no" if b else "undecided"

    def test_one_verdict_per_worker_count(self):
        table = Tables(self.page).tables["answer"]
        self.assertEqual([row[0] for row in table[1:]], ["4", "8", "16", "32"])
        self.assertEqual([row[1].split(":")[0] for row in table[1:]],
                         [self.expected(n) for n in (4, 8, 16, 32)])
        self.assertLess(self.page.index("<h2>Answer</h2>"), self.page.index("<h2>Headline</h2>"))
        self.assertIn(self.QUESTION["text"], self.page)

    def test_times_speedups_and_throughput_are_seed_means(self):
        rows = {row["per"]["training.workers"]: row for row in self.answer[0]["rows"]}
        for n in (4, 8):
            c, b = self.TIMES[n]["dgc-1g"], self.TIMES[n]["dense-10g"]
            row = rows[n]
            self.assertAlmostEqual(row["candidate"]["time_to_target_s"], statistics.mean(c))
            self.assertAlmostEqual(row["candidate"]["time_to_target_sd"], statistics.stdev(c))
            self.assertAlmostEqual(row["speedup"], statistics.mean(b) / statistics.mean(c))
            # workers x batch 8 per simulated step of compute 10 ms + comm.
            self.assertAlmostEqual(row["candidate"]["throughput"], n * 8 / 0.08)
            self.assertAlmostEqual(row["baseline"]["throughput"], n * 8 / 0.06)
            self.assertAlmostEqual(row["throughput_ratio"], 0.06 / 0.08)
        self.assertEqual(rows[16]["candidate"]["reached"], 1)
        self.assertIsNone(rows[16]["speedup"])
        self.assertEqual(rows[32]["verdict"], "undecided")

    def test_a_question_no_run_matches_is_said_not_answered(self):
        sweep = os.path.join(self.tmp, "unmatched")
        write_run(sweep, "only-dense", rate="1Gbps", codec={"kind": "none"}, ttt=1.0)
        with open(os.path.join(sweep, "question.json"), "w") as f:
            json.dump(self.QUESTION, f)
        with open(os.path.join(sweep, "results.csv"), "w") as f:
            f.write("run,status\n")
        out = os.path.join(self.tmp, "unmatched-report")
        self.assertEqual(report.main(["--out", out, sweep]), 0)
        with open(os.path.join(out, "report.html")) as f:
            page = f.read()
        self.assertIn("Not answered: no finished run matches the candidate", page)


if __name__ == "__main__":
    unittest.main()
