#!/bin/bash
# Train once, replay every network: wall time of a network sweep trained in full against the same
# sweep trained once and replayed (docs/performance.md, "Train once, replay every network").
#
#   tests/bench/replay_bench.sh [build/gradwire] [OUT_DIR]
#
# Two workloads over four Ethernet networks (100 Mbit/s, 1, 10 and 25 Gbit/s):
#   * the quickstart (LeNet, Fashion-MNIST, 4 workers, 600 steps, top-k 1% with error feedback),
#     its compute as the gtx-1080ti profile instead of measured (measured compute is never
#     replayed: each run measures its own);
#   * ResNet-20 on CIFAR-shaped synthetic data (no CIFAR files ship), 8 workers, 200 steps,
#     batch 16, dense ring, rtx-4090 profile, evaluations every 100 steps on 512 samples.
# For each: every network trained in full (one `gradwire run` each), then the first network
# trained with --trace and the other three replayed from it. Prints each run's wall time, the
# replays' share of one training, the train-once sweep's cost in trainings (goal: at most 1.3
# for 4 networks; FULL_RUNS=N trains only the first N networks in full, to save time), the trace's size per 1000 steps, and whether each replay's outputs equal the
# full run's (wall-clock fields aside). Run it on an otherwise idle machine: only ratios within
# one run mean anything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
gradwire=$(realpath "${1:-$root/build/gradwire}")
out=$(realpath -m "${2:-$root/runs/replay-bench}")
rm -rf "$out"
mkdir -p "$out"
rates=(1Gbps 100Mbps 10Gbps 25Gbps)

seconds() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_time_s'])" "$1"; }

# workload NAME SCENARIO --set ...
workload() {
  local name=$1 scenario=$2
  shift 2
  local dir="$out/$name"
  mkdir -p "$dir"
  echo "== $name"
  local full=() replay=()
  for rate in "${rates[@]}"; do
    # FULL_RUNS=N trains only the first N networks in full (the others' rows then say "-").
    if [ "${#full[@]}" -ge "${FULL_RUNS:-${#rates[@]}}" ]; then
      full+=("nan")
      continue
    fi
    "$gradwire" run "$scenario" --out "$dir/full" -q "$@" --set "name=$rate" --set "network.rate=$rate" >/dev/null
    full+=("$(seconds "$dir/full/$rate/summary.json")")
  done
  "$gradwire" run "$scenario" --out "$dir/replay" -q --trace "$@" --set "name=${rates[0]}" \
    --set "network.rate=${rates[0]}" >/dev/null
  replay+=("$(seconds "$dir/replay/${rates[0]}/summary.json")")
  for rate in "${rates[@]:1}"; do
    "$gradwire" run "$scenario" --out "$dir/replay" -q "$@" --set "name=$rate" \
      --set "network.rate=$rate" --replay "$dir/replay/${rates[0]}" >/dev/null
    replay+=("$(seconds "$dir/replay/$rate/summary.json")")
  done
  /usr/bin/python3 - "$dir" "${rates[*]}" "${full[*]}" "${replay[*]}" <<'EOF'
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[0] if sys.argv[0] != "-" else ".")), ""))
d, rates, full, replay = sys.argv[1], sys.argv[2].split(), [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]

def outputs(run):
    lines = []
    for line in open(os.path.join(run, "metrics.jsonl")):
        j = json.loads(line)
        j.pop("wall_time_s", None)
        lines.append(j)
    s = json.load(open(os.path.join(run, "summary.json")))
    for k in ("wall_time_s", "ns3_wall_time_s", "replayed_from"):
        s.pop(k, None)
    return lines, s

print("%-10s %12s %12s %10s" % ("network", "full (s)", "train-once (s)", "outputs"))
import math
for i, rate in enumerate(rates):
    trained = not math.isnan(full[i])
    same = trained and outputs(os.path.join(d, "full", rate)) == outputs(os.path.join(d, "replay", rate))
    print("%-10s %12s %12.2f %10s" % (rate, "%.2f" % full[i] if trained else "-", replay[i],
                                      "recorded" if i == 0 else ("identical" if same else
                                                                 ("DIFFER" if trained else "-"))))
one = full[0]
print("trace recording overhead: %.1f %% of one training" % (100 * (replay[0] - one) / one))
print("replays together: %.1f %% of one training" % (100 * sum(replay[1:]) / one))
trained = [x for x in full if not math.isnan(x)]
print("sweep of %d networks: full %.2f trainings (%s), train once %.2f trainings" %
      (len(rates), sum(trained) / one * len(rates) / len(trained),
       "measured" if len(trained) == len(rates) else "%d measured, scaled" % len(trained),
       sum(replay) / one))
trace = os.path.join(d, "replay", rates[0], "trace", "steps.gwtrace")
steps = json.load(open(os.path.join(d, "replay", rates[0], "summary.json")))["steps"]
print("trace: %d bytes for %d steps, %.2f MB per 1000 steps" %
      (os.path.getsize(trace), steps, os.path.getsize(trace) / steps * 1000 / 1e6))
EOF
}

workload quickstart "$root/scenarios/quickstart.json" \
  --set 'compute={"mode": "profile", "profile": "gtx-1080ti", "threads": 1}'
# The shipped ResNet-20 workload, for 200 steps (not epochs) on data of CIFAR's shape.
/usr/bin/python3 - "$root/scenarios/workloads/resnet20-cifar10-ring-1gbe.json" "$out/resnet20.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["training"].pop("epochs")
doc["training"].update({"steps": 200, "eval_every": 100, "eval_samples": 512})
doc["dataset"] = {"kind": "synthetic", "shape": [3, 32, 32], "classes": 10,
                  "train_samples": 8192, "test_samples": 512}
doc["compute"] = {"mode": "profile", "profile": "rtx-4090", "threads": 1}
json.dump(doc, open(sys.argv[2], "w"), indent=1)
EOF
workload resnet20 "$out/resnet20.json"
