#!/usr/bin/env python3
"""Tests of analysis/runs.py: finding run folders, loading them, naming their configuration,
and parsing units as the C++ side does.

Usage: runs_test.py [GRADWIRE_BINARY]

The unit cases are parsed here and by the built gradwire (`gradwire validate --print` on
scenarios carrying the texts), and both must accept the same texts with the same values. The
report and the demo's answer are run on the same folders and must name every run alike.
Exit 77 (ctest: skipped), with the reason printed, when a part cannot run: no gradwire binary
given or built, or no matplotlib for the report.
"""
import concurrent.futures
import contextlib
import html.parser
import importlib.util
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANALYSIS = os.path.join(SOURCE, "analysis")
GRADWIRE = sys.argv[1] if len(sys.argv) > 1 else None


def load_module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ANALYSIS, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runs = load_module("runs")
answer = load_module("answer")
summarize_runs = load_module("summarize_runs")


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


DDP_BUCKETS = {"size_mb": 25.0, "first_mb": 1.0}

# Resolved network objects (the keys a label reads; gradwire writes every key) and their labels.
WIFI = {"family": "wifi", "standard": "ax", "band": "5GHz", "width_mhz": 80, "spatial_streams": 1,
        "rate_control": "ideal", "mcs": 7, "placement": {"kind": "distance", "distance_m": 5.0}}
LTE = {"family": "lte", "ul_bandwidth": 100, "dl_bandwidth": 100, "enbs": 1,
       "placement": {"kind": "distance", "distance_m": 100.0}}
NETWORK_LABELS = [
    ({"family": "ethernet", "rate": "1Gbps"}, 4, "Ethernet 1 Gbit/s"),
    ({"family": "ethernet", "rate": "100 Mb/s"}, 4, "Ethernet 100 Mbit/s"),
    ({"family": "ethernet", "rate": "2500000kbps"}, 2, "Ethernet 2.5 Gbit/s"),
    ({"family": "ethernet", "rate": "9600bps"}, 2, "Ethernet 9.6 kbit/s"),
    (dict(WIFI, placement={"kind": "disc", "radius_m": 15.0}), 8,
     "802.11ax 80 MHz, 8 stations within 15 m"),
    (dict(WIFI, standard="n", band="2.4GHz", width_mhz=20, spatial_streams=2,
          rate_control="constant", mcs=3), 1, "802.11n 2.4 GHz 20 MHz 2x2 MCS 3, 1 station at 5 m"),
    (dict(WIFI, band="6GHz", width_mhz=160, placement={"kind": "grid", "spacing_m": 2.5,
                                                       "columns": 4}),
     6, "802.11ax 6 GHz 160 MHz, 6 stations on a 2.5 m grid"),
    (dict(LTE, placement={"kind": "distances", "distances_m": [80.0, 150.0, 250.0, 400.0]}), 4,
     "LTE 20 MHz, 4 UEs at 80-400 m"),
    (dict(LTE, ul_bandwidth=25, dl_bandwidth=6, enbs=3), 1, "LTE UL 5 MHz / DL 1.4 MHz, 3 cells, 1 UE at 100 m"),
    (dict(LTE, placement={"kind": "distances", "distances_m": [120.0]}), 2, "LTE 20 MHz, 2 UEs at 120 m"),
    ({"family": "hybrid", "groups": [dict(WIFI, workers=2), dict(LTE, workers=2),
                                     {"family": "ethernet", "workers": 2, "rate": "1Gbps"}]},
     6, "hybrid: 2 Wi-Fi + 2 LTE + 2 Ethernet"),
    ({"family": "hybrid", "groups": [dict(WIFI, workers=3), dict(WIFI, workers=1)]}, 4,
     "hybrid: 3 Wi-Fi + 1 Wi-Fi"),
    (dict(WIFI, label="the lab's Wi-Fi"), 8, "the lab's Wi-Fi"),
    (dict(WIFI, label=""), 8, "802.11ax 80 MHz, 8 stations at 5 m"),
]


def write_run(parent, name, *, rate="1Gbps", codec=None, workers=4, ttt=None, accuracy=0.5,
              buckets=DDP_BUCKETS, metrics=None, family="ethernet", topology="ring", network=None):
    """A run folder as gradwire leaves it; metrics: the records of metrics.jsonl; network: the
    whole network object (else one of `family` with `rate`)."""
    path = os.path.join(parent, name)
    os.makedirs(path)
    if network is None:
        network = {"family": family}
        if rate is not None:
            network["rate"] = rate
    write_json(os.path.join(path, "scenario.json"), {
        "gradwire": 1, "name": name, "seed": 1,
        "training": {"workers": workers, "steps": 10, "batch": 8, "eval_every": 5,
                     "target_accuracy": 0.5, "buckets": buckets},
        "compute": {"mode": "fixed", "seconds": 0.01},
        "network": network, "topology": {"kind": topology},
        "codec": codec or {"kind": "none"}})
    write_json(os.path.join(path, "summary.json"), {
        "name": name, "steps": 10, "workers": workers, "codec": (codec or {"kind": "none"})["kind"],
        "topology": "ring", "network": family, "final_accuracy": accuracy,
        "time_to_target_s": ttt, "sim_time_s": 1.0, "mean_step_compute_s": 0.01,
        "mean_step_comm_s": 0.09, "bytes_on_wire": 5000, "payload_bytes": 4000 * workers,
        "compression_ratio": 1.0, "wall_time_s": 1.0, "ns3_wall_time_s": 0.1})
    if metrics is None:
        metrics = [{"type": "step", "step": i, "sim_time_s": 0.1 * i} for i in range(1, 11)]
        metrics += [{"type": "eval", "step": s, "sim_time_s": 0.1 * s, "accuracy": accuracy * s / 10}
                    for s in (5, 10)]
    with open(os.path.join(path, "metrics.jsonl"), "w") as f:
        f.write("".join(json.dumps(rec) + "\n" for rec in metrics))
    return path


class TempDir(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gradwire-runs-test-")

    def tearDown(self):
        shutil.rmtree(self.dir)


class Discovery(TempDir):
    def setUp(self):
        super().setUp()
        d = self.dir
        self.sweep = os.path.join(d, "sweep")
        write_run(self.sweep, "b")
        write_run(self.sweep, "a")
        with open(os.path.join(self.sweep, "results.csv"), "w") as f:
            f.write("run,status\n")
        # A run still being assembled: its staging folder is hidden until it is renamed.
        write_run(self.sweep, ".c.partial-123")
        os.makedirs(os.path.join(self.sweep, "logs"))
        # Nothing below a run folder is another run.
        write_run(os.path.join(self.sweep, "a"), "inner")
        write_run(os.path.join(d, "loose"), "z")
        # summary.json alone (or scenario.json alone) is not a finished run.
        os.makedirs(os.path.join(d, "half"))
        write_json(os.path.join(d, "half", "summary.json"), {})

    def test_finds_run_and_sweep_folders_sorted(self):
        found, sweeps = runs.find([self.dir])
        self.assertEqual(found, [os.path.join(self.dir, "loose", "z"), os.path.join(self.sweep, "a"),
                                 os.path.join(self.sweep, "b")])
        self.assertEqual(sweeps, [self.sweep])

    def test_folders_in_the_order_given_each_run_once(self):
        b = os.path.join(self.sweep, "b")
        found, _ = runs.find([b, self.dir, self.sweep + "/"])
        self.assertEqual(found, [b, os.path.join(self.dir, "loose", "z"), os.path.join(self.sweep, "a")])

    def test_a_run_folder_given_directly_is_found(self):
        a = os.path.join(self.sweep, "a")
        self.assertEqual(runs.find([a]), ([a], []))

    def test_not_a_folder_is_an_error(self):
        for path in (os.path.join(self.dir, "missing"), os.path.join(self.sweep, "results.csv")):
            with self.assertRaises(runs.RunError) as caught:
                runs.find([path])
            self.assertEqual(str(caught.exception), f"{path}: not a folder")

    def test_is_run(self):
        self.assertTrue(runs.is_run(os.path.join(self.sweep, "a")))
        self.assertFalse(runs.is_run(os.path.join(self.dir, "half")))
        self.assertFalse(runs.is_run(self.sweep))

    def test_load_all(self):
        self.assertEqual([r.name for r in runs.load_all([self.sweep])], ["a", "b"])


class Loading(TempDir):
    METRICS = [{"type": "step", "step": 1, "sim_time_s": 0.1},
               {"type": "eval", "step": 1, "sim_time_s": 0.1, "accuracy": 0.2},
               {"type": "event", "event": "leave", "rank": 1, "step": 2, "sim_time_s": 0.15},
               {"type": "step", "step": 2, "sim_time_s": 0.2},
               {"type": "update", "rank": 0, "version": 3, "staleness": 1, "sim_time_s": 0.2},
               {"type": "eval", "step": 2, "sim_time_s": 0.2, "accuracy": 0.3}]

    def test_scenario_summary_and_metrics(self):
        path = write_run(self.dir, "r", metrics=self.METRICS, codec={"kind": "topk", "ratio": 0.01},
                         workers=2, ttt=0.2)
        run = runs.load(path + "/")
        self.assertEqual(run.name, "r")
        self.assertEqual(run.scenario["codec"], {"kind": "topk", "ratio": 0.01})
        self.assertEqual(run.summary["time_to_target_s"], 0.2)
        self.assertEqual(run.time_to_target_s, 0.2)
        self.assertEqual(run.codec_kind, "topk")
        self.assertEqual(run.workers, 2)
        self.assertEqual(run.seed, 1)
        self.assertEqual(run.rate_bps, 1e9)
        self.assertEqual(len(run.records), 6)
        self.assertEqual([(r["type"], r["step"]) for r in run.steps], [("step", 1), ("step", 2)])
        self.assertEqual([e["accuracy"] for e in run.evals], [0.2, 0.3])
        self.assertAlmostEqual(run.step_time_s, 0.1)
        self.assertEqual(run.bytes_per_step, 4000 * 2 / 10 / 2)

    def test_a_folder_is_read_once_and_again_when_rewritten(self):
        path = write_run(self.dir, "r", metrics=self.METRICS)
        run = runs.load(path)
        self.assertIs(runs.load(path), run)
        self.assertEqual(len(run.evals), 2)
        # Read already: the run does not go back to the file.
        os.remove(os.path.join(path, "metrics.jsonl"))
        self.assertEqual(len(run.steps), 2)
        # A run redone under the same name is a new run.
        write_json(os.path.join(path, "summary.json"), {"time_to_target_s": 123.5, "steps": 10,
                                                             "final_accuracy": None, "sim_time_s": 1.0})
        again = runs.load(path)
        self.assertIsNot(again, run)
        self.assertEqual(again.time_to_target_s, 123.5)
        self.assertEqual(again.evals, [])

    def test_metrics_are_read_when_first_needed(self):
        path = write_run(self.dir, "r")
        with open(os.path.join(path, "metrics.jsonl"), "w") as f:
            f.write('{"type": "step", "step": 1, "sim_time_s": 0.1}\nnot json\n')
        run = runs.load(path)  # scenario and summary only
        with self.assertRaises(runs.RunError) as caught:
            run.evals
        self.assertIn(os.path.join(path, "metrics.jsonl") + ": line 2 is not JSON", str(caught.exception))

    def test_malformed_files_are_named(self):
        cases = [("summary.json", "{", "not JSON"), ("scenario.json", "[1, 2]", "expected a JSON object")]
        for i, (file, text, said) in enumerate(cases):
            path = write_run(self.dir, f"r{i}")
            with open(os.path.join(path, file), "w") as f:
                f.write(text)
            with self.assertRaises(runs.RunError) as caught:
                runs.load(path)
            self.assertIn(os.path.join(path, file) + ": " + said, str(caught.exception))
        path = write_run(self.dir, "unfinished")
        os.remove(os.path.join(path, "summary.json"))
        with self.assertRaises(runs.RunError) as caught:
            runs.load(path)
        self.assertEqual(str(caught.exception), f"{path}: not a finished run (no summary.json)")

    def test_a_malformed_rate_is_named(self):
        run = runs.load(write_run(self.dir, "r", rate="fast"))
        with self.assertRaises(runs.RunError) as caught:
            run.rate_bps
        self.assertIn("scenario.json: network.rate: expected a data rate", str(caught.exception))
        self.assertIsNone(runs.load(write_run(self.dir, "w", rate=None, family="wifi")).rate_bps)


class Labels(TempDir):
    def test_codec_labels(self):
        cases = [({"kind": "none", "error_feedback": False}, "dense SGD"),
                 ({"kind": "topk", "ratio": 0.01, "error_feedback": True}, "topk (1%, error feedback)"),
                 ({"kind": "topk", "ratio": 0.07, "error_feedback": False}, "topk (7%)"),
                 ({"kind": "dgc", "density": 0.001, "momentum": 0.9}, "dgc (0.1%)"),
                 ({"kind": "powersgd", "rank": 2, "error_feedback": True}, "powersgd (rank 2, error feedback)"),
                 ({"kind": "qsgd", "levels": 7}, "qsgd (levels 7)"),
                 ({"kind": "fp16", "zstd": True}, "fp16 (zstd)"),
                 ({"kind": "none", "zstd": True}, "dense SGD (zstd)"),
                 ({"kind": "bf16"}, "bf16"),
                 ({}, "?")]
        for codec, label in cases:
            self.assertEqual(runs.codec_label(codec), label, codec)

    def test_method_and_network_labels(self):
        run = runs.load(write_run(self.dir, "b", rate="100Mbps", codec={"kind": "fp16"},
                                  buckets={"size_mb": 10, "first_mb": 1}))
        self.assertEqual(runs.method_label(run), "fp16, buckets 10 MB (first 1 MB)")
        self.assertEqual(runs.network_label(run), "Ethernet 100 Mbit/s")
        run = runs.load(write_run(self.dir, "c", buckets={"size_mb": 4.5, "first_mb": 4.5}))
        self.assertEqual(runs.method_label(run), "dense SGD, buckets 4.5 MB")
        run = runs.load(write_run(self.dir, "w", rate=None, family="wifi", workers=8,
                                  network=dict(WIFI, placement={"kind": "disc", "radius_m": 15.0})))
        self.assertEqual(runs.network_label(run), "802.11ax 80 MHz, 8 stations within 15 m")

    def test_network_labels(self):
        """Each family's label from its resolved object and the worker count; a given label
        wins."""
        for network, workers, label in NETWORK_LABELS:
            self.assertEqual(runs.label_of_network(network, workers), label, network)

    def test_buckets_are_named_where_they_are_not_the_default(self):
        cases = [("ring", DDP_BUCKETS, "topk (1%)"), ("ps", {"size_mb": 25, "first_mb": 1}, "topk (1%)"),
                 ("ring", "none", "topk (1%), no buckets"), ("ps", "none", "topk (1%), no buckets"),
                 # Gossip sends parameters: it has no buckets, and that goes without saying.
                 ("gossip", "none", "topk (1%)")]
        for i, (topology, buckets, label) in enumerate(cases):
            run = runs.load(write_run(self.dir, f"r{i}", topology=topology, buckets=buckets,
                                      codec={"kind": "topk", "ratio": 0.01}))
            self.assertEqual(runs.method_label(run), label, (topology, buckets))
        # Nor does a ring with faults; and a run from before buckets existed had none.
        path = write_run(self.dir, "faults", buckets="none")
        with open(os.path.join(path, "scenario.json")) as f:
            scenario = json.load(f)
        write_json(os.path.join(path, "scenario.json"),
                   dict(scenario, faults=[{"rank": 1, "leave_at": "1ms"}]))
        self.assertEqual(runs.method_label(runs.load(path)), "dense SGD")
        del scenario["training"]["buckets"]
        path = write_run(self.dir, "old")
        write_json(os.path.join(path, "scenario.json"), scenario)
        self.assertEqual(runs.method_label(runs.load(path)), "dense SGD, no buckets")

    def test_networks_by_family_then_slowest_link(self):
        rates = ["10Gbps", "100 Mbps", "1 Gb/s", "2500Mbps"]
        loaded = [runs.load(write_run(self.dir, f"r{i}", rate=r)) for i, r in enumerate(rates)]
        loaded.append(runs.load(write_run(self.dir, "w", rate=None, family="wifi", network=WIFI)))
        ordered = sorted(loaded, key=runs.network_key)
        self.assertEqual([runs.network_label(r) for r in ordered],
                         ["Ethernet 100 Mbit/s", "Ethernet 1 Gbit/s", "Ethernet 2.5 Gbit/s",
                          "Ethernet 10 Gbit/s", "802.11ax 80 MHz, 4 stations at 5 m"])


class Headline(html.parser.HTMLParser):
    """The label cells (network, method, workers) of the report's headline rows."""

    def __init__(self, page):
        super().__init__()
        self.rows, self.inside, self.cell = [], False, None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.inside = attrs.get("class") == "headline"
        elif self.inside and tag == "tr" and "data-runs" in attrs:
            self.rows.append({"runs": json.loads(attrs["data-runs"]), "labels": []})
        elif self.inside and tag == "td" and "data-column" not in attrs and self.rows:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif tag == "td" and self.cell is not None:
            self.rows[-1]["labels"].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


class OneNaming(TempDir):
    """The report, the demo's answer and the summary table name a run the same."""

    def setUp(self):
        super().setUp()
        self.runs = os.path.join(self.dir, "runs")
        write_run(self.runs, "dense", rate="100Mbps", ttt=11.0, accuracy=0.85)
        write_run(self.runs, "topk", rate="100Mbps", ttt=2.2, accuracy=0.84,
                  codec={"kind": "topk", "ratio": 0.01, "error_feedback": True})
        write_run(self.runs, "dgc-buckets", rate="100Mbps", ttt=4.4, accuracy=0.81,
                  codec={"kind": "dgc", "density": 0.001}, buckets={"size_mb": 10, "first_mb": 1})
        write_run(self.runs, "dense-fast", rate="10Gbps", ttt=1.0, accuracy=0.85)
        write_run(self.runs, "topk-fast", rate="10Gbps", ttt=1.5, accuracy=0.84,
                  codec={"kind": "topk", "ratio": 0.01, "error_feedback": True})

    def answer_lines(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(answer.main(["answer.py", self.runs]), 0)
        return out.getvalue().splitlines()

    def test_report_and_answer_agree(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib for this Python (the report needs it)")
        report = load_module("report")
        out = os.path.join(self.dir, "report")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main(["--out", out, self.runs]), 0)
        with open(os.path.join(out, "report.html")) as f:
            rows = {row["runs"][0]: row["labels"] for row in Headline(f.read()).rows}
        self.assertEqual(rows["topk"], ["Ethernet 100 Mbit/s", "topk (1%, error feedback)"])
        self.assertEqual(rows["dgc-buckets"][1], "dgc (0.1%), buckets 10 MB (first 1 MB)")
        lines = self.answer_lines()
        # The fastest at 100 Mbps is top-k; at 10 Gbps dense wins and top-k is named among
        # the slower ones.
        self.assertTrue(lines[0].startswith(f"{rows['topk'][0]}, 4 workers: {rows['topk'][1]} reached"),
                        lines[0])
        self.assertTrue(lines[1].startswith(f"{rows['dense-fast'][0]}, 4 workers: {rows['dense-fast'][1]} "
                                            "reached"), lines[1])
        self.assertIn(f"({rows['topk-fast'][1]} 1.50x its time)", lines[1])

    def test_summary_table_names_methods_alike(self):
        out = io.StringIO()
        folders = [os.path.join(self.runs, n) for n in ("topk", "dgc-buckets")]
        with contextlib.redirect_stdout(out):
            self.assertEqual(summarize_runs.main(["--csv"] + folders), 0)
        lines = out.getvalue().splitlines()
        self.assertTrue(lines[0].startswith("run,method,codec,topology,network,rate,"))
        self.assertTrue(lines[1].startswith('topk,"topk (1%, error feedback)",topk,ring,Ethernet 100 Mbit/s,'),
                        lines[1])
        self.assertTrue(lines[2].startswith('dgc-buckets,"dgc (0.1%), buckets 10 MB (first 1 MB)",dgc,'),
                        lines[2])

    def test_tools_refuse_what_is_not_a_run(self):
        half = os.path.join(self.dir, "half")
        os.makedirs(half)
        write_json(os.path.join(half, "summary.json"), {})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(summarize_runs.main([half]), 2)
            self.assertEqual(answer.main(["answer.py", half]), 2)
            self.assertEqual(answer.main(["answer.py", os.path.join(self.dir, "missing")]), 2)
        self.assertEqual(err.getvalue().splitlines(), [
            f"error: {half}: not a finished run (no scenario.json)",
            f"skipped: {half}: not a finished run (no scenario.json)",
            f"error: no run folders (with summary.json and scenario.json) under {half} that "
            "could be read (skipped above)",
            f"error: {os.path.join(self.dir, 'missing')}: not a folder"])


# Texts of rates and durations with the value common/Units.cpp gives them (None: refused).
RATE_CASES = [
    ("1Gbps", 1e9), ("100 Mbps", 1e8), ("2.5Gb/s", 2.5e9), ("10 Gb/s", 1e10), ("1GBPS", 1e9),
    ("64Kbps", 64e3), ("64 kb/s", 64e3), ("1bps", 1.0), ("1b/s", 1.0), ("1Tbps", 1e12),
    ("1tb/s", 1e12), (" \t1Gbps\n", 1e9), ("1 G b p s", 1e9), ("1e3Mbps", 1e9), (".5Gbps", 5e8),
    ("5.Gbps", 5e9), ("+1Gbps", 1e9), ("0x1p3Gbps", 8e9), ("0x10Mbps", 16e6), ("1.5bps", 1.5),
    ("1Gbps\u0000 ignored", 1e9),
    ("fast", None), ("10", None), ("", None), ("Gbps", None), ("-1Gbps", None), ("0bps", None),
    ("0.5bps", None), ("1.0001Tbps", None), ("2Tbps", None), ("1e999Gbps", None),
    ("infGbps", None), ("nanGbps", None), ("1,5Gbps", None), ("1_0Gbps", None), ("1eGbps", None),
    ("0xGbps", None), ("1 Gbit/s", None), ("1Gbpss", None), ("1\u00a0Gbps", None),
    ("\u0661Gbps", None), ("1GiBps", None), ("1\u0000Gbps", None),
]
DURATION_CASES = [
    ("50us", 50e-6), ("2ms", 2e-3), ("0.1s", 0.1), ("7ns", 7e-9), ("0s", 0.0), ("-0s", 0.0),
    ("1e6s", 1e6), ("1000000000ms", 1e6), (" 3 MS ", 3e-3), ("1e-400s", 0.0), ("0x10ms", 16e-3),
    ("2 fortnights", None), ("5", None), ("-1us", None), ("1000001s", None), ("1e7s", None),
    ("inf s", None), ("1min", None), ("1 sec", None), ("", None),
]


class Units(unittest.TestCase):
    def test_rates(self):
        for text, bps in RATE_CASES:
            if bps is None:
                with self.assertRaises(ValueError, msg=repr(text)) as caught:
                    runs.parse_data_rate(text)
                self.assertIn("expected a data rate from 1bps to 1Tbps", str(caught.exception))
            else:
                self.assertEqual(runs.parse_data_rate(text), bps, repr(text))
        for value in (None, 5, ["1Gbps"]):
            self.assertRaises(ValueError, runs.parse_data_rate, value)

    def test_durations(self):
        for text, seconds in DURATION_CASES:
            if seconds is None:
                with self.assertRaises(ValueError, msg=repr(text)) as caught:
                    runs.parse_duration(text)
                self.assertIn("expected a duration up to 1000000s", str(caught.exception))
            else:
                self.assertTrue(math.isclose(runs.parse_duration(text), seconds, rel_tol=1e-15),
                                repr(text))


def python_value(parse, text):
    try:
        return parse(text)
    except ValueError:
        return None


class WithGradwire(TempDir):
    """Scenarios validated by the built gradwire (`gradwire validate --print`)."""

    BASE = {"gradwire": 1, "name": "runs-test", "model": {"kind": "mlp", "hidden": [4]},
            "dataset": {"kind": "synthetic", "train_samples": 256, "test_samples": 16},
            "training": {"workers": 3, "steps": 4, "batch": 4},
            "compute": {"mode": "fixed", "seconds": 0.001}}

    def setUp(self):
        if not GRADWIRE or not os.access(GRADWIRE, os.X_OK):
            self.skipTest(f"no gradwire binary to compare with (given: {GRADWIRE or 'none'})")
        super().setUp()

    def resolve(self, scenarios):
        """Per scenario: (gradwire's resolved scenario or None, its error output), each
        validated by a gradwire of its own, in parallel (each start takes most of a second)."""
        def one(i):
            path = os.path.join(self.dir, f"scenario-{i}.json")
            write_json(path, scenarios[i])
            done = subprocess.run([GRADWIRE, "validate", path, "--print"], capture_output=True,
                                  text=True, timeout=60)
            if done.returncode != 0:
                return None, done.stderr
            return json.loads(done.stdout), ""

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            return list(pool.map(one, range(len(scenarios))))


class BucketsAsGradwireDefaultsThem(WithGradwire):
    """A run's name leaves out the buckets gradwire takes by default: runs.default_buckets must
    be what gradwire resolves for a scenario that names none, on every scheme."""

    def test_default_buckets_per_scheme(self):
        topologies = [({"kind": "ring"}, None), ({"kind": "ps"}, None),
                      ({"kind": "ps", "mode": "async"}, None), ({"kind": "gossip"}, None),
                      ({"kind": "leader"}, None), ({"kind": "ring"}, [{"rank": 1, "leave_at": "1ms"}])]
        scenarios = [dict(self.BASE, topology=topology, **({"faults": faults} if faults else {}))
                     for topology, faults in topologies]
        for (topology, faults), (resolved, error) in zip(topologies, self.resolve(scenarios)):
            self.assertIsNotNone(resolved, error)
            self.assertEqual(runs.buckets(resolved), runs.default_buckets(resolved), (topology, faults))
            self.assertEqual(runs.buckets_label(resolved), "", (topology, faults))
        self.assertEqual(runs.buckets(resolved), "none")  # the ring with faults has none


class UnitsAsTheCppSideParsesThem(WithGradwire):
    """The cases validated by the built gradwire: it must accept the texts Python accepts,
    resolving them to the same values, and refuse each text Python refuses, naming its key.

    A hybrid network of Ethernet groups carries the cases: each group's `rate` is read with
    parse_data_rate and its `backhaul_delay` with parse_duration, both over their whole range,
    so every accepted text fits in one scenario. Each refused text gets a scenario of its own."""

    def hybrid(self, groups):
        return dict(self.BASE, training=dict(self.BASE["training"], workers=len(groups)),
                    network={"family": "hybrid", "groups": groups})

    @staticmethod
    def group(**keys):
        return dict({"family": "ethernet", "workers": 1}, **keys)

    def test_accepted_texts_resolve_to_the_same_values(self):
        rates = [(t, python_value(runs.parse_data_rate, t)) for t, _ in RATE_CASES]
        rates = [(t, v) for t, v in rates if v is not None]
        durations = [(t, python_value(runs.parse_duration, t)) for t, _ in DURATION_CASES]
        durations = [(t, v) for t, v in durations if v is not None]
        groups = [self.group() for _ in range(max(len(rates), len(durations)))]
        for g, (text, _) in zip(groups, rates):
            g["rate"] = text
        for g, (text, _) in zip(groups, durations):
            g["backhaul_delay"] = text
        [(scenario, error)] = self.resolve([self.hybrid(groups)])
        self.assertIsNotNone(scenario, "gradwire refuses a text Python accepts: " + error)
        resolved = scenario["network"]["groups"]
        for (text, bps), g in zip(rates, resolved):
            # gradwire writes a rate back in whole bits per second (llround).
            self.assertEqual(runs.parse_data_rate(g["rate"]), math.floor(bps + 0.5), (text, g["rate"]))
        for (text, seconds), g in zip(durations, resolved):
            # and a duration with 12 significant digits.
            self.assertTrue(math.isclose(runs.parse_duration(g["backhaul_delay"]), seconds,
                                         rel_tol=1e-11), (text, g["backhaul_delay"], seconds))

    def test_refused_texts_are_refused(self):
        cases = [("rate", t, "expected a data rate") for t, _ in RATE_CASES
                 if python_value(runs.parse_data_rate, t) is None]
        cases += [("backhaul_delay", t, "expected a duration") for t, _ in DURATION_CASES
                  if python_value(runs.parse_duration, t) is None]
        results = self.resolve([self.hybrid([self.group(**{key: text}), self.group()])
                                for key, text, _ in cases])
        for (key, text, said), (scenario, error) in zip(cases, results):
            self.assertTrue(scenario is None, f"{text!r}: gradwire accepts it as "
                            f"{scenario and scenario['network']['groups'][0][key]}")
            self.assertIn(f"network.groups[0].{key}: {said}", error, text)


class NetworkLabelsAsGradwireMakesThem(WithGradwire):
    """gradwire names run folders by the network's label (sim/study/NetworkLabel.cpp) and the
    report labels the same networks (runs.label_of_network): for each network, the label
    `gradwire validate` prints must equal the one made here from the object gradwire resolves."""

    NETWORKS = [
        ({"family": "ethernet"}, 3, "Ethernet 1 Gbit/s"),
        ({"family": "ethernet", "rate": "2500Mbps"}, 3, "Ethernet 2.5 Gbit/s"),
        ({"family": "wifi", "placement": {"kind": "disc", "radius_m": 15}}, 8,
         "802.11ax 80 MHz, 8 stations within 15 m"),
        ({"family": "wifi", "standard": "n", "band": "2.4GHz", "spatial_streams": 2,
          "rate_control": "constant", "mcs": 5, "placement": {"kind": "grid", "spacing_m": 1.5}},
         2, "802.11n 2.4 GHz 20 MHz 2x2 MCS 5, 2 stations on a 1.5 m grid"),
        ({"family": "wifi", "standard": "ac", "width_mhz": 160}, 1, None),
        ({"family": "lte", "placement": {"kind": "distances", "distances_m": [80, 150, 250, 400]}},
         4, "LTE 20 MHz, 4 UEs at 80-400 m"),
        ({"family": "lte", "ul_bandwidth": 50, "dl_bandwidth": 75, "enbs": 2}, 2, None),
        ({"family": "lte", "ul_bandwidth": 15, "dl_bandwidth": 15}, 1, None),
        ({"family": "hybrid", "groups": [{"family": "wifi", "workers": 2},
                                         {"family": "lte", "workers": 2},
                                         {"family": "ethernet", "workers": 2}]},
         6, "hybrid: 2 Wi-Fi + 2 LTE + 2 Ethernet"),
        ({"family": "wifi", "label": "home Wi-Fi (2 rooms)"}, 2, "home Wi-Fi (2 rooms)"),
    ]

    def test_python_labels_equal_gradwires(self):
        scenarios = [dict(self.BASE, training=dict(self.BASE["training"], workers=workers),
                          topology={"kind": "ps"}, network=network)
                     for network, workers, _ in self.NETWORKS]
        resolved = self.resolve(scenarios)

        def printed(i):
            path = os.path.join(self.dir, f"label-{i}.json")
            write_json(path, scenarios[i])
            done = subprocess.run([GRADWIRE, "validate", path], capture_output=True, text=True,
                                  timeout=60)
            # "FILE: ok (3 workers, 4 steps, codec none, ps) on LABEL"
            return done.stdout.rstrip("\n").partition(") on ")[2], done.stderr

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            labels = list(pool.map(printed, range(len(scenarios))))
        for (network, workers, expected), (scenario, error), (label, label_error) in zip(
                self.NETWORKS, resolved, labels):
            self.assertIsNotNone(scenario, error)
            self.assertTrue(label, label_error)
            self.assertEqual(runs.label_of_network(scenario["network"], workers), label, network)
            if expected:
                self.assertEqual(label, expected, network)


if __name__ == "__main__":
    result = unittest.main(argv=sys.argv[:1], exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped:
        for test, reason in result.skipped:
            print(f"skipped: {test.id()}: {reason}", file=sys.stderr)
        sys.exit(77)
