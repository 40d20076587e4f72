#!/usr/bin/python3
"""Whole training steps two ways, step by step: a ring or a parameter server with DDP's buckets
over Ethernet, an MLP of each gradient size (256 -> H -> H -> 10), compute fixed, dense
gradients. Prints a Markdown table of simulated step times (docs/fidelity.md, netmodels/README.md).

    tests/bench/training_steps_bench.py --compare small-queues|offload
        [--gradwire build/gradwire] [--topologies ring,ps] [--sizes-mb 1.6,5.3,19,45]
        [--workers 4,8] [--rates 100Mbps] [--steps 6] [--compute-s 0.05] [--out DIR]

--compare small-queues: TCP Small Queues on (the model) against off (ns-3's
  NS_ATTRIBUTE_DEFAULT, every window in the host's NIC queue).
--compare offload: segment offload (network.offload, the default) against per-frame simulation;
  the largest per-step difference is what the offload accuracy claim covers.
Each step's time is the difference of consecutive step lines' sim_time_s; the first step
(connections opening) is reported apart.
"""
import argparse
import json
import math
import os
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


def run(binary, scenario, out, env):
    start = time.time()
    subprocess.run([binary, "run", str(scenario), "--out", str(out), "-q"],
                   env={**os.environ, **env}, check=True, stdout=subprocess.DEVNULL)
    return time.time() - start


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
            or any(t not in ("ring", "ps") for t in topologies)):
        print("training_steps_bench: expected --steps >= 2, positive sizes, workers >= 2, "
              "topologies ring or ps", file=sys.stderr)
        return 2
    if a.compare == "small-queues":
        modes = (("small queues", {}, {}), ("whole window in the NIC",
                                             {"NS_ATTRIBUTE_DEFAULT": SMALL_QUEUES_OFF}, {}))
    else:
        modes = (("offload", {}, {"offload": True}), ("per-frame", {}, {"offload": False}))
    out = Path(a.out or tempfile.mkdtemp(prefix="training-steps-"))
    out.mkdir(parents=True, exist_ok=True)
    first, second = modes[0][0], modes[1][0]
    print(f"| topology | workers | gradient | rate | {first}: steps 2-{a.steps} (s) | "
          f"{second}: steps 2-{a.steps} (s) | step 1: {first} / {second} | "
          f"steps 2-{a.steps}: {first} / {second}, range | wall: {first}, {second} (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for topology in topologies:
        for rate in a.rates.split(","):
            for n in workers:
                for mb in sizes:
                    h = hidden_for(mb * 1e6)
                    name = f"{topology}-{n}w-{mb:g}mb-{rate}"
                    times, walls = {}, {}
                    for label, env, network in modes:
                        doc = {"gradwire": 1, "name": name, "seed": 7,
                               "model": {"kind": "mlp", "hidden": [h, h]},
                               "dataset": {"kind": "synthetic", "features": 256,
                                           "train_samples": 512, "test_samples": 128},
                               "training": {"workers": n, "steps": a.steps, "batch": 16,
                                            "eval_every": 100000},
                               "compute": {"mode": "fixed", "seconds": a.compute_s,
                                           "threads": 1},
                               "codec": {"kind": "none"}, "topology": {"kind": topology},
                               "network": {"family": "ethernet", "rate": rate, "delay": "0us",
                                           **network}}
                        folder = out / label.replace(" ", "-")
                        folder.mkdir(exist_ok=True)
                        scenario = folder / f"{name}.json"
                        scenario.write_text(json.dumps(doc))
                        walls[label] = run(a.gradwire, scenario, folder, env)
                        times[label] = step_times(folder / name / "metrics.jsonl")
                    x, y = times[first], times[second]
                    ratios = [p / q for p, q in zip(x[1:], y[1:])]
                    print(f"| {topology} | {n} | {mb:g} MB | {rate} | {span(x[1:])} | "
                          f"{span(y[1:])} | {x[0] / y[0]:.4f} | "
                          f"{min(ratios):.4f}-{max(ratios):.4f} | "
                          f"{walls[first]:.1f}, {walls[second]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
