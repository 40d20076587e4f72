#!/usr/bin/env python3
"""The short answer to gradwire's question, from run folders: on each network, which method
reached the accuracy target first, how much sooner than dense SGD, and at what accuracy cost.

Usage: analysis/answer.py DIR [DIR ...]   (run folders, sweep folders, or folders of them)
Standard library only. Dense is codec "none"; runs are compared within one network (family
and rate) and worker count. `gradwire report` draws the full picture.
"""
import json
import os
import sys


def find_runs(paths):
    runs = []
    for path in paths:
        for root, dirs, files in os.walk(path):
            dirs.sort()
            if "summary.json" in files and "scenario.json" in files:
                runs.append(root)
                dirs[:] = []
    return runs


def load(path):
    with open(os.path.join(path, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(path, "scenario.json")) as f:
        scenario = json.load(f)
    return {"name": os.path.basename(path), "summary": summary, "scenario": scenario}


def method(run):
    codec = run["scenario"].get("codec", {})
    kind = codec.get("kind", "?")
    if kind == "none":
        return "dense SGD"
    details = []
    for key in ("ratio", "density"):
        if key in codec:
            details.append(f"{100 * codec[key]:g}%")
    for key in ("rank", "bits", "levels"):
        if key in codec:
            details.append(f"{key} {codec[key]}")
    if codec.get("error_feedback"):
        details.append("error feedback")
    return kind + (f" ({', '.join(details)})" if details else "")


def network(run):
    net = run["scenario"].get("network", {})
    return f"{net.get('rate', '?')} {net.get('family', '')}".strip()


def target_text(run):
    training = run["scenario"].get("training", {})
    if training.get("target_perplexity"):
        return f"perplexity {training['target_perplexity']:g}"
    return f"{100 * training.get('target_accuracy', 0):g}% accuracy"


def points(a, b):
    return f"{100 * (a - b):+.1f} points"


def answer_group(runs):
    """Lines answering one network and worker count."""
    ttt = lambda r: r["summary"].get("time_to_target_s")
    acc = lambda r: r["summary"].get("final_accuracy")
    reached = sorted((r for r in runs if ttt(r) is not None), key=ttt)
    dense = next((r for r in runs if r["scenario"].get("codec", {}).get("kind") == "none"), None)
    head = f"{network(runs[0])}, {runs[0]['summary'].get('workers', '?')} workers"
    if not reached:
        return [f"{head}: no run reached {target_text(runs[0])}; run longer "
                "(training.steps) or lower the target."]
    best = reached[0]
    line = (f"{head}: {method(best)} reached {target_text(best)} first, "
            f"at {ttt(best):.3g} s simulated")
    if dense is None:
        return [line + " (no dense run to compare with)."]
    if best is dense:
        others = [f"{method(r)} {ttt(r) / ttt(dense):.2f}x its time" for r in reached[1:]]
        missed = [method(r) for r in runs if ttt(r) is None]
        tail = "; ".join(others + ([f"{', '.join(missed)} never reached it"] if missed else []))
        return [line + f": no codec beat dense here ({tail})." if tail else line + "."]
    if ttt(dense) is None:
        line += f"; dense SGD did not reach it in {dense['summary'].get('steps', '?')} steps"
    else:
        line += f", {ttt(dense) / ttt(best):.2f}x sooner than dense SGD ({ttt(dense):.3g} s)"
    if acc(best) is not None and acc(dense) is not None:
        line += (f"; final accuracy {100 * acc(best):.1f}% against dense's "
                 f"{100 * acc(dense):.1f}% ({points(acc(best), acc(dense))})")
    return [line + "."]


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = [load(p) for p in find_runs(argv[1:])]
    if not runs:
        print(f"error: no run folders (with summary.json) under {' '.join(argv[1:])}",
              file=sys.stderr)
        return 2
    groups = {}
    for r in runs:
        key = (network(r), r["summary"].get("workers"))
        groups.setdefault(key, []).append(r)
    for key in groups:
        for line in answer_group(groups[key]):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
