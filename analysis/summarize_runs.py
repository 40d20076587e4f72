#!/usr/bin/env python3
"""Tabulate gradwire run folders (runs/<name>/summary.json + scenario.json) as Markdown or CSV.

Usage: analysis/summarize_runs.py [--csv] RUN_DIR [RUN_DIR ...]
Standard library only, so it works with any python3. Plotted reports come with the `report`
command; this is the quick comparison table.
"""
import argparse
import csv
import json
import os
import sys

COLUMNS = [
    ("run", lambda s, c: s["name"]),
    ("codec", lambda s, c: s["codec"]),
    ("topology", lambda s, c: s["topology"]),
    ("rate", lambda s, c: c["network"].get("rate", "")),
    ("workers", lambda s, c: s["workers"]),
    ("final_accuracy", lambda s, c: s["final_accuracy"]),
    ("time_to_target_s", lambda s, c: s["time_to_target_s"]),
    ("sim_time_s", lambda s, c: s["sim_time_s"]),
    ("step_compute_ms", lambda s, c: 1e3 * s["mean_step_compute_s"]),
    ("step_comm_ms", lambda s, c: 1e3 * s["mean_step_comm_s"]),
    ("bytes_on_wire", lambda s, c: s["bytes_on_wire"]),
    ("compression_ratio", lambda s, c: s["compression_ratio"]),
    ("wall_time_s", lambda s, c: s["wall_time_s"]),
    ("ns3_wall_time_s", lambda s, c: s["ns3_wall_time_s"]),
]


def load(run_dir):
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(run_dir, "scenario.json")) as f:
        scenario = json.load(f)
    return [get(summary, scenario) for _, get in COLUMNS]


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", action="store_true", help="CSV instead of a Markdown table")
    parser.add_argument("runs", nargs="+", help="run folders holding summary.json")
    args = parser.parse_args(argv)
    rows = []
    for run in args.runs:
        try:
            rows.append(load(run))
        except (OSError, KeyError, json.JSONDecodeError) as e:
            print(f"error: {run}: not a complete gradwire run ({e})", file=sys.stderr)
            return 2
    header = [name for name, _ in COLUMNS]
    if args.csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(header)
        writer.writerows(rows)
        return 0
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(fmt(v) for v in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
