#!/usr/bin/env bash
# How far `gradwire advise` is off: advise on a scenario within a budget, then full runs of the
# same codecs with the same fixed compute, and a table of projected against measured times to
# target. docs/advise.md quotes its output.
#
# Usage: tests/bench/advise_vs_full.sh SCENARIO BUDGET_MINUTES OUT_DIR [--set path=value ...]
# (from the repository root, after ./scripts/build). Takes about twice the budget.
set -euo pipefail
scenario=$1; budget=$2; out=$3; shift 3
gradwire=./build/gradwire
rm -rf "$out"; mkdir -p "$out"
"$gradwire" advise "$scenario" --budget "$budget" -j 2 --out "$out" "$@" > "$out/advise.out"
advise_dir=$(ls -d "$out"/advise-*)
/usr/bin/python3 - "$scenario" "$advise_dir" "$out" "$@" <<'PY'
import json, sys
scenario, advise_dir, out, sets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
plan = json.load(open(advise_dir + "/plan.json"))
base = json.load(open(scenario))
for i in range(1, len(sets), 2):  # --set path=value pairs, values as JSON when they parse
    path, value = sets[i].split("=", 1)
    try:
        value = json.loads(value)
    except ValueError:
        pass
    node, keys = base, path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
compute = {"mode": "fixed", "seconds": plan["fixed_compute_s"], "codec_time": "measured"}
if plan["fixed_compute_s"] is None:
    compute = base.get("compute", {})
json.dump(base, open(out + "/base.json", "w"))
json.dump({"gradwire_sweep": 1, "name": "full", "base": "base.json", "set": {"compute": compute},
           "zip": {"codec": [c["codec"] for c in plan["candidates"]]}},
          open(out + "/full.json", "w"), indent=1)
PY
"$gradwire" sweep "$out/full.json" -j 2 --out "$out" -q > /dev/null
/usr/bin/python3 - "$advise_dir" "$out/full/results.csv" <<'PY'
import csv, json, sys
advice = json.load(open(sys.argv[1] + "/advice.json"))
full = {r["run"]: r for r in csv.DictReader(open(sys.argv[2]))}
print(f"screening {advice['screening_steps']} of {advice['full_steps']} steps; pilot and screening "
      f"{advice['elapsed_s']:.0f} s of a {advice['budget_s']:.0f} s budget")
print("| codec | advise | how | full run | error |")
print("|---|---|---|---|---|")
best = None
for e in advice["ranking"]:
    measured = full.get(e["run"], {}).get("time_to_target_s") or None
    measured = float(measured) if measured else None
    if measured is not None and (best is None or measured < best[1]):
        best = (e["label"], measured)
    mine = e.get("time_to_target_s")
    error = "%+.1f%%" % (100 * (mine / measured - 1)) if mine and measured else "-"
    print(f"| {e['label']} | {'-' if mine is None else '%.3g s' % mine} | {e['how']} | "
          f"{'-' if measured is None else '%.3g s' % measured} | {error} |")
print(f"advise's first choice: {advice['ranking'][0]['label']}; fastest full run: {best[0] if best else '-'}")
PY
