#!/usr/bin/env python3
"""The short answer to gradwire's question, from run folders: on each network, which method
reached the accuracy target first, how much sooner than dense SGD, and at what accuracy cost.

Usage: analysis/answer.py DIR [DIR ...]   (run folders, sweep folders, or folders of them)
Standard library only. Dense is codec "none"; runs are compared within one network (family
and rate) and worker count. Methods and networks are named as the report names them
(analysis/runs.py). `gradwire report` draws the full picture.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as run_folders  # noqa: E402  (analysis/runs.py: finding, loading and naming runs)
from runs import method_label, network_label  # noqa: E402


def target_text(run):
    training = run.training
    if training.get("target_perplexity"):
        return f"perplexity {training['target_perplexity']:g}"
    return f"{100 * (training.get('target_accuracy') or 0):g}% accuracy"


def times(a, b):
    """a / b as '2.50x', '-' when b is 0 (a target reached at the very start)."""
    return f"{a / b:.2f}x" if b else "-"


def points(a, b):
    return f"{100 * (a - b):+.1f} points"


def answer_group(runs):
    """Lines answering one network and worker count."""
    ttt = lambda r: r.time_to_target_s
    acc = lambda r: r.summary.get("final_accuracy")
    reached = sorted((r for r in runs if ttt(r) is not None), key=ttt)
    dense = next((r for r in runs if r.codec_kind == "none"), None)
    head = f"{network_label(runs[0])}, {runs[0].workers} workers"
    if not reached:
        return [f"{head}: no run reached {target_text(runs[0])}; run longer "
                "(training.steps) or lower the target."]
    best = reached[0]
    line = (f"{head}: {method_label(best)} reached {target_text(best)} first, "
            f"at {ttt(best):.3g} s simulated")
    if dense is None:
        return [line + " (no dense run to compare with)."]
    if best is dense:
        others = [f"{method_label(r)} {times(ttt(r), ttt(dense))} its time" for r in reached[1:]]
        missed = [method_label(r) for r in runs if ttt(r) is None]
        tail = "; ".join(others + ([f"{', '.join(missed)} never reached it"] if missed else []))
        return [line + f": no codec beat dense here ({tail})." if tail else line + "."]
    if ttt(dense) is None:
        line += f"; dense SGD did not reach it in {dense.summary.get('steps', '?')} steps"
    else:
        line += f", {times(ttt(dense), ttt(best))} sooner than dense SGD ({ttt(dense):.3g} s)"
    if acc(best) is not None and acc(dense) is not None:
        line += (f"; final accuracy {100 * acc(best):.1f}% against dense's "
                 f"{100 * acc(dense):.1f}% ({points(acc(best), acc(dense))})")
    return [line + "."]


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        run_dirs, _, skipped = run_folders.find_all(argv[1:])
    except run_folders.RunError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # A run folder that cannot be read is left out and listed, as the report does.
    runs = []
    for d in run_dirs:
        try:
            runs.append(run_folders.load(d))
        except run_folders.RunError as e:
            skipped.append((d, str(e)))
    for _, why in skipped:
        print(f"skipped: {why}", file=sys.stderr)
    if not runs:
        print(f"error: no run folders (with summary.json and scenario.json) under "
              f"{' '.join(argv[1:])}" + (" that could be read (skipped above)" if skipped else ""),
              file=sys.stderr)
        return 2
    groups = {}
    for r in runs:
        key = (network_label(r), r.workers)
        groups.setdefault(key, []).append(r)
    for key in groups:
        for line in answer_group(groups[key]):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
