#!/usr/bin/python3
"""Whole training steps two ways, step by step: a ring or a parameter server with DDP's buckets
over Ethernet, an MLP of each gradient size (256 -> H -> H -> 10), compute fixed, dense
gradients. Prints a Markdown table of simulated step times (docs/fidelity.md, netmodels/README.md).

    tests/bench/training_steps_bench.py --compare small-queues|offload
        [--gradwire build/gradwire] [--topologies ring,ps] [--sizes-mb 1.6,5.3,19,45]
        [--workers 4,8] [--rates 100Mbps] [--steps 6] [--compute-s 0.05] [--perturb K]
        [--queue FRAMES] [--out DIR]

--compare small-queues: TCP Small Queues on (the model) against off (ns-3's
  NS_ATTRIBUTE_DEFAULT, every window in the host's NIC queue).
--compare offload: segment offload (network.offload, the default) against per-frame simulation;
  the largest per-step difference is what the offload accuracy claim covers.
Each step's time is the difference of consecutive step lines' sim_time_s; the first step
(connections opening) is reported apart.

--perturb K: each mode runs K times, run k with every step's compute longer by k microseconds.
A parameter server's pushes meet at its switch port, and which frames that drop-tail queue
drops, and whether a retransmission timeout fires, change with sub-microsecond shifts in either
simulation: there a single pair of runs says little, and the two are compared as distributions
(netmodels/README.md). The table then gives each mode's mean step over all runs' steps 2..N
with the standard error of the K run means, the ratio of the two means, and each mode's range
of run means (what a microsecond moves it by).

--queue FRAMES: every switch port's drop-tail queue (network.queue); a queue no burst fills
takes drops, and the timeouts they cause, out of the comparison.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL_QUEUES_OFF = "gradwire::SmallQueuesTcpSocket::SmallQueues=false"


def hidden_for(gradient_bytes, features=256, classes=10):
    """H such that the MLP 256 -> H -> H -> 10 has about gradient_bytes / 4 parameters."""
    n = gradient_bytes / 4
    b = features + classes + 2
    return int((-b + math.sqrt(b * b + 4 * n)) / 2)


def step_times(metrics):
    out, before = [], 0.0
    for line in metrics.read_text().splitlines():
        j = json.loads(line)
        if j.get("type") == "step":
            out.append(j["sim_time_s"] - before)
            before = j["sim_time_s"]
    return out


def span(values):
    lo, hi = min(values), max(values)
    return f"{lo:.4f}" if f"{lo:.4f}" == f"{hi:.4f}" else f"{lo:.4f}-{hi:.4f}"


def scenario(name, h, n, steps, compute_s, topology, rate, network):
    return {"gradwire": 1, "name": name, "seed": 7,
            "model": {"kind": "mlp", "hidden": [h, h]},
            "dataset": {"kind": "synthetic", "features": 256,
                        "train_samples": 512, "test_samples": 128},
            "training": {"workers": n, "steps": steps, "batch": 16, "eval_every": 100000},
            "compute": {"mode": "fixed", "seconds": compute_s, "threads": 1},
            "codec": {"kind": "none"}, "topology": {"kind": topology},
            "network": {"family": "ethernet", "rate": rate, "delay": "0us", **network}}


def perturbed(a, modes, grid, out):
    """The --perturb table: each mode as a distribution over a.perturb runs."""
    first, second = modes[0][0], modes[1][0]
    header(f"{first}: mean step (s)", f"{second}: mean step (s)", f"{first} / {second}, means",
           f"{first}: run means", f"{second}: run means")
    for topology, rate, n, mb in grid:
        h = hidden_for(mb * 1e6)
        cells = {}
        for label, env, network in modes:
            run_means, steps = [], []
            for k in range(a.perturb):
                name = f"{topology}-{n}w-{mb:g}mb-{rate}-{k}us"
                doc = scenario(name, h, n, a.steps, a.compute_s + k * 1e-6, topology, rate,
                               network)
                later = simulate(a.gradwire, doc, out / label.replace(" ", "-"), env)[1][1:]
                steps += later
                run_means.append(statistics.mean(later))
            error = statistics.stdev(run_means) / math.sqrt(len(run_means))
            cells[label] = (statistics.mean(steps), error, min(run_means), max(run_means))
        x, y = cells[first], cells[second]
        print(f"| {topology} | {n} | {mb:g} MB | {rate} | {x[0]:.4f} ± {x[1]:.4f} | "
              f"{y[0]:.4f} ± {y[1]:.4f} | {x[0] / y[0]:.4f} | "
              f"{x[2]:.4f}-{x[3]:.4f} | {y[2]:.4f}-{y[3]:.4f} |", flush=True)
    return 0


def header(*columns):
    """The Markdown table's head: the row's key columns, then `columns`."""
    names = ("topology", "workers", "gradient", "rate") + columns
    print("| " + " | ".join(names) + " |")
    print("|---" * len(names) + "|")


def rows(topologies, rates, workers, sizes):
    """The table's rows in order: (topology, rate, workers, megabytes)."""
    return [(t, r, n, mb) for t in topologies for r in rates for n in workers for mb in sizes]


def simulate(binary, doc, folder, env):
    """`gradwire run` of the scenario `doc` in `folder`: its wall time and its step times."""
    folder.mkdir(exist_ok=True)
    path = folder / f"{doc['name']}.json"
    path.write_text(json.dumps(doc))
    start = time.time()
    subprocess.run([binary, "run", str(path), "--out", str(folder), "-q"],
                   env={**os.environ, **env}, check=True, stdout=subprocess.DEVNULL)
    return time.time() - start, step_times(folder / doc["name"] / "metrics.jsonl")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compare", required=True, choices=["small-queues", "offload"])
    p.add_argument("--gradwire", default="build/gradwire")
    p.add_argument("--topologies", default="ring")
    p.add_argument("--sizes-mb", default="1.6,5.3,19,45")
    p.add_argument("--workers", default="4,8")
    p.add_argument("--rates", default="100Mbps")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--compute-s", type=float, default=0.05)
    p.add_argument("--perturb", type=int, default=0,
                   help="K runs per mode, compute longer by 0..K-1 microseconds")
    p.add_argument("--queue", type=int, default=None,
                   help="switch port queue, frames (default: the network's)")
    p.add_argument("--out", default=None, help="keep the runs here (default: a temporary folder)")
    a = p.parse_args()
    try:
        sizes = [float(x) for x in a.sizes_mb.split(",")]
        workers = [int(x) for x in a.workers.split(",")]
    except ValueError:
        print("training_steps_bench: --sizes-mb and --workers take comma-separated numbers",
              file=sys.stderr)
        return 2
    topologies = a.topologies.split(",")
    if (a.steps < 2 or any(s <= 0 for s in sizes) or any(w < 2 for w in workers)
            or any(t not in ("ring", "ps") for t in topologies) or a.perturb == 1
            or a.perturb < 0):
        print("training_steps_bench: expected --steps >= 2, positive sizes, workers >= 2, "
              "topologies ring or ps, --perturb 0 or >= 2", file=sys.stderr)
        return 2
    if a.compare == "small-queues":
        modes = (("small queues", {}, {}), ("whole window in the NIC",
                                             {"NS_ATTRIBUTE_DEFAULT": SMALL_QUEUES_OFF}, {}))
    else:
        modes = (("offload", {}, {"offload": True}), ("per-frame", {}, {"offload": False}))
    if a.queue is not None:
        modes = tuple((label, env, {**network, "queue": a.queue}) for label, env, network in modes)
    out = Path(a.out or tempfile.mkdtemp(prefix="training-steps-"))
    out.mkdir(parents=True, exist_ok=True)
    first, second = modes[0][0], modes[1][0]
    grid = rows(topologies, a.rates.split(","), workers, sizes)
    if a.perturb:
        return perturbed(a, modes, grid, out)
    header(f"{first}: steps 2-{a.steps} (s)", f"{second}: steps 2-{a.steps} (s)",
           f"step 1: {first} / {second}", f"steps 2-{a.steps}: {first} / {second}, range",
           f"wall: {first}, {second} (s)")
    for topology, rate, n, mb in grid:
        h = hidden_for(mb * 1e6)
        name = f"{topology}-{n}w-{mb:g}mb-{rate}"
        times, walls = {}, {}
        for label, env, network in modes:
            doc = scenario(name, h, n, a.steps, a.compute_s, topology, rate, network)
            walls[label], times[label] = simulate(a.gradwire, doc, out / label.replace(" ", "-"),
                                                  env)
        x, y = times[first], times[second]
        ratios = [p / q for p, q in zip(x[1:], y[1:])]
        print(f"| {topology} | {n} | {mb:g} MB | {rate} | {span(x[1:])} | {span(y[1:])} | "
              f"{x[0] / y[0]:.4f} | {min(ratios):.4f}-{max(ratios):.4f} | "
              f"{walls[first]:.1f}, {walls[second]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
