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
import re
import struct
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import question  # noqa: E402  (analysis/question.py: a sweep's question and its answer)
import runs as run_folders  # noqa: E402  (analysis/runs.py: finding, loading and naming runs)
from runs import method_label, network_label  # noqa: E402

# The summary columns of results.csv, in the order SweepRunner::summary_columns() writes them
# (sim/study/SweepRunner.cpp), so a report over loose runs writes the same columns as a sweep.
# tests/analysis/report_test.py compares the two lists.
SUMMARY_COLUMNS = [
    "final_accuracy", "time_to_target_s", "sim_time_s", "mean_step_compute_s",
    "mean_step_comm_s", "mean_step_codec_s", "bytes_on_wire", "payload_bytes",
    "compression_ratio", "wall_time_s", "ns3_wall_time_s", "lost_gradient_fraction",
    "final_top5_accuracy", "final_perplexity", "energy_j", "energy_to_target_j",
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
    ("Configuration", "everything in scenario.json but the seed and the name: runs that differ "
     "only in their seed (a sweep's seeds or repetitions) are one configuration, shown as the "
     "mean ± sample standard deviation over its runs in the headline table and as a band or "
     "error bars in the figures. Speedups are taken per seed, against the dense runs of the same "
     "seed, then averaged."),
    ("Speedup vs reference", "time to target of the reference run divided by the run's time to "
     "target (reference chosen with --reference, default: dense fp32 on the fastest network with "
     "the same number of workers and, in a seed sweep, the same seed)."),
    ("Crossover rate", "for each compressing codec and worker count in a study over link rates: "
     "the lowest measured rate from which on it no longer beats the best dense configuration "
     "(speedup vs best dense at most 1, or no result where dense has one)."),
    ("Bytes per step", "size of the gradient one worker's codec produced per step "
     "(payload_bytes / steps / workers); bytes on the wire also count forwarding and framing."),
    ("Compression ratio", "dense fp32 gradient bytes divided by the bytes the codecs produced."),
    ("Energy to target", "joules every worker's device used until the time to target: its busy "
     "seconds (compute, codec and optimizer work) at the profile's busy watts, the rest of the "
     "time at its idle watts, plus its radio's joules where the network reports them; only for "
     "runs whose workers run on named device profiles (compute.profile)."),
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


def networks_in_order(runs):
    """The network labels of the runs, by family, then slowest link first."""
    keys = {network_label(r): run_folders.network_key(r) for r in runs}
    return sorted(keys, key=keys.get)


def is_dense(run):
    return run.codec_kind in DENSE_KINDS


def buckets(run):
    return run_folders.buckets(run.scenario)


# Scenario keys that tell nothing about the configuration: a seed sweep's runs differ in them
# only. Everything else that differs between two runs makes them different configurations.
NOT_CONFIGURATION = ("seed", "name", "description", "output")
# Settings the network, method and workers columns already show. The topology is not among
# them: where runs differ in it, it is named with the other settings that tell them apart.
SHOWN_SETTINGS = ("network.family", "network.rate", "codec", "training.workers",
                  "training.buckets")


def flatten(value, prefix=""):
    """{dotted path: JSON text} of the leaves of a scenario (a list is one leaf)."""
    if isinstance(value, dict) and value:
        out = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
        return out
    return {prefix: json.dumps(value, sort_keys=True)}


def settings(run):
    flat = flatten(run.scenario)
    # An empty network.label names nothing (runs made before the key existed lack it).
    if flat.get("network.label") == '""':
        del flat["network.label"]
    return {k: v for k, v in flat.items() if k.split(".")[0] not in NOT_CONFIGURATION}


def config_key(run):
    return json.dumps(sorted(settings(run).items()))


def shown_columns(run):
    """What the network, method and workers columns (and the figures' panels and legends) say
    about a run."""
    return network_label(run), method_label(run), run.workers


def varying_settings(runs):
    """Paths whose values differ between runs that the network, method and workers columns name
    alike (e.g. network.impairments.loss.rate across two runs on "Ethernet 1 Gbit/s"). A path
    that differs only where those columns differ too (network.enbs between a Wi-Fi and an LTE
    network) is already told by them."""
    alike = {}
    for r in runs:
        alike.setdefault(shown_columns(r), []).append(settings(r))
    paths = set()
    for flats in alike.values():
        for p in set().union(*flats):
            if len({f.get(p) for f in flats}) > 1:
                paths.add(p)
    return sorted(p for p in paths
                  if not any(p == s or p.startswith(s + ".") for s in SHOWN_SETTINGS))


def settings_label(run, paths):
    """'path=value, ...' of the paths the run has (a path another family's network has and this
    one lacks is left out, not written as '-')."""
    flat = settings(run)

    def text(value):
        return fmt(value) if isinstance(value, (int, float)) else value
    return ", ".join(f"{p}={text(json.loads(flat[p]))}" for p in paths if p in flat)


# Figures keep a readable width whatever the labels: a legend entry or tick label longer than
# this is cut with an ellipsis, and wrapped at WRAP_AT characters a line.
LABEL_LIMIT = 90
WRAP_AT = 48
# No image wider than this (pixels): save() lowers the resolution of a wider one.
MAX_IMAGE_PX = 2000
DPI = 110


def short_label(text, limit=LABEL_LIMIT, wrap=WRAP_AT):
    """The text cut to `limit` characters with an ellipsis, wrapped at `wrap` characters a line
    (0: not wrapped)."""
    text = text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
    return textwrap.fill(text, wrap, break_long_words=True) if wrap else text


def configurations(runs):
    """Runs grouped by configuration (everything but the seed), each group sorted by seed."""
    groups = {}
    for r in runs:
        groups.setdefault(config_key(r), []).append(r)
    return [sorted(g, key=lambda r: (str(r.seed), r.name)) for g in groups.values()]


# One definition of the seed statistics for the headline table and the question's answer.
mean_sd = question.mean_sd


def config_label(group, runs, paths=None):
    """A configuration's name in figures: the method, then what else tells it apart."""
    r = group[0]
    label = method_label(r)
    if len({x.workers for x in runs}) > 1:
        label += f", n={r.workers}"
    if len({compute_label(x) for x in runs}) > 1:
        label += f", {compute_label(r)}"
    paths = varying_settings(runs) if paths is None else paths
    shown = settings_label(r, paths) if paths else ""
    if shown:
        label += ", " + shown
    return label


def colors_for(labels):
    """One colour per label, the same in every panel of a figure."""
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(labels) > len(cycle):
        cycle = [plt.get_cmap("tab20")(i % 20) for i in range(len(labels))]
    return {label: cycle[i % len(cycle)] for i, label in enumerate(sorted(labels))}


def legend_below(fig, axes):
    """One legend for all panels, under them, so no curve is hidden behind it."""
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    if handles:
        # Long labels are cut and wrapped (short_label), so two columns fit under any figure.
        fig.legend(handles, [short_label(x) for x in labels], loc="upper center",
                   bbox_to_anchor=(0.5, 0.0), ncol=1 if len(labels) < 4 else 2, fontsize=7,
                   frameon=False)


def save(fig, out_dir, stem):
    """Writes the PNG and SVG; returns (stem, base64 PNG). Figures with nothing to plot return
    (None, a sentence saying what is missing) instead and write no file."""
    fig.tight_layout()
    # Legends sit outside the axes so they never cover data; "tight" grows the saved image to
    # hold them.
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    width = struct.unpack(">I", buf.getvalue()[16:20])[0]  # the PNG header's IHDR width
    if width > MAX_IMAGE_PX:
        # Still too wide (many panels): the same figure at a lower resolution.
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=math.floor(DPI * MAX_IMAGE_PX / width),
                    bbox_inches="tight")
    with open(os.path.join(out_dir, stem + ".png"), "wb") as f:
        f.write(buf.getvalue())
    fig.savefig(os.path.join(out_dir, stem + ".svg"), bbox_inches="tight")
    plt.close(fig)
    return stem, base64.b64encode(buf.getvalue()).decode("ascii")


def accuracy_points(run):
    """{step: (simulated time, accuracy)} of a run's evaluations."""
    return {e["step"]: (e["sim_time_s"], e["accuracy"]) for e in run.evals
            if e.get("accuracy") is not None}


def plot_accuracy(runs, out_dir):
    with_evals = [r for r in runs if accuracy_points(r)]
    if not with_evals:
        return (None, "no run has evaluations with an accuracy in metrics.jsonl; "
                "set training.eval_every (and a classification model) to get this figure.")
    nets = networks_in_order(with_evals)
    groups = configurations(with_evals)
    paths = varying_settings(runs)
    labels = {id(g[0]): config_label(g, runs, paths) for g in groups}
    colors = colors_for(set(labels.values()))
    # At most three panels a row, so the figure keeps its width however many networks there are.
    ncols = min(3, len(nets))
    nrows = math.ceil(len(nets) / ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(5.5 * ncols, 4 * nrows), squeeze=False)
    panels = list(grid.flat)
    for ax in panels[len(nets):]:
        ax.set_visible(False)
    for ax, net in zip(panels, nets):
        for group in sorted((g for g in groups if network_label(g[0]) == net),
                            key=lambda g: labels[id(g[0])]):
            label, color = labels[id(group[0])], colors[labels[id(group[0])]]
            curves = [accuracy_points(r) for r in group]
            if len(curves) == 1:
                pts = sorted(curves[0].values())
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                        label=label, color=color)
                continue
            # Seeds evaluate at the same steps; their times differ slightly, so the mean curve
            # is drawn at the mean time of each step, with a band of one sample standard
            # deviation of the accuracy.
            common = sorted(set.intersection(*(set(c) for c in curves)))
            t = [sum(c[s][0] for c in curves) / len(curves) for s in common]
            stats = [mean_sd([c[s][1] for c in curves]) for s in common]
            mean = [m for m, _, _ in stats]
            sd = [d or 0.0 for _, d, _ in stats]
            ax.plot(t, mean, marker="o", markersize=3, color=color,
                    label=f"{label} (mean ± sd, {len(group)} seeds)")
            # Clipped to [0, 1]: an accuracy band beyond it would show values no run can have.
            ax.fill_between(t, [max(0.0, m - d) for m, d in zip(mean, sd)],
                            [min(1.0, m + d) for m, d in zip(mean, sd)],
                            color=color, alpha=0.2, linewidth=0)
        target = max((r.training.get("target_accuracy") or 0 for r in runs), default=0)
        if target:
            ax.axhline(target, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title(short_label(net, wrap=60), fontsize=9)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("test accuracy (fraction)")
    fig.tight_layout()
    legend_below(fig, panels[:len(nets)])
    return save(fig, out_dir, "accuracy_vs_time")


def compute_label(run):
    c = run.scenario.get("compute", {})
    mode = c.get("mode", "?")
    detail = c.get("profile") or c.get("seconds_per_sample") or c.get("seconds") or c.get("scale")
    if isinstance(detail, list):
        # One device per worker: counted runs of the same device, in rank order.
        runs_of = []
        for name in detail:
            if runs_of and runs_of[-1][0] == name:
                runs_of[-1][1] += 1
            else:
                runs_of.append([name, 1])
        detail = " + ".join(f"{n} x {name}" for name, n in runs_of)
    return f"{mode} {detail}" if detail is not None else mode


def topology(run):
    return (run.scenario.get("topology") or {}).get("kind", "?")


def group_key(run):
    """Runs that differ only in codec, buckets and network are compared with each other."""
    return (run.workers, topology(run), run.seed, compute_label(run),
            run.scenario.get("compute", {}).get("codec_time", "free"))


def comparison_key(run):
    return (network_label(run),) + group_key(run)


def ttt(run):
    return run.time_to_target_s


def step_time_s(run):
    return run.step_time_s


def ratio(base, value):
    """base / value; None without both, or when it is too large to be a number (a time next to
    zero)."""
    if not base or not value:
        return None
    out = base / value
    return out if math.isfinite(out) else None


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
        reached = [r for r in dense if r.time_to_target_s]
        timed = [r for r in dense if r.step_time_s]
        if reached:
            basis, metric = "time to target", ttt
            best = min(reached, key=lambda r: (r.time_to_target_s, r.name))
        elif timed:
            basis, metric = "step time", step_time_s
            best = min(timed, key=lambda r: (r.step_time_s, r.name))
        else:
            basis, metric, best = None, None, None
        best_name = None
        if best is not None:
            best_name = method_label(best)
            if sum(method_label(d) == best_name for d in dense) > 1:
                best_name += f" ({best.name})"
        fp32 = [r for r in dense if r.codec_kind == "none"]
        for r in members:
            same_buckets = [d for d in fp32 if buckets(d) == buckets(r)]
            plain = [d for d in fp32 if buckets(d) == "none"]
            d32 = (same_buckets or plain or [None])[0]
            ref = reference(r)
            out[r.name] = {
                "basis": basis,
                "vs_dense_fp32": ratio(metric(d32), metric(r)) if metric and d32 else None,
                "dense_fp32": d32.name if d32 else None,
                "vs_best_dense": ratio(metric(best), metric(r)) if metric else None,
                "best_dense": best_name,
                "best_dense_run": best.name if best else None,
                "vs_ref": ratio(ref.time_to_target_s, r.time_to_target_s) if ref else None,
                "reference": ref.name if ref else None,
            }
    return out


# What --reference may select on: KEY=VALUE -> the run's value compared with VALUE.
REFERENCE_KEYS = {
    "codec": lambda r: r.codec_kind,
    "name": lambda r: r.name,
    "rate": lambda r: r.rate_bps,
    "family": lambda r: r.network.get("family"),
    "workers": lambda r: str(r.workers),
    "topology": topology,
}


def parse_reference(spec):
    """{key: value} of a --reference such as codec=none,rate=10Gbps; the rate in bits per
    second, so that 10Gbps selects the same runs as 10000Mbps. ValueError when malformed."""
    wanted = {}
    for item in spec.split(","):
        key, eq, value = item.partition("=")
        if not eq or key not in REFERENCE_KEYS:
            raise ValueError(f"--reference: expected KEY=VALUE[,KEY=VALUE...] with KEY one of "
                             f"{', '.join(REFERENCE_KEYS)}, got {item!r}")
        if key == "rate":
            try:
                value = run_folders.parse_data_rate(value)
            except ValueError as e:
                raise ValueError(f"--reference: rate: {e}") from None
        wanted[key] = value
    return wanted


def make_reference(runs, spec):
    if spec:
        wanted = parse_reference(spec)
        candidates = [r for r in runs if all(REFERENCE_KEYS[k](r) == v for k, v in wanted.items())]
    else:
        candidates = [r for r in runs if r.codec_kind == "none" and buckets(r) == "none"]
        candidates = candidates or [r for r in runs if r.codec_kind == "none"]

    def reference(run):
        same = [c for c in candidates
                if c.workers == run.workers and compute_label(c) == compute_label(run)]
        same = same or [c for c in candidates if c.workers == run.workers] or candidates
        # In a seed sweep each seed is compared with the reference of the same seed.
        same = [c for c in same if c.seed == run.seed] or same
        if not same:
            return None
        return max(same, key=lambda c: c.rate_bps or 0)

    return reference


def series_key(run, runs, with_seed=True):
    """One line / one crossover row per method and worker count (and topology or compute model,
    if several). Without the seed, the runs of a seed sweep fall into one series (the figure's
    error bars)."""
    key = (method_label(run), run.workers, run.network.get("family", "?"))
    extra = []
    if len({topology(x) for x in runs}) > 1:
        extra.append(topology(run))
    if len({compute_label(x) for x in runs}) > 1:
        extra.append(compute_label(run))
    if len({x.scenario.get("compute", {}).get("codec_time", "free") for x in runs}) > 1:
        extra.append("codec time " + run.scenario.get("compute", {}).get("codec_time", "free"))
    if with_seed and len({x.seed for x in runs}) > 1:
        extra.append(f"seed {run.seed}")
    return key + (", ".join(extra),)


def rate_text(bps):
    for unit, scale in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if bps >= scale:
            return fmt(bps / scale) + " " + unit
    return fmt(bps) + " bps"


def rate_series(runs, table, with_seed=True):
    """{series key: [(rate bps, speedup vs best dense or None)]}, only where the group has a dense
    result at that rate."""
    series = {}
    for r in runs:
        bw = r.rate_bps
        if bw is None or table[r.name]["basis"] is None:
            continue
        series.setdefault(series_key(r, runs, with_seed), []).append(
            (bw, table[r.name]["vs_best_dense"]))
    return {k: sorted(v, key=lambda p: p[0]) for k, v in series.items()}


def by_rate(pts):
    """[(rate, mean, sd or 0, count)] over the seeds measured at each rate, skipping None."""
    rates = {}
    for bw, value in pts:
        if value is not None:
            rates.setdefault(bw, []).append(value)
    out = []
    for bw, values in sorted(rates.items()):
        mean, sd, n = mean_sd(values)
        out.append((bw, mean, sd or 0.0, n))
    return out


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
    series = {k: by_rate(v) for k, v in rate_series(runs, table, with_seed=False).items()}
    series = {k: v for k, v in series.items() if len(v) >= 2}
    if not series:
        return (None,
                "no method has a speedup vs the best dense configuration at two or more link "
                "rates. Run a sweep over network.rate (ethernet) that includes a dense codec "
                "(none, fp16 or bf16) in every group to get this figure and the crossover table.")
    refs = {}
    for r in runs:
        if r.rate_bps is not None and table[r.name]["vs_ref"] is not None:
            refs.setdefault(series_key(r, runs, False), []).append((r.rate_bps, table[r.name]["vs_ref"]))
    refs = {k: by_rate(v) for k, v in refs.items()}
    refs = {k: v for k, v in refs.items() if len(v) >= 2}
    fig, axes = plt.subplots(1, 2 if refs else 1, figsize=(11 if refs else 6.5, 4), squeeze=False)
    seeded = any(p[3] > 1 for v in list(series.values()) + list(refs.values()) for p in v)

    def name(key):
        method, n, family, extra = key
        return f"{method}, n={n}" + (f", {extra}" if extra else "")

    colors = colors_for({name(k) for k in list(series) + list(refs)})
    dense_keys = {series_key(r, runs, False) for r in runs if is_dense(r)}
    by_step_time = {series_key(r, runs, False) for r in runs if table[r.name]["basis"] == "step time"}

    def draw(ax, key, pts, label):
        # Error bars: one sample standard deviation over the seeds at that rate.
        ax.errorbar([p[0] / 1e9 for p in pts], [p[1] for p in pts],
                    yerr=[p[2] for p in pts] if seeded else None, capsize=3, marker="o",
                    label=label, color=colors[name(key)],
                    linestyle="--" if key in dense_keys else "-")

    for key, pts in sorted(series.items()):
        # Time to target unless marked [mean step time] (no dense run of the group reached it).
        draw(axes[0][0], key, pts, name(key) + (" [mean step time]" if key in by_step_time else ""))
    titles = [(axes[0][0], "speedup vs best dense on the same network")]
    if refs:
        for key, pts in sorted(refs.items()):
            draw(axes[0][1], key, pts, name(key))
        titles.append((axes[0][1], "time-to-target speedup vs reference"))
    for ax, title in titles:
        ax.set_xscale("log")
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlabel("link rate (Gbit/s)")
        ax.set_ylabel("speedup (x)")
        ax.set_title(title + ("\n(mean ± sd over seeds)" if seeded else ""))
    fig.tight_layout()
    legend_below(fig, axes[0])
    return save(fig, out_dir, "speedup_vs_bandwidth")


def plot_bytes(runs, out_dir):
    pts = [r for r in runs if r.summary.get("final_accuracy") is not None and r.bytes_per_step > 0]
    if not pts:
        return (None, "no run has both a final accuracy and payload bytes; runs "
                "with evaluations (training.eval_every) give this figure.")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    paths = varying_settings(runs)
    groups = configurations(pts)
    labels = {id(g[0]): config_label(g, runs, paths) for g in groups}
    colors = colors_for(set(labels.values()))
    # A method has the same bytes on every network and often the same accuracy: a marker shape
    # per network, hollow, keeps coinciding points visible.
    nets = networks_in_order(pts)
    markers = dict(zip(nets, "osD^vP*Xph" * (1 + len(nets) // 10)))
    sizes = dict(zip(nets, [9 - 5 * i / max(1, len(nets) - 1) for i in range(len(nets))]))
    for group in sorted(groups, key=lambda g: (run_folders.network_key(g[0]), labels[id(g[0])])):
        net = network_label(group[0])
        label = f"{labels[id(group[0])]}, {net}"
        acc, acc_sd, _ = mean_sd([r.summary["final_accuracy"] for r in group])
        size, size_sd, _ = mean_sd([r.bytes_per_step for r in group])
        if len(group) > 1:
            label += f" (mean ± sd, {len(group)} seeds)"
        color = colors[labels[id(group[0])]]
        ax.errorbar([size], [acc], xerr=[size_sd] if size_sd else None,
                    yerr=[acc_sd] if acc_sd else None, fmt=markers[net], markersize=sizes[net],
                    markerfacecolor="none", capsize=3, label=label, color=color)
    ax.set_xscale("log")
    sizes_seen = [r.bytes_per_step for r in pts]
    ax.xaxis.set_major_formatter(matplotlib.ticker.EngFormatter(unit="B", sep=""))
    # Within a decade the log axis has no major tick to label; label the minor ones then.
    ax.xaxis.set_minor_formatter(matplotlib.ticker.EngFormatter(unit="B", sep="")
                                 if max(sizes_seen) / min(sizes_seen) < 20 else matplotlib.ticker.NullFormatter())
    ax.tick_params(axis="x", which="both", labelsize=7, labelrotation=45)
    ax.set_xlabel("gradient per step per worker (bytes, log scale)")
    ax.set_ylabel("final test accuracy (fraction)")
    fig.tight_layout()
    legend_below(fig, [ax])
    return save(fig, out_dir, "bytes_vs_accuracy")


DEVICE_HEADER = ["run", "device", "workers", "mean step compute (ms)", "busy (s)",
                 "compute energy (J)"]


def device_compute_rows(runs):
    """Rows of the per-device compute table: one per run and device profile it used."""
    rows = []
    for r in sorted(runs, key=lambda r: r.name):
        for name, workers, step_s, busy_s, joules in r.device_compute:
            rows.append([r.name, name, fmt(workers), ms(1e3 * step_s if step_s is not None else None),
                         fmt(busy_s), fmt(joules)])
    return rows


LAYER_HEADER = ["run", "layer type", "tensors", "elements", "density (%)", "bytes per step",
                "compression (x)"]


def layer_compression_rows(runs):
    """Rows of the per-layer-type compression table: one per run and layer type, from
    summary.json's layer_compression (codecs that select per tensor: adacomp, dgc, sdagc)."""
    rows = []
    for r in sorted(runs, key=lambda r: r.name):
        layers = r.summary.get("layer_compression")
        by_type = layers.get("by_type") if isinstance(layers, dict) else None
        if not isinstance(by_type, dict):
            continue
        for kind, t in by_type.items():
            if not isinstance(t, dict):
                continue
            density = t.get("density")
            density = 100 * density if isinstance(density, (int, float)) else None
            rows.append([r.name, kind, fmt(t.get("tensors")), fmt(t.get("numel")), fmt(density),
                         fmt(t.get("bytes_per_step")), fmt(t.get("compression"))])
    return rows


def breakdown(runs):
    """Per run with step times: (name, compute ms, codec ms or None, exposed comm ms, step ms)."""
    rows = []
    for r in runs:
        s = r.summary
        if r.step_time_s is None:
            continue
        codec = s.get("mean_step_codec_s")
        rows.append((r.name, 1e3 * s["mean_step_compute_s"],
                     1e3 * codec if codec else None, 1e3 * s["mean_step_comm_s"], 1e3 * r.step_time_s))
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
    ax.set_yticklabels([short_label(row[0], 70, 0) for row in rows])
    ax.invert_yaxis()
    ax.set_xlabel("simulated time per step (ms; mean over steps and workers)")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    legend_below(fig, [ax])
    return save(fig, out_dir, "step_breakdown")


# The headline table's measures: (data-column, header, value of one run, text of one value).
# A single run's time, accuracy and lost fraction are written as results.csv writes them.
def headline_measures(runs, table):
    speedup = lambda v: "%.3g" % v
    measures = [
        ("time_to_target_s", "time to target (s)", ttt, fmt),
        ("speedup_vs_dense_fp32", "speedup vs dense fp32 (x)",
         lambda r: table[r.name]["vs_dense_fp32"], speedup),
        ("speedup_vs_best_dense", "speedup vs best dense (x)",
         lambda r: table[r.name]["vs_best_dense"], speedup),
        ("final_accuracy", "final accuracy", lambda r: r.summary.get("final_accuracy"), fmt),
        ("bytes_per_step", "bytes per step", lambda r: r.bytes_per_step or None, fmt),
    ]
    if any(r.summary.get("lost_gradient_fraction") is not None for r in runs):
        measures.append(("lost_gradient_fraction", "lost gradient (fraction, UDP)",
                         lambda r: r.summary.get("lost_gradient_fraction"), fmt))
    # Runs whose workers run on named devices carry their energy (summary.json's energy).
    if any(r.summary.get("energy_j") is not None for r in runs):
        measures.insert(1, ("energy_to_target_j", "energy to target (J)",
                            lambda r: r.energy_to_target_j, fmt))
    return measures


def headline(runs, table):
    """(header, rows) of the headline table. A row is (run names, label cells, measure cells,
    seeds), a measure cell (data-column, mean, sd, count, text, basis), one row per
    configuration: runs that differ only in their seed are one row, mean ± sample sd."""
    measures = headline_measures(runs, table)
    paths = varying_settings(runs)
    rows = []
    for group in configurations(runs):
        r = group[0]
        cells = []
        for column, _, value, text in measures:
            values = [value(x) for x in group]
            mean, sd, n = mean_sd(values)
            if n == 0:
                shown = "-"
            elif len(group) == 1:
                shown = text(mean)
            else:
                shown = ("%.4g ± %.2g" % (mean, sd)) if sd is not None else "%.4g" % mean
                if n < len(group):
                    shown += f" ({n} of {len(group)} runs)"
            basis = ""
            if column.startswith("speedup"):
                # A group whose dense runs never reached the target is compared on step time.
                bases = {table[x.name]["basis"] for x, v in zip(group, values) if v is not None}
                basis = "step time" if bases == {"step time"} else "mixed" if len(bases) > 1 else ""
                if basis:
                    shown += f" [{basis}]"
            cells.append((column, mean, sd, n, shown, basis))
        labels = [network_label(r), method_label(r), fmt(r.workers)]
        if paths:
            labels.append(settings_label(r, paths))
        # What the time-to-target figure calls the row within its network's panel.
        caption = ", ".join(x for x in [method_label(r), f"{r.workers} workers"] + labels[3:4] if x)
        # Per network, the configuration that reached the target first leads; those that never
        # reached it follow, fastest step first.
        time = cells[0][1]
        steps = mean_sd([x.step_time_s for x in group])[0]
        order = (run_folders.network_key(r), time is None, time or 0.0,
                 steps if steps is not None else math.inf, labels[1:])
        rows.append((order, ([x.name for x in group], labels, cells, [x.seed for x in group],
                             caption)))
    header = (["network", "method", "workers"] + (["settings"] if paths else [])
              + [m[1] for m in measures] + ["runs (seeds)"])
    rows = [row for _, row in sorted(rows, key=lambda r: r[0])]
    # A column with the same value in every row says nothing about the rows: the common
    # settings line under the table says it once.
    if len({row[1][2] for row in rows}) == 1:
        del header[2]
        for row in rows:
            del row[1][2]
    return header, rows


def common_settings(runs):
    """What every run shares, for the line under the headline table: the workers when the table
    has no workers column, the topology, compute model, model, data set and schedule."""
    items = [
        lambda r: _count(r.workers, "worker", "workers"),
        lambda r: "topology " + " ".join(
            str(v) for k, v in sorted((r.scenario.get("topology") or {}).items())
            if k in ("kind", "mode")),
        lambda r: "compute " + compute_label(r),
        lambda r: "model " + str((r.scenario.get("model") or {}).get("kind", "?")),
        lambda r: "dataset " + str((r.scenario.get("dataset") or {}).get("kind", "?")),
        lambda r: f"{r.training.get('steps', '?')} steps of batch {r.training.get('batch', '?')}",
    ]
    out = []
    for item in items:
        values = {item(r) for r in runs}
        if len(values) == 1:
            out.append(values.pop())
    return out


def _count(n, one, many):
    return f"{n} {one if n == 1 else many}"


def headline_html(header, rows):
    out = ['<table class="headline"><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    for names, labels, cells, seeds, _ in rows:
        attr = lambda v: "" if v is None else repr(float(v))
        tds = [f"<td{long_cell(v)}>{html.escape(v)}</td>" for v in labels]
        for column, mean, sd, n, shown, basis in cells:
            tds.append(f'<td data-column="{column}" data-mean="{attr(mean)}" data-sd="{attr(sd)}" '
                       f'data-n="{n}"' + (f' data-basis="{basis}"' if basis else "")
                       + f">{html.escape(shown)}</td>")
        seed_text = ", ".join(str(x) for x in seeds)
        tds.append(f'<td data-column="runs" data-n="{len(names)}">{len(names)} '
                   f'(seed{"s" if len(seeds) > 1 else ""} {html.escape(seed_text)})</td>')
        out.append(f"<tr data-runs='{html.escape(json.dumps(names), quote=True)}'>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def plot_time_to_target(rows, out_dir):
    """Bars of the headline table's time to target, one panel per network, error bars of one
    sample standard deviation over the seeds."""
    nets = []
    for names, labels, cells, _, _ in rows:
        if cells[0][1] is not None and labels[0] not in nets:
            nets.append(labels[0])
    if not nets:
        return (None, "no run reached its target (training.target_accuracy or "
                "training.target_perplexity); run longer (training.steps) or lower the target, "
                "with training.eval_every set, to get this figure.")
    panels = [[row for row in rows if row[1][0] == net] for net in nets]
    fig, axes = plt.subplots(len(nets), 1, squeeze=False,
                             figsize=(8, sum(0.35 * len(p) + 1.2 for p in panels)),
                             gridspec_kw={"height_ratios": [len(p) for p in panels]})
    for ax, net, panel in zip(axes[:, 0], nets, panels):
        ys = list(range(len(panel)))
        times = [row[2][0][1] for row in panel]
        errors = [row[2][0][2] or 0.0 for row in panel]
        ax.barh(ys, [t or 0.0 for t in times], xerr=errors if any(errors) else None,
                capsize=3, color="tab:blue")
        for y, t in zip(ys, times):
            if t is None:
                ax.text(0, y, " target not reached", va="center", fontsize=7, color="grey")
        ax.set_yticks(ys)
        ax.set_yticklabels([short_label(row[4] + (f" ({len(row[0])} seeds)" if len(row[0]) > 1 else ""),
                                        70, 0)
                            for row in panel], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(short_label(net, wrap=0), fontsize=9)
        ax.set_xlabel("simulated time to target (s)" +
                      ("; mean ± sd over seeds" if any(len(row[0]) > 1 for row in panel) else ""))
    return save(fig, out_dir, "time_to_target")


def sweep_results(sweeps):
    """(header, rows) of the sweeps' results.csv files together, None without a sweep; RunError
    when one cannot be read or their columns differ."""
    if not sweeps:
        return None
    first = os.path.join(sweeps[0], run_folders.RESULTS_FILE)
    header, rows = None, []
    for sweep in sweeps:
        path = os.path.join(sweep, run_folders.RESULTS_FILE)
        h, body = run_folders.read_results(path)
        header = header or h
        if h != header:
            raise run_folders.RunError(
                f"{path}: line 1: expected the columns of {first} (sweeps over different axes "
                "make one report each)")
        rows.extend(body)
    return header, rows


def results_rows(runs, from_sweeps, out_dir):
    """Rows of results.csv: the sweeps' own files when given (sweep_results), else one written
    here."""
    if from_sweeps:
        return from_sweeps
    header = ["run", "status"] + SUMMARY_COLUMNS
    rows = [[r.name, "ok"] + [fmt(r.summary.get(c)) for c in SUMMARY_COLUMNS] for r in runs]
    with open(os.path.join(out_dir, "results.csv"), "w", newline="", encoding="utf-8",
              errors="backslashreplace") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return header, rows


def long_cell(text):
    """' class="long"' for a cell text with a word too long to keep whole (a run name, a JSON
    value), which the page then breaks anywhere."""
    long_word = any(len(word) > 24 for word in text.split())
    return ' class="long"' if long_word or text.startswith(("{", "[")) else ""


def header_html(name):
    """A column name that may break after its underscores and dots (final_<wbr>accuracy,
    training.<wbr>workers), so that many columns of long names still fit the page."""
    return re.sub(r"([_.])", r"\1<wbr>", html.escape(name))


def table_html(header, rows, css_class):
    out = [f'<table class="{css_class}"><tr>' + "".join(f"<th>{header_html(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td{long_cell(v)}>{html.escape(v)}</td>" for v in row) + "</tr>")
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
FIGURES = ("time_to_target", "accuracy_vs_time", "speedup_vs_bandwidth", "bytes_vs_accuracy",
           "step_breakdown")
CROSSOVER_HEADER = ["method", "workers", "network", "stops paying at", "beats best dense at",
                    "speedup vs best dense by rate (x)"]


def answer_html(text, rows):
    """The answer to a sweep's question: one row per split, the verdict first. Cells carry
    data-* attributes (as the headline table's do) so a script can read them."""
    per = list(rows[0]["per"]) if rows else []
    header = per + ["answer", "candidate: time to target (s)", "baseline: time to target (s)",
                    "speedup (x)", "candidate: samples/s", "baseline: samples/s",
                    "throughput ratio (x)", "candidate: final accuracy", "baseline: final accuracy"]
    out = [f"<p><b>{html.escape(text)}</b></p>", '<table class="answer"><tr>'
           + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]

    def time_text(side):
        if side["time_to_target_s"] is None:
            return "not reached"
        shown = "%.4g" % side["time_to_target_s"]
        if side["time_to_target_sd"] is not None:
            shown += " ± %.2g" % side["time_to_target_sd"]
        if side["reached"] < len(side["runs"]):
            shown += f" ({side['reached']} of {len(side['runs'])} runs)"
        return shown

    def cell(column, value, shown):
        attr = "" if value is None else repr(float(value))
        return f'<td data-column="{column}" data-value="{attr}">{html.escape(shown)}</td>'

    for row in rows:
        c, b = row["candidate"], row["baseline"]
        tds = [f"<td>{html.escape(fmt(v))}</td>" for v in row["per"].values()]
        tds.append(f'<td data-column="verdict" data-value="{row["verdict"]}">'
                   f'<b>{row["verdict"]}</b>: {html.escape(row["why"])}</td>')
        tds += [cell("candidate_time_to_target_s", c["time_to_target_s"], time_text(c)),
                cell("baseline_time_to_target_s", b["time_to_target_s"], time_text(b)),
                cell("speedup", row["speedup"], speedup_text(row["speedup"])),
                cell("candidate_throughput", c["throughput"], "%.4g" % c["throughput"] if c["throughput"] else "-"),
                cell("baseline_throughput", b["throughput"], "%.4g" % b["throughput"] if b["throughput"] else "-"),
                cell("throughput_ratio", row["throughput_ratio"], speedup_text(row["throughput_ratio"])),
                cell("candidate_final_accuracy", c["final_accuracy"], fmt(c["final_accuracy"])),
                cell("baseline_final_accuracy", b["final_accuracy"], fmt(b["final_accuracy"]))]
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="report folder (created)")
    parser.add_argument("--reference", default="",
                        help="reference run for speedups, e.g. codec=none,rate=10Gbps or name=RUN")
    parser.add_argument("dirs", nargs="+")
    args = parser.parse_args(argv)

    try:
        run_dirs, sweeps, skipped = run_folders.find_all(args.dirs)
        runs = []
        for d in run_dirs:
            # A run folder that cannot be read is left out and listed; the others are reported.
            try:
                r = run_folders.load(d)
                r.rate_bps  # a malformed rate, and
                r.evals  # a malformed metrics.jsonl, are found here, before anything is written
            except run_folders.RunError as e:
                skipped.append((d, str(e)))
                continue
            runs.append(r)
        # A sweep's own files describe all of its runs: one that cannot be read stops the
        # report (the message names the file and line) rather than leave its table or answer out.
        from_sweeps = sweep_results(sweeps)
        questions = question.load_questions(sweeps)
        for _, why in skipped:
            print(f"skipped: {why}", file=sys.stderr)
        if not runs:
            raise run_folders.RunError(
                "no run folders (with summary.json and scenario.json) under "
                + " ".join(args.dirs) + (" that could be read (skipped above)" if skipped else ""))
        reference = make_reference(runs, args.reference)
    except (run_folders.RunError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    # Figures from an earlier report into the same folder must not outlive a figure now omitted.
    for stem in FIGURES:
        for ext in (".png", ".svg"):
            if os.path.exists(os.path.join(args.out, stem + ext)):
                os.remove(os.path.join(args.out, stem + ext))

    table = baselines(runs, reference)
    steps = breakdown(runs)
    head_header, head_rows = headline(runs, table)
    figures = {"time_to_target": plot_time_to_target(head_rows, args.out),
               "accuracy_vs_time": plot_accuracy(runs, args.out),
               "speedup_vs_bandwidth": plot_speedup(runs, table, args.out),
               "bytes_vs_accuracy": plot_bytes(runs, args.out),
               "step_breakdown": plot_breakdown(steps, args.out)}
    header, rows = results_rows(runs, from_sweeps, args.out)

    speed_rows = []
    paths = varying_settings(runs)
    for r in sorted(runs, key=lambda r: (run_folders.network_key(r), method_label(r), r.workers, r.name)):
        t = table[r.name]
        method = method_label(r) + (", " + settings_label(r, paths) if paths else "")
        speed_rows.append([r.name, network_label(r), method, fmt(r.workers),
                           fmt(r.time_to_target_s), ms(1e3 * r.step_time_s if r.step_time_s else None),
                           t["basis"] or "-", speedup_text(t["vs_dense_fp32"]),
                           speedup_text(t["vs_best_dense"]), t["best_dense"] or "-",
                           speedup_text(t["vs_ref"]), t["reference"] or "-",
                           fmt(r.bytes_per_step), fmt(r.summary.get("compression_ratio")),
                           fmt(r.summary.get("final_accuracy"))])
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>gradwire report</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}"
             "table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:2px 6px}"
             # Run names and JSON axis values have no spaces: breaking them anywhere lets a
             # table shrink to the page instead of running past it (table_html marks them).
             "td.long{overflow-wrap:anywhere}"
             # results.csv has a column per axis and 14 of results: smaller, to fit the page.
             "table.results{font-size:11px}table.results td,table.results th{padding:2px 3px}"
             "img{max-width:100%}p.missing{color:#666}</style></head><body>",
             f"<h1>gradwire report</h1><p>{len(runs)} runs from {html.escape(', '.join(args.dirs))}</p>"]
    if skipped:
        many = len(skipped) > 1
        parts.append(f"<h2>Skipped run folders</h2><p class='missing'>{len(skipped)} folder"
                     f"{'s' if many else ''} could not be read as a finished run and "
                     f"{'are' if many else 'is'} left out of every table and figure:</p>")
        parts.append(table_html(["folder", "why"], [[d, why] for d, why in skipped], "skipped"))
    seeded = any(len(row[0]) > 1 for row in head_rows)
    by_step_time = any(cell[5] for row in head_rows for cell in row[2])
    answers = []
    for sweep, q in questions:
        rows_q = question.answer(q, runs)
        answers.append({"sweep": sweep, "question": q, "rows": rows_q})
        parts.append("<h2>Answer</h2>")
        if rows_q:
            parts.append(answer_html(q["text"], rows_q))
            parts.append("<p>Time to target: mean ± sample sd over seeds; speedup: the baseline's "
                         "time to target over the candidate's; samples/s: workers × batch per "
                         "mean simulated step. Candidate " + html.escape(json.dumps(q["candidate"]))
                         + ", baseline " + html.escape(json.dumps(q["baseline"])) + ".</p>")
        else:
            parts.append(f"<p><b>{html.escape(q['text'])}</b></p><p class='missing'>Not answered: "
                         + html.escape(question.unanswered_reason(q, runs)) + ".</p>")
    if answers:
        tmp = os.path.join(args.out, ".answer.json.tmp")
        with open(tmp, "w") as f:
            json.dump(answers, f, indent=1)
        os.replace(tmp, os.path.join(args.out, "answer.json"))
    elif os.path.exists(os.path.join(args.out, "answer.json")):
        os.remove(os.path.join(args.out, "answer.json"))
    parts.append("<h2>Headline</h2><p>One row per configuration; within each network, the "
                 "fastest to its target first (definitions below)."
                 + (" Runs that differ only in their seed are one row: mean ± sample standard "
                    "deviation over the runs (n in the last column; '(k of n runs)' when only k "
                    "of them have the value)." if seeded else "")
                 + (" [step time]: the speedup divides mean step times because no dense run of "
                    "the group reached the target; [mixed]: some seeds' speedups do." if by_step_time else "")
                 + "</p>")
    parts.append(headline_html(head_header, head_rows))
    common = common_settings(runs)
    if common:
        parts.append("<p class='common'>Common to every row: " + html.escape("; ".join(common))
                     + ".</p>")

    def figure(stem, title):
        item = figures[stem]
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if item[0] is None:
            parts.append(f"<p class='missing'>Figure omitted: {html.escape(item[1])}</p>")
            return
        parts.append(f"<img alt='{stem}' src='data:image/png;base64,{item[1]}'>"
                     f"<p><a href='{stem}.svg'>{stem}.svg</a> · <a href='{stem}.png'>{stem}.png</a></p>")

    figure("time_to_target", "Time to target by method")
    parts.append("<h2>Definitions</h2><dl>")
    parts += [f"<dt><b>{html.escape(k)}</b></dt><dd>{html.escape(v)}</dd>" for k, v in DEFINITIONS]
    parts.append("</dl><h2>Speedups</h2>")
    if not any(is_dense(r) for r in runs):
        parts.append("<p class='missing'>No dense run (codec none, fp16 or bf16): the speedups vs "
                     "dense are undefined. Add a run with codec none to each network and worker "
                     "count.</p>")
    parts.append(table_html(SPEEDUP_HEADER, speed_rows, "speedups"))
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
    device_rows = device_compute_rows(runs)
    if device_rows:
        parts.append("<h2>Compute per device</h2><p>Per run and device profile (compute.profile): "
                     "its workers, their mean compute per step, the seconds their devices "
                     "worked (compute, codec and optimizer) and the joules that took at the "
                     "devices' busy watts, with the rest of the run at their idle watts "
                     "(summary.json's energy).</p>")
        parts.append(table_html(DEVICE_HEADER, device_rows, "devices"))
    layer_rows = layer_compression_rows(runs)
    if layer_rows:
        parts.append("<h2>Compression by layer type</h2><p>Runs whose codec selects per tensor "
                     "(adacomp, dgc, sdagc): what it sent of each kind of layer, over the run "
                     "(summary.json's layer_compression): conv are 4-D weights, fc 2-D ones "
                     "(fully connected, recurrent, embedding), vector biases and normalisation. "
                     "Density is the fraction of elements sent; compression is 4 bytes per "
                     "element over the payload bytes the layer took per worker and step.</p>")
        parts.append(table_html(LAYER_HEADER, layer_rows, "layers"))
    parts.append("<h2>Results (results.csv)</h2>")
    # A measure no run has (energy without device profiles, perplexity of image data, the lost
    # fraction over TCP) would only widen the page: shown in results.csv, not here.
    kept = [i for i, h in enumerate(header) if i < 2 or any(str(row[i]).strip() for row in rows)]
    if len(kept) < len(header):
        left_out = [header[i] for i in range(len(header)) if i not in kept]
        parts.append("<p>Columns no run has a value in are left out here (they are in "
                     f"results.csv): {html.escape(', '.join(left_out))}.</p>")
    parts.append(table_html([header[i] for i in kept], [[row[i] for i in kept] for row in rows],
                            "results"))
    parts.append("</body></html>")
    tmp = os.path.join(args.out, ".report.html.tmp")
    # A folder name that is not UTF-8 (it reaches Python as surrogates) is shown escaped.
    with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write("\n".join(parts))
    os.replace(tmp, os.path.join(args.out, "report.html"))
    print(os.path.join(args.out, "report.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
