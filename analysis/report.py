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
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

# The summary columns of results.csv, in the order SweepRunner::summary_columns() writes them
# (sim/study/SweepRunner.cpp), so a report over loose runs writes the same columns as a sweep.
# tests/analysis/report_test.py compares the two lists.
SUMMARY_COLUMNS = [
    "final_accuracy", "time_to_target_s", "sim_time_s", "mean_step_compute_s",
    "mean_step_comm_s", "mean_step_codec_s", "bytes_on_wire", "payload_bytes",
    "compression_ratio", "wall_time_s", "ns3_wall_time_s", "lost_gradient_fraction",
    "final_top5_accuracy", "final_perplexity",
]

# Codecs that send the whole gradient, only in another number format: the candidates for the
# best dense configuration a compressing codec has to beat.
DENSE_KINDS = ("none", "fp16", "bf16")

DEFINITIONS = [
    ("Simulated time", "ns-3's clock, which is the training clock: compute time per step "
     "(from compute.mode) plus the time the network took to deliver each aggregate, plus codec "
     "time where compute.codec_time counts it."),
    ("Time to target", "the simulated time of the first evaluation whose test accuracy reached "
     "training.target_accuracy (or whose perplexity fell to training.target_perplexity); '-' when "
     "no evaluation reached it."),
    ("Mean step time", "mean_step_compute_s + mean_step_comm_s, in ms: the simulated time from "
     "the start of a step to its update (comm is the communication left exposed after compute; "
     "codec time spent outside compute is inside it)."),
    ("Comparison group", "runs on the same network (family and rate) with the same workers, "
     "topology, seed, compute model and codec-time accounting."),
    ("Speedup basis", "time to target when a dense configuration of the group reached the "
     "target; otherwise mean step time. The basis column says which."),
    ("Speedup vs dense fp32", "the basis (time to target or mean step time) of dense fp32 "
     "(codec none) in the same group, divided by the run's. Dense fp32 with the run's own buckets "
     "setting is used when there is one, else dense fp32 without buckets. Above 1: faster."),
    ("Speedup vs best dense", "the basis of the best dense configuration of the group divided by "
     "the run's: of every run whose codec sends the whole gradient (none, fp16, bf16) with any "
     "buckets setting, the one with the smallest time to target (smallest mean step time when "
     "none reached the target). The 'best dense' column names it. Above 1: the codec beats "
     "everything dense can do on that network."),
    ("Speedup vs reference", "time to target of the reference run divided by the run's time to "
     "target (reference chosen with --reference, default: dense fp32 on the fastest network with "
     "the same number of workers)."),
    ("Crossover rate", "for each compressing codec and worker count in a study over link rates: "
     "the lowest measured rate from which on it no longer beats the best dense configuration "
     "(speedup vs best dense at most 1, or no result where dense has one)."),
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


def codec_kind(run):
    return (run["scenario"].get("codec") or {}).get("kind", "?")


def is_dense(run):
    return codec_kind(run) in DENSE_KINDS


def buckets_label(run):
    """'' without buckets, else e.g. 'buckets 25 MB (first 1 MB)'."""
    b = run["scenario"].get("training", {}).get("buckets", "none")
    if not isinstance(b, dict):
        return ""
    text = f"buckets {fmt(b.get('size_mb'))} MB"
    if b.get("first_mb") not in (None, b.get("size_mb")):
        text += f" (first {fmt(b.get('first_mb'))} MB)"
    return text


def method_label(run):
    codec = run["scenario"].get("codec", {})
    parts = [codec.get("kind", "?")]
    for key in ("ratio", "density", "levels", "rank"):
        if key in codec:
            parts.append(f"{key} {codec[key]}")
    if codec.get("error_feedback"):
        parts.append("EF")
    label = " ".join(parts)
    if buckets_label(run):
        label += ", " + buckets_label(run)
    return label + " / " + run["scenario"].get("topology", {}).get("kind", "?")


def dense_label(run):
    """How a dense configuration is named in the tables: 'fp16, buckets 25 MB', 'none, no buckets'."""
    return codec_kind(run) + ", " + (buckets_label(run) or "no buckets")


def workers(run):
    return run["scenario"].get("training", {}).get("workers", 0)


def save(fig, out_dir, stem):
    """Writes the PNG and SVG; returns (stem, base64 PNG). Figures with nothing to plot return
    (None, a sentence saying what is missing) instead and write no file."""
    fig.tight_layout()
    png = os.path.join(out_dir, stem + ".png")
    fig.savefig(png, dpi=110)
    fig.savefig(os.path.join(out_dir, stem + ".svg"))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return stem, base64.b64encode(buf.getvalue()).decode("ascii")


def plot_accuracy(runs, out_dir):
    with_evals = [r for r in runs if any(e.get("accuracy") is not None for e in r["evals"])]
    if not with_evals:
        return (None, "no run has evaluations with an accuracy in metrics.jsonl; "
                "set training.eval_every (and a classification model) to get this figure.")
    nets = sorted({network_label(r) for r in with_evals})
    fig, axes = plt.subplots(1, len(nets), figsize=(5.5 * len(nets), 4), squeeze=False)
    many_sizes = len({workers(r) for r in runs}) > 1
    many_computes = len({compute_label(r) for r in runs}) > 1
    for ax, net in zip(axes[0], nets):
        for r in sorted((r for r in with_evals if network_label(r) == net), key=method_label):
            label = method_label(r) + (f", n={workers(r)}" if many_sizes else "")
            label += f", {compute_label(r)}" if many_computes else ""
            pts = [(e["sim_time_s"], e["accuracy"]) for e in r["evals"] if e.get("accuracy") is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=label)
        target = max((r["scenario"].get("training", {}).get("target_accuracy") or 0 for r in runs), default=0)
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
    """Runs that differ only in codec, buckets and network are compared with each other."""
    return (workers(run), run["scenario"].get("topology", {}).get("kind"),
            run["scenario"].get("seed"), compute_label(run),
            run["scenario"].get("compute", {}).get("codec_time", "free"))


def comparison_key(run):
    return (network_label(run),) + group_key(run)


def step_time_s(run):
    """Mean simulated step time: compute plus the communication left exposed after it."""
    s = run["summary"]
    if s.get("mean_step_compute_s") is None or s.get("mean_step_comm_s") is None:
        return None
    return s["mean_step_compute_s"] + s["mean_step_comm_s"]


def ttt(run):
    return run["summary"].get("time_to_target_s")


def ratio(base, value):
    return base / value if base and value else None


def baselines(runs, reference):
    """Per run name: a dict with the speedups and the baselines they were taken against.

    basis: 'time to target' when a dense run of the comparison group reached the target, else
    'step time' (mean step time), or None when the group has no dense run with a result.
    """
    groups = {}
    for r in runs:
        groups.setdefault(comparison_key(r), []).append(r)
    out = {}
    for key, members in groups.items():
        dense = [r for r in members if is_dense(r)]
        reached = [r for r in dense if ttt(r)]
        timed = [r for r in dense if step_time_s(r)]
        if reached:
            basis, metric = "time to target", ttt
            best = min(reached, key=lambda r: (ttt(r), r["name"]))
        elif timed:
            basis, metric = "step time", step_time_s
            best = min(timed, key=lambda r: (step_time_s(r), r["name"]))
        else:
            basis, metric, best = None, None, None
        best_name = None
        if best is not None:
            best_name = dense_label(best)
            if sum(dense_label(d) == best_name for d in dense) > 1:
                best_name += f" ({best['name']})"
        fp32 = [r for r in dense if codec_kind(r) == "none"]
        for r in members:
            same_buckets = [d for d in fp32 if buckets_label(d) == buckets_label(r)]
            plain = [d for d in fp32 if not buckets_label(d)]
            d32 = (same_buckets or plain or [None])[0]
            ref = reference(r)
            out[r["name"]] = {
                "basis": basis,
                "vs_dense_fp32": ratio(metric(d32), metric(r)) if metric and d32 else None,
                "dense_fp32": d32["name"] if d32 else None,
                "vs_best_dense": ratio(metric(best), metric(r)) if metric else None,
                "best_dense": best_name,
                "best_dense_run": best["name"] if best else None,
                "vs_ref": ratio(ttt(ref), ttt(r)) if ref else None,
                "reference": ref["name"] if ref else None,
            }
    return out


def make_reference(runs, spec):
    if spec:
        wanted = dict(item.split("=", 1) for item in spec.split(","))

        def matches(r):
            flat = {"codec": codec_kind(r), "name": r["name"],
                    "rate": str(r["scenario"]["network"].get("rate")),
                    "family": r["scenario"]["network"].get("family"),
                    "workers": str(workers(r)),
                    "topology": r["scenario"]["topology"].get("kind")}
            return all(flat.get(k) == v for k, v in wanted.items())

        candidates = [r for r in runs if matches(r)]
    else:
        candidates = [r for r in runs if codec_kind(r) == "none" and not buckets_label(r)]
        candidates = candidates or [r for r in runs if codec_kind(r) == "none"]

    def reference(run):
        same = [c for c in candidates
                if workers(c) == workers(run) and compute_label(c) == compute_label(run)]
        same = same or [c for c in candidates if workers(c) == workers(run)] or candidates
        if not same:
            return None
        return max(same, key=lambda c: rate_bps(c["scenario"]["network"].get("rate", "0bps")) or 0)

    return reference


def rate_of(run):
    return rate_bps(run["scenario"].get("network", {}).get("rate", ""))


def series_key(run, runs):
    """One line / one crossover row per method and worker count (and compute model, if several)."""
    key = (method_label(run), workers(run), run["scenario"].get("network", {}).get("family", "?"))
    extra = []
    if len({compute_label(x) for x in runs}) > 1:
        extra.append(compute_label(run))
    if len({x["scenario"].get("compute", {}).get("codec_time", "free") for x in runs}) > 1:
        extra.append("codec time " + run["scenario"].get("compute", {}).get("codec_time", "free"))
    if len({x["scenario"].get("seed") for x in runs}) > 1:
        extra.append(f"seed {run['scenario'].get('seed')}")
    return key + (", ".join(extra),)


def rate_text(bps):
    for unit, scale in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if bps >= scale:
            return fmt(bps / scale) + " " + unit
    return fmt(bps) + " bps"


def rate_series(runs, table):
    """{series key: [(rate bps, speedup vs best dense or None)]}, only where the group has a dense
    result at that rate."""
    series = {}
    for r in runs:
        bw = rate_of(r)
        if bw is None or table[r["name"]]["basis"] is None:
            continue
        series.setdefault(series_key(r, runs), []).append((bw, table[r["name"]]["vs_best_dense"]))
    return {k: sorted(v, key=lambda p: p[0]) for k, v in series.items()}


def crossover_rows(runs, table):
    """Rows of the 'where compression stops paying' table, for compressing codecs measured at two
    or more rates. A missing speedup (the run did not reach the target that dense reached) counts
    as not beating dense."""
    dense_keys = {series_key(r, runs) for r in runs if is_dense(r)}
    rows = []
    for key, pts in sorted(rate_series(runs, table).items()):
        if key in dense_keys or len({p[0] for p in pts}) < 2:
            continue
        beats = [(bw, s is not None and s > 1) for bw, s in pts]
        if all(b for _, b in beats):
            verdict = "beats dense at every rate"
        elif not any(b for _, b in beats):
            verdict = "never beats dense"
        elif beats[-1][1]:
            verdict = "no crossover: beats dense at the highest rate"
        else:
            i = len(beats)
            while i > 0 and not beats[i - 1][1]:
                i -= 1
            verdict = rate_text(beats[i][0])
        method, n, family, extra = key
        rows.append([method, fmt(n), family + (f", {extra}" if extra else ""), verdict,
                     ", ".join(rate_text(bw) for bw, b in beats if b) or "-",
                     ", ".join(f"{rate_text(bw)}: " + ("%.3g" % s if s else "-") for bw, s in pts)])
    return rows


def plot_speedup(runs, table, out_dir):
    series = {k: v for k, v in rate_series(runs, table).items()
              if len({p[0] for p in v if p[1] is not None}) >= 2}
    if not series:
        return (None,
                "no method has a speedup vs the best dense configuration at two or more link "
                "rates. Run a sweep over network.rate (ethernet) that includes a dense codec "
                "(none, fp16 or bf16) in every group to get this figure and the crossover table.")
    refs = {}
    for r in runs:
        if rate_of(r) is not None and table[r["name"]]["vs_ref"] is not None:
            refs.setdefault(series_key(r, runs), []).append((rate_of(r), table[r["name"]]["vs_ref"]))
    refs = {k: sorted(v) for k, v in refs.items() if len({p[0] for p in v}) >= 2}
    fig, axes = plt.subplots(1, 2 if refs else 1, figsize=(11 if refs else 6.5, 4), squeeze=False)

    def name(key):
        method, n, family, extra = key
        return f"{method}, n={n}" + (f", {extra}" if extra else "")

    dense_keys = {series_key(r, runs) for r in runs if is_dense(r)}
    by_step_time = {series_key(r, runs) for r in runs if table[r["name"]]["basis"] == "step time"}
    for key, pts in sorted(series.items()):
        pts = [p for p in pts if p[1] is not None]
        label = name(key) + (" [mean step time]" if key in by_step_time else "")
        axes[0][0].plot([p[0] / 1e9 for p in pts], [p[1] for p in pts], marker="o", label=label,
                        linestyle="--" if key in dense_keys else "-")
    # Time to target unless marked [mean step time] (no dense run of the group reached the target).
    titles = [(axes[0][0], "speedup vs best dense on the same network")]
    if refs:
        for key, pts in sorted(refs.items()):
            axes[0][1].plot([p[0] / 1e9 for p in pts], [p[1] for p in pts], marker="o", label=name(key))
        titles.append((axes[0][1], "time-to-target speedup vs reference"))
    for ax, title in titles:
        ax.set_xscale("log")
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlabel("link rate (Gbit/s)")
        ax.set_ylabel("speedup (x)")
        ax.set_title(title)
        ax.legend(fontsize=7)
    return save(fig, out_dir, "speedup_vs_bandwidth")


def bytes_per_step(run):
    s = run["summary"]
    steps = max(1, s.get("steps", 1) or 1)
    return (s.get("payload_bytes") or 0) / steps / max(1, s.get("workers", 1) or 1)


def plot_bytes(runs, out_dir):
    pts = [r for r in runs if r["summary"].get("final_accuracy") is not None and bytes_per_step(r) > 0]
    if not pts:
        return (None, "no run has both a final accuracy and payload bytes; runs "
                "with evaluations (training.eval_every) give this figure.")
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in pts:
        ax.scatter([bytes_per_step(r)], [r["summary"]["final_accuracy"]],
                   label=f"{method_label(r)}, {network_label(r)}")
    ax.set_xscale("log")
    ax.set_xlabel("gradient bytes per step per worker")
    ax.set_ylabel("final test accuracy")
    ax.legend(fontsize=6)
    return save(fig, out_dir, "bytes_vs_accuracy")


def breakdown(runs):
    """Per run with step times: (name, compute ms, codec ms or None, exposed comm ms, step ms)."""
    rows = []
    for r in runs:
        s = r["summary"]
        if step_time_s(r) is None:
            continue
        codec = s.get("mean_step_codec_s")
        rows.append((r["name"], 1e3 * s["mean_step_compute_s"],
                     1e3 * codec if codec else None, 1e3 * s["mean_step_comm_s"], 1e3 * step_time_s(r)))
    return rows


def plot_breakdown(rows, out_dir):
    if not rows:
        return (None, "no run has mean_step_compute_s and mean_step_comm_s in "
                "summary.json; runs that record steps give this figure.")
    has_codec = any(row[2] for row in rows)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    ys = list(range(len(rows)))
    height = 0.4 if has_codec else 0.8
    compute = [row[1] for row in rows]
    ax.barh(ys, compute, height=height, label="compute")
    ax.barh(ys, [row[3] for row in rows], left=compute, height=height,
            label="exposed communication (after compute)")
    if has_codec:
        ax.barh([y - height for y in ys], [row[2] or 0 for row in rows], height=height,
                color="tab:red", label="codec (within the step)")
    ax.set_yticks(ys)
    ax.set_yticklabels([row[0] for row in rows])
    ax.invert_yaxis()
    ax.set_xlabel("simulated ms per step (mean over steps and workers)")
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=7)
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


def speedup_text(value):
    return "%.3g" % value if value else "-"


def ms(value):
    return "%.4g" % value if value is not None else "-"


SPEEDUP_HEADER = ["run", "network", "method", "workers", "time_to_target_s", "mean step (ms)",
                  "basis", "speedup vs dense fp32 (x)", "speedup vs best dense (x)", "best dense",
                  "speedup vs reference (x)", "reference", "bytes per step", "compression_ratio",
                  "final_accuracy"]
BREAKDOWN_HEADER = ["run", "compute (ms/step)", "codec (ms/step)", "exposed communication (ms/step)",
                    "step (ms)"]
CROSSOVER_HEADER = ["method", "workers", "network", "stops paying at", "beats best dense at",
                    "speedup vs best dense by rate (x)"]


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
    # Figures from an earlier report into the same folder must not outlive a figure now omitted.
    for stem in ("accuracy_vs_time", "speedup_vs_bandwidth", "bytes_vs_accuracy", "step_breakdown"):
        for ext in (".png", ".svg"):
            if os.path.exists(os.path.join(args.out, stem + ext)):
                os.remove(os.path.join(args.out, stem + ext))

    table = baselines(runs, make_reference(runs, args.reference))
    steps = breakdown(runs)
    figures = {"accuracy_vs_time": plot_accuracy(runs, args.out),
               "speedup_vs_bandwidth": plot_speedup(runs, table, args.out),
               "bytes_vs_accuracy": plot_bytes(runs, args.out),
               "step_breakdown": plot_breakdown(steps, args.out)}
    header, rows = results_rows(runs, sweeps, args.out)

    speed_rows = []
    for r in sorted(runs, key=lambda r: (network_label(r), method_label(r), workers(r), r["name"])):
        t = table[r["name"]]
        speed_rows.append([r["name"], network_label(r), method_label(r), fmt(workers(r)),
                           fmt(ttt(r)), ms(1e3 * step_time_s(r) if step_time_s(r) else None),
                           t["basis"] or "-", speedup_text(t["vs_dense_fp32"]),
                           speedup_text(t["vs_best_dense"]), t["best_dense"] or "-",
                           speedup_text(t["vs_ref"]), t["reference"] or "-",
                           fmt(bytes_per_step(r)), fmt(r["summary"].get("compression_ratio")),
                           fmt(r["summary"].get("final_accuracy"))])
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>gradwire report</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}"
             "img{max-width:100%}p.missing{color:#666}</style></head><body>",
             f"<h1>gradwire report</h1><p>{len(runs)} runs from {html.escape(', '.join(args.dirs))}</p>",
             "<h2>Definitions</h2><dl>"]
    parts += [f"<dt><b>{html.escape(k)}</b></dt><dd>{html.escape(v)}</dd>" for k, v in DEFINITIONS]
    parts.append("</dl><h2>Speedups</h2>")
    if not any(is_dense(r) for r in runs):
        parts.append("<p class='missing'>No dense run (codec none, fp16 or bf16): the speedups vs "
                     "dense are undefined. Add a run with codec none to each network and worker "
                     "count.</p>")
    parts.append(table_html(SPEEDUP_HEADER, speed_rows, "speedups"))

    def figure(stem, title):
        item = figures[stem]
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if item[0] is None:
            parts.append(f"<p class='missing'>Figure omitted: {html.escape(item[1])}</p>")
            return
        parts.append(f"<img alt='{stem}' src='data:image/png;base64,{item[1]}'>"
                     f"<p><a href='{stem}.svg'>{stem}.svg</a> · <a href='{stem}.png'>{stem}.png</a></p>")

    figure("accuracy_vs_time", "Accuracy vs simulated time")
    figure("speedup_vs_bandwidth", "Speedup vs bandwidth")
    parts.append("<h2>Where compression stops paying</h2>")
    cross = crossover_rows(runs, table)
    if cross:
        parts.append(table_html(CROSSOVER_HEADER, cross, "crossover"))
    else:
        parts.append("<p class='missing'>No compressing codec was measured at two or more link "
                     "rates with a dense run beside it. Sweep network.rate with codec none (and "
                     "fp16, buckets) in the same sweep to get the crossover table.</p>")
    figure("bytes_vs_accuracy", "Bytes per step vs accuracy")
    figure("step_breakdown", "Per-step compute, codec and exposed communication")
    if steps:
        has_codec = any(row[2] for row in steps)
        head = BREAKDOWN_HEADER if has_codec else [h for h in BREAKDOWN_HEADER if not h.startswith("codec")]
        body = [[row[0], ms(row[1])] + ([ms(row[2])] if has_codec else []) + [ms(row[3]), ms(row[4])]
                for row in steps]
        parts.append(table_html(head, body, "breakdown"))
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
