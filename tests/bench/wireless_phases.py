#!/usr/bin/python3
"""What a dense parameter-server step of the wireless study spends its time on: the push
(every worker's gradient up to the server) and the pull (the aggregate back down), each alone.

    tests/bench/wireless_phases.py --gradwire build/gradwire [--out DIR]

For each parameter-server network of scenarios/studies/wireless-edge.json, one training step of
its ResNet-20 with dense fp32 gradients: with 8 workers, and on the Wi-Fi cells also with one
station, the same bytes without anyone to contend with. A single step has no overlap between
phases (with more steps, the first worker to get a reply pushes its next gradient while the
access point still replies to the last), and the step's `push_s` and `pull_s`
(docs/outputs.md) are then the uplinks' and the downlinks' times. Prints a Markdown table:
per network, each phase and, for Wi-Fi, how much longer eight stations take than eight times
one (what contention adds).
"""
import argparse
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one_step(binary, scenario, out):
    path = out / (scenario["name"] + ".json")
    path.write_text(json.dumps(scenario))
    subprocess.run([str(binary), "run", str(path), "--out", str(out / "runs"), "-q"], check=True,
                   stdout=subprocess.DEVNULL)
    run = out / "runs" / scenario["name"]
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
             if line.strip() and json.loads(line)["type"] == "step"]
    return steps[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradwire", default=str(ROOT / "build" / "gradwire"))
    parser.add_argument("--out", help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args()
    study = json.loads((ROOT / "scenarios" / "studies" / "wireless-edge.json").read_text())
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="wireless-phases-"))
    out.mkdir(parents=True, exist_ok=True)
    seen = set()
    rows = []
    for kind, network in zip(study["zip"]["topology.kind"], study["zip"]["network"]):
        key = json.dumps(network, sort_keys=True)
        if kind != "ps" or key in seen:
            continue
        seen.add(key)
        label = network["family"] + "-" + str(len(seen))
        found = {}
        for workers in ([8, 1] if network["family"] == "wifi" else [8]):
            s = copy.deepcopy(study["base"])
            s["name"] = f"phases-{label}-{workers}"
            s["network"] = network
            s["topology"] = {"kind": "ps", "mode": "sync"}
            s["codec"] = {"kind": "none"}
            s["training"].update({"workers": workers, "steps": 1, "eval_samples": 100})
            found[workers] = one_step(args.gradwire, s, out)
        rows.append((network, found))
    print("| network | push, 8 workers (s) | pull, 8 workers (s) | push, 1 station (s) | "
          "pull, 1 station (s) | push / (8 x one station's) | pull / (8 x one station's) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for network, found in rows:
        eight = found[8]
        name = (f"{network['family']} {network.get('standard', '')} {network.get('width_mhz', '')}"
                .replace("  ", " ").strip())
        if 1 in found:
            one = found[1]
            print(f"| {name} | {eight['push_s']:.3f} | {eight['pull_s']:.3f} | {one['push_s']:.4f} | "
                  f"{one['pull_s']:.4f} | {eight['push_s'] / (8 * one['push_s']):.2f} | "
                  f"{eight['pull_s'] / (8 * one['pull_s']):.2f} |")
        else:
            print(f"| {name} | {eight['push_s']:.3f} | {eight['pull_s']:.3f} | - | - | - | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
