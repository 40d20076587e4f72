"""A sweep's question, answered from its runs: "does CANDIDATE reach the target before BASELINE?"

A sweep file may carry a "question" (docs/scenarios.md, "Sweeps"); `gradwire sweep` writes it
to the sweep folder as question.json. Its selectors pick runs by scenario keys, for example
{"codec.kind": "dgc", "network.rate": "1Gbps"}, and "per" names the keys that split the answer
(one verdict per worker count, say). Within each split, the candidate's and the baseline's runs
are averaged over their seeds; the verdict compares times to target and also reports the
per-step throughput (samples per simulated second), the way compression papers frame speed.

Runs are analysis/runs.py's Run objects. Standard library only: report.py renders the answer,
and this module can be used on its own.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as run_folders  # noqa: E402  (analysis/runs.py: every file is read and checked there)

QUESTION_FILE = "question.json"


def load_questions(sweep_dirs):
    """The questions of the sweep folders that have one: [(sweep folder, question)]; RunError
    naming the file when one is not a question."""
    found = []
    for d in sweep_dirs:
        path = os.path.join(d, QUESTION_FILE)
        if os.path.lexists(path):
            found.append((d, run_folders.read_question(path)))
    return found


def scenario_value(scenario, path):
    """The value at a dotted path of a scenario ("codec.kind"), or KeyError."""
    value = scenario
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(path)
        value = value[part]
    return value


def matches(scenario, selector):
    for path, wanted in selector.items():
        try:
            if scenario_value(scenario, path) != wanted:
                return False
        except KeyError:
            return False
    return True


def mean_sd(values):
    """(mean, sample standard deviation or None, count) of the values that are not None."""
    present = [v for v in values if v is not None]
    if not present:
        return None, None, 0
    mean = sum(present) / len(present)
    sd = statistics.stdev(present) if len(present) > 1 else None
    return mean, sd, len(present)


def throughput(run):
    """Samples per simulated second of the whole job: workers x batch / mean step time."""
    step = run.step_time_s
    training = run.training
    if not step or "workers" not in training or "batch" not in training:
        return None
    return training["workers"] * training["batch"] / step


def describe_side(runs):
    ttt = mean_sd([r.time_to_target_s for r in runs])
    return {"runs": [r.name for r in runs], "time_to_target_s": ttt[0],
            "time_to_target_sd": ttt[1], "reached": ttt[2],
            "throughput": mean_sd([throughput(r) for r in runs])[0],
            "final_accuracy": mean_sd([r.summary.get("final_accuracy") for r in runs])[0]}


def verdict(candidate, baseline):
    """'yes', 'no' or 'undecided', and why, from the two sides' seed means."""
    c, b = candidate["time_to_target_s"], baseline["time_to_target_s"]
    if c is not None and b is not None:
        return ("yes" if c < b else "no"), ("%.4g s against %.4g s" % (c, b))
    if c is not None:
        return "yes", "the baseline never reached the target"
    if b is not None:
        return "no", "the candidate never reached the target"
    return "undecided", "neither reached the target; run longer or lower the target"


def answer(question, runs):
    """One row per value of the question's "per" keys present in both sides' runs:
    {"per": {key: value}, "candidate": side, "baseline": side, "verdict", "why",
    "speedup" (baseline time to target / candidate's), "throughput_ratio"}."""
    per = question.get("per", [])
    cand = [r for r in runs if matches(r.scenario, question["candidate"])]
    base = [r for r in runs if matches(r.scenario, question["baseline"])]

    def split_key(run):
        values = []
        for path in per:
            try:
                values.append(json.dumps(scenario_value(run.scenario, path), sort_keys=True))
            except KeyError:
                values.append("null")
        return tuple(values)

    def order(key):
        # Numbers in numeric order (4, 8, 16 workers), anything else by its text.
        out = []
        for v in key:
            x = json.loads(v)
            numeric = isinstance(x, (int, float)) and not isinstance(x, bool)
            out.append((0, x, "") if numeric else (1, 0, v))
        return out

    keys = sorted({split_key(r) for r in cand} & {split_key(r) for r in base}, key=order)
    rows = []
    for key in keys:
        c = describe_side([r for r in cand if split_key(r) == key])
        b = describe_side([r for r in base if split_key(r) == key])
        word, why = verdict(c, b)
        speedup = (b["time_to_target_s"] / c["time_to_target_s"]
                   if c["time_to_target_s"] and b["time_to_target_s"] else None)
        tput = c["throughput"] / b["throughput"] if c["throughput"] and b["throughput"] else None
        rows.append({"per": {p: json.loads(v) for p, v in zip(per, key)}, "candidate": c,
                     "baseline": b, "verdict": word, "why": why, "speedup": speedup,
                     "throughput_ratio": tput})
    return rows


def unanswered_reason(question, runs):
    """Why no row could be formed, for the report (None when rows exist)."""
    cand = [r for r in runs if matches(r.scenario, question["candidate"])]
    base = [r for r in runs if matches(r.scenario, question["baseline"])]
    if not cand:
        return "no finished run matches the candidate " + json.dumps(question["candidate"])
    if not base:
        return "no finished run matches the baseline " + json.dumps(question["baseline"])
    return ("the candidate's and the baseline's runs share no value of " +
            ", ".join(question.get("per", [])))
