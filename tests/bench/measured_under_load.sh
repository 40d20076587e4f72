#!/usr/bin/env bash
# Does a `measured` run's answer depend on what else the machine runs? Runs a scenario with
# `compute.mode` measured (default: the quickstart) once on a quiet machine and once beside
# BUSY busy-loop processes (default 2), and prints both simulated times to target, their ratio,
# the runs' wall times and any warning summary.json carries. docs/scenarios.md quotes it.
#
# Usage: tests/bench/measured_under_load.sh [SCENARIO] [OUT_DIR] [--set path=value ...]
# (from the repository root, after ./scripts/build; GRADWIRE=path picks another binary,
# BUSY=n the number of busy loops). The quickstart takes about 10 s quiet and under a minute
# beside two busy loops on 2 cores. "Quiet" means nothing of this script's own: other programs
# running meanwhile load both runs alike.
set -euo pipefail
scenario=${1:-scenarios/quickstart.json}
out=${2:-$(mktemp -d)}
shift $(( $# < 2 ? $# : 2 ))
gradwire=${GRADWIRE:-./build/gradwire}
busy=${BUSY:-2}
rm -rf "$out/quiet" "$out/busy"; mkdir -p "$out/quiet" "$out/busy"

run() {  # run DIR: one run of the scenario into DIR; prints its wall seconds
  local dir=$1 start end
  shift
  start=$(date +%s.%N)
  "$gradwire" run "$scenario" --out "$dir" -q "$@" 2> "$dir/stderr" > /dev/null
  end=$(date +%s.%N)
  /usr/bin/python3 -c "print(f'{$end - $start:.1f}')"
}

loops=()
stop_loops() { for pid in "${loops[@]}"; do kill "$pid" 2> /dev/null || true; done; }
trap stop_loops EXIT

quiet_wall=$(run "$out/quiet" "$@")
for _ in $(seq "$busy"); do
  /usr/bin/python3 -c 'while True: pass' &
  loops+=("$!")
done
sleep 1  # let the loops take their cores
busy_wall=$(run "$out/busy" "$@")
stop_loops; loops=()

/usr/bin/python3 - "$out" "$quiet_wall" "$busy_wall" "$busy" <<'PY'
import glob, json, sys
out, quiet_wall, busy_wall, busy = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def summary(kind):
    return json.load(open(glob.glob(f"{out}/{kind}/*/summary.json")[0]))
q, b = summary("quiet"), summary("busy")
print(f"| run | simulated time to target | final accuracy | wall | warnings |")
print(f"|---|---|---|---|---|")
for label, s, wall in (("quiet", q, quiet_wall), (f"beside {busy} busy loops", b, busy_wall)):
    t = s.get("time_to_target_s")
    acc = s.get("final_accuracy")
    print(f"| {label} | {t if t is None else f'{t:.3f} s'} | "
          f"{acc if acc is None else f'{acc:.4f}'} | {wall} s | {len(s.get('warnings', []))} |")
tq, tb = q.get("time_to_target_s"), b.get("time_to_target_s")
if tq and tb:
    print(f"busy / quiet: {tb / tq:.3f} ({abs(tb / tq - 1) * 100:.1f} % apart)")
else:
    print("busy / quiet: no ratio (a run did not reach the target)")
for w in b.get("warnings", []):
    print(f"busy run's warning: {w}")
PY
