#!/usr/bin/env python3
"""`gradwire report` and `gradwire advise` on corrupt and incomplete inputs: never a traceback.

Each case spoils one file of a small hand-made folder (empty, truncated, JSON of the wrong type,
NaN, binary garbage, a folder where a file belongs, ...) and runs analysis/report.py or
analysis/advise.py on it. A run folder that cannot be read is skipped: exit 0, the folder and
the reason (naming the file) on stderr and in the report's "skipped" table, the other runs
reported. A file that describes a whole sweep (results.csv, question.json, advise's plan.json)
that cannot be read is exit 2 with one line naming the file and what was expected. Any
exception that escapes the script fails the case with its traceback.

Run by ctest (`report_corrupt_test`) or directly with /usr/bin/python3. Exit 77 (ctest:
skipped) when matplotlib is missing.
"""
import contextlib
import importlib.util
import io
import itertools
import json
import os
import shutil
import sys
import tempfile
import traceback
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skipped: no matplotlib for this Python", file=sys.stderr)
    sys.exit(77)


def module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(SOURCE, "analysis", name + ".py"))
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


report = module("report")
advise = module("advise")
answer = module("answer")
summarize_runs = module("summarize_runs")

BINARY = bytes(range(255, -1, -1)) * 4  # not UTF-8 from its first byte


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


def write_json(path, doc):
    write(path, json.dumps(doc))


def scenario(name, codec="none", accuracy=0.5):
    return {"name": name, "seed": 1, "model": {"kind": "mlp"}, "dataset": {"kind": "synthetic"},
            "training": {"workers": 2, "steps": 4, "batch": 8, "eval_every": 2,
                         "target_accuracy": accuracy, "buckets": "none"},
            "compute": {"mode": "fixed", "seconds": 0.01, "codec_time": "free"},
            "network": {"family": "ethernet", "rate": "1Gbps"}, "topology": {"kind": "ring"},
            "codec": {"kind": codec}}


def summary(name, codec="none"):
    return {"name": name, "steps": 4, "workers": 2, "codec": codec, "topology": "ring",
            "network": "ethernet", "final_accuracy": 0.6, "time_to_target_s": 0.1,
            "sim_time_s": 0.2, "mean_step_compute_s": 0.01, "mean_step_comm_s": 0.04,
            "bytes_on_wire": 1000, "payload_bytes": 800, "compression_ratio": 1.0,
            "wall_time_s": 1.0, "ns3_wall_time_s": 0.1}


def metrics(accuracy=lambda step: 0.3 * step, steps=4, every=2, pace=0.05):
    lines = []
    for step in range(1, steps + 1):
        lines.append({"type": "step", "step": step, "sim_time_s": pace * step, "wall_time_s": 0.1 * step})
        if step % every == 0:
            lines.append({"type": "eval", "step": step, "sim_time_s": pace * step,
                          "accuracy": accuracy(step)})
    return "".join(json.dumps(rec) + "\n" for rec in lines)


def write_run(parent, name, codec="none", plain=False):
    """A run folder. plain: without evaluations, a time to target or step times, so the report
    has no figure to draw (matplotlib takes most of a report's time)."""
    path = os.path.join(parent, name)
    write_json(os.path.join(path, "scenario.json"), scenario(name, codec))
    doc = summary(name, codec)
    if plain:
        doc.update(final_accuracy=None, time_to_target_s=None)
        del doc["mean_step_compute_s"], doc["mean_step_comm_s"]
    write_json(os.path.join(path, "summary.json"), doc)
    write(os.path.join(path, "metrics.jsonl"), metrics(every=1000 if plain else 2))
    return path


def spoil(path, content):
    """Replaces a file with content: bytes or text, None to remove it, a dict to make it a
    folder."""
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)
    if content is None:
        return
    if isinstance(content, dict):
        os.makedirs(os.path.join(path, "inside"))
        return
    write(path, content)


NUMBERS = itertools.count(1)  # case and report folders, each used once
FOLDER = {}  # spoil(): a folder where the file belongs

# (file of the bad run, content, what the reason says). Every case is skipped and listed.
RUN_CASES = [
    ("summary.json", "", "not JSON"),
    ("summary.json", '{"final_accuracy": 0.6, "sim_ti', "not JSON"),
    ("summary.json", "[1, 2]", "expected a JSON object"),
    ("summary.json", '"done"', "expected a JSON object"),
    ("summary.json", '{"final_accuracy": "high", "sim_time_s": 1}', "final_accuracy: expected a number"),
    ("summary.json", '{"final_accuracy": 0.6, "sim_time_s": 1, "time_to_target_s": "1s"}',
     "time_to_target_s: expected a number"),
    ("summary.json", '{"sim_time_s": 1}', "final_accuracy: expected a number"),
    ("summary.json", '{"final_accuracy": 0.6}', "sim_time_s: expected a number"),
    ("summary.json", '{"final_accuracy": NaN, "sim_time_s": 1}', "NaN is not a JSON number"),
    ("summary.json", '{"final_accuracy": 0.6, "sim_time_s": Infinity}', "Infinity is not a JSON number"),
    ("summary.json", '{"final_accuracy": 0.6, "sim_time_s": 1e999}', "sim_time_s: expected a number"),
    ("summary.json", '{"final_accuracy": 0.6, "sim_time_s": 1, "mean_step_comm_s": -1}',
     "mean_step_comm_s: expected a number from 0"),
    ("summary.json", '{"final_accuracy": 0.6, "sim_time_s": 1, "steps": 2.5}', "steps: expected an integer"),
    ("summary.json", "[" * 100000, "nested too deeply"),
    ("summary.json", BINARY, "not UTF-8 text"),
    ("summary.json", FOLDER, "expected a file, found a folder"),
    ("summary.json", None, "not a finished run (no summary.json)"),
    ("scenario.json", "", "not JSON"),
    ("scenario.json", '{"training": {"workers": 2', "not JSON"),
    ("scenario.json", "[]", "expected a JSON object"),
    ("scenario.json", '{"training": {"workers": "two"}}', "training.workers: expected an integer"),
    ("scenario.json", '{"training": 3}', "training: expected a JSON object"),
    ("scenario.json", '{"codec": {"kind": "topk", "ratio": "1%"}}', "codec.ratio: expected a number"),
    ("scenario.json", '{"compute": "fixed"}', "compute: expected a JSON object"),
    ("scenario.json", '{"compute": {"codec_time": 5}}', "compute.codec_time: expected a string"),
    ("scenario.json", '{"network": {"family": "ethernet", "rate": 1000}}', "network.rate: expected a data rate"),
    ("scenario.json", '{"training": {"buckets": 25}}', "training.buckets: expected"),
    ("scenario.json", BINARY, "not UTF-8 text"),
    ("scenario.json", FOLDER, "expected a file, found a folder"),
    ("scenario.json", None, "not a finished run (no scenario.json)"),
    ("metrics.jsonl", metrics() + "garbage\n", "line 7 is not JSON"),
    ("metrics.jsonl", "[1, 2]\n" + metrics(), "line 1: expected a JSON object"),
    ("metrics.jsonl", '"step"\n', "line 1: expected a JSON object"),
    ("metrics.jsonl", '{"type": "step", "step": "one", "sim_time_s": 0.1}\n', "line 1: step: expected an integer"),
    ("metrics.jsonl", '{"type": "step", "step": 1}\n', "line 1: sim_time_s: expected a number"),
    ("metrics.jsonl", '{"type": "eval", "step": 2, "sim_time_s": 0.1, "accuracy": NaN}\n',
     "line 1 is not JSON (NaN is not a JSON number"),
    ("metrics.jsonl", '{"type": "eval", "step": 2, "sim_time_s": 0.1, "accuracy": "90%"}\n',
     "line 1: accuracy: expected a number"),
    ("metrics.jsonl", metrics() + '{"type": "step", "step": 5, "sim', "line 7 is not JSON"),
    ("metrics.jsonl", BINARY, "not UTF-8 text"),
    ("metrics.jsonl", FOLDER, "expected a file, found a folder"),
]

# (file of the sweep folder, content, what the message says). Every case is exit 2.
SWEEP_CASES = [
    ("results.csv", "", "line 1: expected the header run,status"),
    ("results.csv", "name,state\ngood,ok\n", "line 1: expected the header run,status"),
    ("results.csv", "run,status,final_accuracy\ngood,ok,0.6\nbad,ok\n", "line 3: expected 3 fields"),
    ("results.csv", BINARY, "not UTF-8 text"),
    ("results.csv", b"run,status\ngood,o\x00k\n", "NUL"),
    ("results.csv", FOLDER, "expected a file, found a folder"),
    ("question.json", "", "not JSON"),
    ("question.json", '{"text": "Does topk win?", "candid', "not JSON"),
    ("question.json", '["Does topk win?"]', "expected a JSON object"),
    ("question.json", '{"text": "Does topk win?", "baseline": {}}', "candidate: expected a JSON object"),
    ("question.json", '{"text": "Does topk win?", "candidate": "topk", "baseline": {}}',
     "candidate: expected a JSON object"),
    ("question.json", '{"text": 5, "candidate": {}, "baseline": {}}', "text: expected a string"),
    ("question.json", '{"text": "?", "candidate": {}, "baseline": {}, "per": [1]}', "per: expected"),
    ("question.json", BINARY, "not UTF-8 text"),
    ("question.json", FOLDER, "expected a file, found a folder"),
]

# (content of plan.json, what the message says). Every case is exit 2.
PLAN_CASES = [
    ("", "not JSON"),
    ('{"name": "x", "scr', "not JSON"),
    ("[]", "expected a JSON object"),
    ('{"name": "x"}', "screening: expected a string"),
    (BINARY, "not UTF-8 text"),
    (FOLDER, "expected a file, found a folder"),
]


class Case(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gradwire-report-corrupt-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def folder(self):
        self.number = next(NUMBERS)
        return os.path.join(self.tmp, f"case{self.number}")

    def call(self, main, argv):
        """(exit code, stdout, stderr) of a script's main; a test failure, with the traceback,
        when an exception escapes it."""
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else 1
        except Exception:
            self.fail(f"{argv}: an exception escaped:\n{traceback.format_exc()}")
        self.assertNotIn("Traceback", out.getvalue() + err.getvalue(), argv)
        return code, out.getvalue(), err.getvalue()

    def report_on(self, *dirs):
        out = os.path.join(self.tmp, f"report{next(NUMBERS)}")
        code, stdout, stderr = self.call(report.main, ["--out", out, *dirs])
        page = ""
        if os.path.exists(os.path.join(out, "report.html")):
            with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
                page = f.read()
        return code, stderr, page


class ReportSkipsUnreadableRuns(Case):
    def test_each_corrupt_run_is_skipped_and_listed(self):
        for file, content, said in RUN_CASES:
            with self.subTest(file=file, content=repr(content)[:60]):
                parent = self.folder()
                write_run(parent, "good", plain=True)
                bad = write_run(parent, "bad", codec="topk")
                spoil(os.path.join(bad, file), content)
                code, stderr, page = self.report_on(parent)
                self.assertEqual(code, 0, stderr)
                skipped = [line for line in stderr.splitlines() if line.startswith("skipped: ")]
                self.assertEqual(len(skipped), 1, stderr)
                named = bad if "no " + file in said else os.path.join(bad, file)
                self.assertIn(f"skipped: {named}", skipped[0])
                self.assertIn(said, skipped[0])
                # On the page: the folder and the reason in the skipped table, the good run in
                # the tables and the bad one in none.
                self.assertIn("<table class=\"skipped\">", page)
                self.assertIn(bad, page)
                self.assertIn("<td>good</td>", page)
                self.assertNotIn("<td>bad</td>", page)

    def test_the_answer_skips_and_the_summary_table_refuses_them(self):
        # answer.py and summarize_runs.py read scenario.json and summary.json, not metrics.jsonl.
        for file, content, said in RUN_CASES:
            if file == "metrics.jsonl" or "network.rate" in said:
                continue
            with self.subTest(file=file, content=repr(content)[:60]):
                parent = self.folder()
                write_run(parent, "good")
                bad = write_run(parent, "bad", codec="topk")
                spoil(os.path.join(bad, file), content)
                named = bad if "no " + file in said else os.path.join(bad, file)
                code, stdout, stderr = self.call(answer.main, ["answer.py", parent])
                self.assertEqual(code, 0, stderr)
                lines = stderr.splitlines()
                self.assertEqual(len(lines), 1, stderr)
                self.assertTrue(lines[0].startswith(f"skipped: {named}"), stderr)
                self.assertIn(said, lines[0])
                self.assertIn("Ethernet 1 Gbit/s, 2 workers: dense SGD, no buckets reached", stdout)
                # The summary table is made of the folders named: one that is not a run is exit 2.
                code, _, stderr = self.call(summarize_runs.main, [bad])
                self.assertEqual(code, 2, stderr)
                self.assertEqual(len(stderr.splitlines()), 1, stderr)
                self.assertTrue(stderr.startswith(f"error: {named}"), stderr)

    def test_blank_lines_in_metrics_are_ignored(self):
        parent = self.folder()
        run = write_run(parent, "good")
        write(os.path.join(run, "metrics.jsonl"), "\n" + metrics().replace("\n", "\n\n  \n") + "\r\n")
        code, stderr, page = self.report_on(parent)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(stderr, "")
        self.assertNotIn("Skipped run folders", page)
        self.assertIn("accuracy_vs_time", page)  # its evaluations were read

    def test_no_readable_run_is_exit_2_with_the_reasons(self):
        parent = self.folder()
        bad = write_run(parent, "bad")
        spoil(os.path.join(bad, "summary.json"), "[")
        code, stderr, _ = self.report_on(parent)
        self.assertEqual(code, 2)
        self.assertIn(f"skipped: {os.path.join(bad, 'summary.json')}: not JSON", stderr)
        self.assertIn("error: no run folders", stderr)

    def test_an_empty_folder_is_exit_2(self):
        empty = self.folder()
        os.makedirs(empty)
        code, stderr, _ = self.report_on(empty)
        self.assertEqual(code, 2)
        self.assertEqual(stderr.splitlines(),
                         [f"error: no run folders (with summary.json and scenario.json) under {empty}"])

    def test_a_missing_folder_is_exit_2(self):
        missing = os.path.join(self.tmp, "missing")
        code, stderr, _ = self.report_on(missing)
        self.assertEqual(code, 2)
        self.assertEqual(stderr.splitlines(), [f"error: {missing}: not a folder"])


class ReportRefusesUnreadableSweepFiles(Case):
    def test_each_corrupt_sweep_file_is_exit_2_naming_it(self):
        for file, content, said in SWEEP_CASES:
            with self.subTest(file=file, content=repr(content)[:60]):
                sweep = self.folder()
                write_run(sweep, "good", plain=True)
                write(os.path.join(sweep, "results.csv"), "run,status\ngood,ok\n")
                spoil(os.path.join(sweep, file), content)
                code, stderr, page = self.report_on(sweep)
                self.assertEqual(code, 2, stderr)
                lines = stderr.splitlines()
                self.assertEqual(len(lines), 1, stderr)
                self.assertTrue(lines[0].startswith(f"error: {os.path.join(sweep, file)}: "), lines[0])
                self.assertIn(said, lines[0])
                self.assertEqual(page, "")

    def test_an_empty_sweep_folder_is_exit_2(self):
        sweep = self.folder()
        write(os.path.join(sweep, "results.csv"), "run,status\n")
        code, stderr, _ = self.report_on(sweep)
        self.assertEqual(code, 2)
        self.assertIn(f"error: no run folders (with summary.json and scenario.json) under {sweep}", stderr)


class AdviseOnCorruptInput(Case):
    STEPS, EVERY = 40, 10

    def screening(self, bad=None):
        """An advise folder: plan.json and a screening of dense and topk (and a third, `bad`:
        (file, content) spoilt)."""
        folder = self.folder()
        screening = os.path.join(folder, "screening")
        names = ["dense", "topk"] + (["bad"] if bad else [])
        for name in names:
            path = os.path.join(screening, name)
            doc = scenario(name, "none" if name == "dense" else "topk", accuracy=0.9)
            write_json(os.path.join(path, "scenario.json"), doc)
            write_json(os.path.join(path, "summary.json"), summary(name))
            write(os.path.join(path, "metrics.jsonl"),
                  metrics(lambda s: 1 - 0.5 * s ** -0.5, steps=self.STEPS, every=self.EVERY))
        if bad:
            spoil(os.path.join(screening, "bad", bad[0]), bad[1])
        plan = {"name": "x", "full_steps": 400, "eval_every": self.EVERY,
                "screening_steps": self.STEPS, "screening_eval_every": self.EVERY,
                "screening": screening, "budget_s": 60, "fixed_compute_s": None,
                "candidates": [{"run": n, "family": n, "label": n, "codec": {"kind": "none" if n == "dense" else "topk"},
                                "settled_after": 0} for n in names]}
        write_json(os.path.join(folder, "plan.json"), plan)
        return folder

    def test_a_corrupt_screening_run_is_ranked_failed_with_its_reason(self):
        for file, content, said in RUN_CASES:
            if content is None or "network.rate" in said:
                # No finished run there: ranked failed, as before. The rate: advise has no use
                # for it, and the report checks it.
                continue
            with self.subTest(file=file, content=repr(content)[:60]):
                folder = self.screening(bad=(file, content))
                code, _, stderr = self.call(advise.main, ["--plan", os.path.join(folder, "plan.json")])
                self.assertEqual(code, 0, stderr)
                self.assertIn(f"skipped: {os.path.join(folder, 'screening', 'bad', file)}", stderr)
                self.assertIn(said, stderr)
                with open(os.path.join(folder, "advice.json")) as f:
                    ranking = {e["run"]: e for e in json.load(f)["ranking"]}
                self.assertEqual(ranking["bad"]["how"], "failed")
                self.assertIn(said, ranking["bad"]["reason"])
                self.assertNotEqual(ranking["dense"]["how"], "failed")

    def test_a_corrupt_plan_is_exit_2_naming_it(self):
        for content, said in PLAN_CASES:
            with self.subTest(content=repr(content)[:60]):
                folder = self.screening()
                plan = os.path.join(folder, "plan.json")
                spoil(plan, content)
                code, _, stderr = self.call(advise.main, ["--plan", plan])
                self.assertEqual(code, 2, stderr)
                self.assertEqual(len(stderr.splitlines()), 1, stderr)
                self.assertTrue(stderr.startswith(f"error: {plan}: "), stderr)
                self.assertIn(said, stderr)
                self.assertFalse(os.path.exists(os.path.join(folder, "advice.json")))

    def test_no_readable_screening_run_is_exit_2(self):
        folder = self.screening()
        for name in ("dense", "topk"):
            spoil(os.path.join(folder, "screening", name, "scenario.json"), "{")
        code, _, stderr = self.call(advise.main, ["--plan", os.path.join(folder, "plan.json")])
        self.assertEqual(code, 2)
        self.assertIn("error: no screened codec left a finished run", stderr)
        self.assertIn(os.path.join(folder, "screening", "dense", "scenario.json") + ": not JSON", stderr)


if __name__ == "__main__":
    unittest.main()
