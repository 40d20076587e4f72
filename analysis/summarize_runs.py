#!/usr/bin/env python3
"""Tabulate gradwire run folders (runs/<name>/summary.json + scenario.json) as Markdown or CSV.

Usage: analysis/summarize_runs.py [--csv] RUN_DIR [RUN_DIR ...]
Standard library only, so it works with any python3. Methods and networks are named as the
report names them (analysis/runs.py). Plotted reports come with the `report` command; this is
the quick comparison table.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as run_folders  # noqa: E402  (analysis/runs.py: loading and naming runs)

def ms(seconds):
    return None if seconds is None else 1e3 * seconds


COLUMNS = [
    ("run", lambda r: r.name),
    ("method", run_folders.method_label),
    ("codec", lambda r: r.summary["codec"]),
    ("topology", lambda r: r.summary["topology"]),
    ("network", run_folders.network_label),
    ("rate", lambda r: r.network.get("rate", "")),
    ("workers", lambda r: r.summary["workers"]),
    ("final_accuracy", lambda r: r.summary["final_accuracy"]),
    ("time_to_target_s", lambda r: r.summary["time_to_target_s"]),
    ("sim_time_s", lambda r: r.summary["sim_time_s"]),
    ("step_compute_ms", lambda r: ms(r.summary["mean_step_compute_s"])),
    ("step_comm_ms", lambda r: ms(r.summary["mean_step_comm_s"])),
    ("bytes_on_wire", lambda r: r.summary["bytes_on_wire"]),
    ("compression_ratio", lambda r: r.summary["compression_ratio"]),
    ("wall_time_s", lambda r: r.summary["wall_time_s"]),
    ("ns3_wall_time_s", lambda r: r.summary["ns3_wall_time_s"]),
]


def row(run_dir):
    run = run_folders.load(run_dir)
    return [get(run) for _, get in COLUMNS]


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
            rows.append(row(run))
        except run_folders.RunError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except KeyError as e:
            print(f"error: {run}: not a complete gradwire run (summary.json has no {e})",
                  file=sys.stderr)
            return 2
    header = [name for name, _ in COLUMNS]
    if args.csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(header)
        writer.writerows(rows)
        return 0
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(fmt(v) for v in r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
