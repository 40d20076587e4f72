#!/usr/bin/env python3
"""Render a gradwire report: report.html plus PNG and SVG figures, from run or sweep folders.

Usage: report.py --out REPORT_DIR [--reference KEY=VALUE,...] DIR [DIR ...]

A DIR is a run folder (holding summary.json), a sweep folder (holding results.csv and run
folders) or any folder containing those. Called by `gradwire report`, which picks a Python that
has matplotlib; it can also be run directly.
"""
import argparse
import base64
import csv
import html
import io
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

SUMMARY_COLUMNS = [
    "final_accuracy", "time_to_target_s", "sim_time_s", "mean_step_compute_s",
    "mean_step_comm_s", "bytes_on_wire", "payload_bytes", "compression_ratio",
    "wall_time_s", "ns3_wall_time_s", "lost_gradient_fraction",
]

DEFINITIONS = [
    ("Simulated time", "ns-3's clock, which is the training clock: compute time per step "
     "(from compute.mode) plus the time the network took to deliver each aggregate."),
    ("Time to target", "the simulated time of the first evaluation whose test accuracy reached "
     "training.target_accuracy; '-' when no evaluation reached it."),
    ("Speedup vs dense", "time to target of dense (codec none) on the same network, with the same "
     "workers and topology, divided by the run's time to target. Above 1: faster than dense."),
    ("Speedup vs reference", "time to target of the reference run divided by the run's time to "
     "target (reference chosen with --reference, default: dense on the fastest network with the "
     "same number of workers)."),
    ("Bytes per step", "size of the gradient one worker's codec produced per step "
     "(payload_bytes / steps / workers); bytes on the wire also count forwarding and framing."),
    ("Compression ratio", "dense fp32 gradient bytes divided by the bytes the codecs produced."),
]


def fmt(value):
    """Same rendering as results.csv: integers exactly, other numbers with %.6g."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return "%.6g" % value
    return str(value)


def find_runs(paths):
    runs, sweeps = [], []
    for top in paths:
        if not os.path.isdir(top):
            raise SystemExit(f"error: {top}: not a folder")
        for root, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("logs", "scenarios"))
            if "results.csv" in files:
                sweeps.append(root)
            if "summary.json" in files and "scenario.json" in files:
                runs.append(root)
    return sorted(set(runs)), sweeps


def load_run(path):
    with open(os.path.join(path, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(path, "scenario.json")) as f:
        scenario = json.load(f)
    evals, steps = [], []
    metrics = os.path.join(path, "metrics.jsonl")
    if os.path.exists(metrics):
        with open(metrics) as f:
            for line in f:
                rec = json.loads(line)
                (evals if rec.get("type") == "eval" else steps).append(rec)
    return {"path": path, "name": os.path.basename(path), "summary": summary,
            "scenario": scenario, "evals": evals, "steps": steps}


def rate_bps(text):
    units = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12}
    t = str(text).strip().lower().replace(" ", "")
    for unit in sorted(units, key=len, reverse=True):
        if t.endswith(unit):
            try:
                return float(t[: -len(unit)]) * units[unit]
            except ValueError:
                return None
    return None


def network_label(run):
    net = run["scenario"].get("network", {})
    label = net.get("family", "?")
    if "rate" in net:
        label += " " + str(net["rate"])
    return label


def method_label(run):
    codec = run["scenario"].get("codec", {})
    parts = [codec.get("kind", "?")]
    for key in ("ratio", "density", "levels", "rank"):
        if key in codec:
            parts.append(f"{key} {codec[key]}")
    if codec.get("error_feedback"):
        parts.append("EF")
    return " ".join(parts) + " / " + run["scenario"].get("topology", {}).get("kind", "?")


def workers(run):
    return run["scenario"].get("training", {}).get("workers", 0)


def save(fig, out_dir, stem):
    fig.tight_layout()
    png = os.path.join(out_dir, stem + ".png")
    fig.savefig(png, dpi=110)
    fig.savefig(os.path.join(out_dir, stem + ".svg"))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return stem, base64.b64encode(buf.getvalue()).decode("ascii")


def plot_accuracy(runs, out_dir):
    nets = sorted({network_label(r) for r in runs})
    fig, axes = plt.subplots(1, len(nets), figsize=(5.5 * len(nets), 4), squeeze=False)
    many_sizes = len({workers(r) for r in runs}) > 1
    many_computes = len({compute_label(r) for r in runs}) > 1
    for ax, net in zip(axes[0], nets):
        for r in sorted((r for r in runs if network_label(r) == net), key=method_label):
            if not r["evals"]:
                continue
            label = method_label(r) + (f", n={workers(r)}" if many_sizes else "")
            label += f", {compute_label(r)}" if many_computes else ""
            ax.plot([e["sim_time_s"] for e in r["evals"]], [e["accuracy"] for e in r["evals"]],
                    marker="o", markersize=3, label=label)
        target = max((r["scenario"]["training"].get("target_accuracy", 0) for r in runs), default=0)
        if target:
            ax.axhline(target, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title(net)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
    return save(fig, out_dir, "accuracy_vs_time")


def compute_label(run):
    c = run["scenario"].get("compute", {})
    mode = c.get("mode", "?")
    detail = c.get("profile") or c.get("seconds_per_sample") or c.get("seconds") or c.get("scale")
    return f"{mode} {detail}" if detail is not None else mode


def group_key(run):
    """Runs that differ only in codec and network are compared with each other."""
    return (workers(run), run["scenario"].get("topology", {}).get("kind"),
            run["scenario"].get("seed"), compute_label(run))


def speedups(runs, reference):
    """Per run: (vs dense on the same network, vs reference). None where undefined."""
    def ttt(r):
        return r["summary"].get("time_to_target_s")

    dense = {}
    for r in runs:
        if r["scenario"]["codec"].get("kind") == "none":
            dense[(network_label(r),) + group_key(r)] = r
    out = {}
    for r in runs:
        d = dense.get((network_label(r),) + group_key(r))
        vs_dense = ttt(d) / ttt(r) if d and ttt(d) and ttt(r) else None
        ref = reference(r)
        vs_ref = ttt(ref) / ttt(r) if ref and ttt(ref) and ttt(r) else None
        out[r["name"]] = (vs_dense, vs_ref, ref["name"] if ref else None)
    return out


def make_reference(runs, spec):
    if spec:
        wanted = dict(item.split("=", 1) for item in spec.split(","))

        def matches(r):
            flat = {"codec": r["scenario"]["codec"].get("kind"), "name": r["name"],
                    "rate": str(r["scenario"]["network"].get("rate")),
                    "family": r["scenario"]["network"].get("family"),
                    "workers": str(workers(r)),
                    "topology": r["scenario"]["topology"].get("kind")}
            return all(flat.get(k) == v for k, v in wanted.items())

        candidates = [r for r in runs if matches(r)]
    else:
        candidates = [r for r in runs if r["scenario"]["codec"].get("kind") == "none"]

    def reference(run):
        same = [c for c in candidates
                if workers(c) == workers(run) and compute_label(c) == compute_label(run)]
        same = same or [c for c in candidates if workers(c) == workers(run)] or candidates
        if not same:
            return None
        return max(same, key=lambda c: rate_bps(c["scenario"]["network"].get("rate", "0bps")) or 0)

    return reference


def plot_speedup(runs, table, out_dir):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series = {}
    for r in runs:
        bw = rate_bps(r["scenario"]["network"].get("rate", ""))
        if bw is None:
            continue
        key = method_label(r) + f", n={workers(r)}"
        if len({compute_label(x) for x in runs}) > 1:
            key += ", " + compute_label(r)
        series.setdefault(key, []).append((bw, table[r["name"]][0], table[r["name"]][1]))
    for key, pts in sorted(series.items()):
        pts.sort()
        for ax, idx in ((axes[0], 1), (axes[1], 2)):
            xs = [p[0] / 1e9 for p in pts if p[idx] is not None]
            ys = [p[idx] for p in pts if p[idx] is not None]
            if xs:
                ax.plot(xs, ys, marker="o", label=key)
    for ax, title in ((axes[0], "speedup vs dense on the same network"),
                      (axes[1], "speedup vs reference")):
        ax.set_xscale("log")
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlabel("link rate (Gbit/s)")
        ax.set_ylabel("time-to-target speedup")
        ax.set_title(title)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return save(fig, out_dir, "speedup_vs_bandwidth")


def bytes_per_step(run):
    s = run["summary"]
    steps = max(1, s.get("steps", 1))
    return s.get("payload_bytes", 0) / steps / max(1, s.get("workers", 1))


def plot_bytes(runs, out_dir):
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in runs:
        acc = r["summary"].get("final_accuracy")
        if acc is None or bytes_per_step(r) <= 0:
            continue
        ax.scatter([bytes_per_step(r)], [acc], label=f"{method_label(r)}, {network_label(r)}")
    ax.set_xscale("log")
    ax.set_xlabel("gradient bytes per step per worker")
    ax.set_ylabel("final test accuracy")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)
    return save(fig, out_dir, "bytes_vs_accuracy")


def plot_breakdown(runs, out_dir):
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(runs) + 1.5))
    names = [r["name"] for r in runs]
    compute = [1e3 * r["summary"].get("mean_step_compute_s", 0) for r in runs]
    comm = [1e3 * r["summary"].get("mean_step_comm_s", 0) for r in runs]
    ax.barh(names, compute, label="compute")
    ax.barh(names, comm, left=compute, label="communication")
    ax.set_xlabel("simulated ms per step (mean over steps and workers)")
    ax.tick_params(axis="y", labelsize=7)
    ax.legend()
    return save(fig, out_dir, "step_breakdown")


def results_rows(runs, sweeps, out_dir):
    """Rows of results.csv: the sweeps' own files when given, else one written here."""
    if sweeps:
        header, rows = None, []
        for sweep in sweeps:
            with open(os.path.join(sweep, "results.csv"), newline="") as f:
                reader = csv.reader(f)
                h = next(reader)
                header = header or h
                if h != header:
                    raise SystemExit("error: the sweeps have different results.csv columns")
                rows.extend(reader)
        return header, rows
    header = ["run", "status"] + SUMMARY_COLUMNS
    rows = [[r["name"], "ok"] + [fmt(r["summary"].get(c)) for c in SUMMARY_COLUMNS] for r in runs]
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return header, rows


def table_html(header, rows, css_class):
    out = [f'<table class="{css_class}"><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="report folder (created)")
    parser.add_argument("--reference", default="",
                        help="reference run for speedups, e.g. codec=none,rate=10Gbps or name=RUN")
    parser.add_argument("dirs", nargs="+")
    args = parser.parse_args(argv)

    run_dirs, sweeps = find_runs(args.dirs)
    if not run_dirs:
        print("error: no run folders (with summary.json) under " + " ".join(args.dirs), file=sys.stderr)
        return 2
    runs = [load_run(d) for d in run_dirs]
    os.makedirs(args.out, exist_ok=True)

    figures = [plot_accuracy(runs, args.out)]
    table = speedups(runs, make_reference(runs, args.reference))
    figures.append(plot_speedup(runs, table, args.out))
    figures.append(plot_bytes(runs, args.out))
    figures.append(plot_breakdown(runs, args.out))
    header, rows = results_rows(runs, sweeps, args.out)

    speed_rows = []
    for r in sorted(runs, key=lambda r: (network_label(r), method_label(r), workers(r))):
        vs_dense, vs_ref, ref = table[r["name"]]
        speed_rows.append([r["name"], network_label(r), method_label(r), fmt(workers(r)),
                           fmt(r["summary"].get("time_to_target_s")),
                           "%.3g" % vs_dense if vs_dense else "-",
                           "%.3g" % vs_ref if vs_ref else "-", ref or "-",
                           fmt(bytes_per_step(r)), fmt(r["summary"].get("compression_ratio")),
                           fmt(r["summary"].get("final_accuracy"))])
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>gradwire report</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}"
             "img{max-width:100%}</style></head><body>",
             f"<h1>gradwire report</h1><p>{len(runs)} runs from {html.escape(', '.join(args.dirs))}</p>",
             "<h2>Definitions</h2><dl>"]
    parts += [f"<dt><b>{html.escape(k)}</b></dt><dd>{html.escape(v)}</dd>" for k, v in DEFINITIONS]
    parts.append("</dl><h2>Speedups</h2>")
    parts.append(table_html(["run", "network", "method", "workers", "time_to_target_s",
                             "speedup vs dense", "speedup vs reference", "reference",
                             "bytes per step", "compression_ratio", "final_accuracy"],
                            speed_rows, "speedups"))
    titles = {"accuracy_vs_time": "Accuracy vs simulated time",
              "speedup_vs_bandwidth": "Speedup vs bandwidth",
              "bytes_vs_accuracy": "Bytes per step vs accuracy",
              "step_breakdown": "Per-step compute vs communication"}
    for stem, data in figures:
        parts.append(f"<h2>{titles[stem]}</h2><img alt='{stem}' src='data:image/png;base64,{data}'>"
                     f"<p><a href='{stem}.svg'>{stem}.svg</a> · <a href='{stem}.png'>{stem}.png</a></p>")
    parts.append("<h2>Results (results.csv)</h2>")
    parts.append(table_html(header, rows, "results"))
    parts.append("</body></html>")
    tmp = os.path.join(args.out, ".report.html.tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(parts))
    os.replace(tmp, os.path.join(args.out, "report.html"))
    print(os.path.join(args.out, "report.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
