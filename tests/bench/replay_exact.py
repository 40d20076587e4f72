#!/usr/bin/python3
"""Train once, replay every network, checked on what gradwire ships: every shipped scenario and
the network studies, each at a few steps, replayed from a step trace and compared field by
field with the full co-simulation (wall-clock fields and `replayed_from` aside).

    tests/bench/replay_exact.py --gradwire build/gradwire [-j 2] [--steps N] [--out DIR]
        [--studies NAME ...] [scenario files or folders...]

Scenarios: each file under scenarios/ (or those named) is reduced as tests/bench/same_results.py
reduces it (N steps, default 3; measured compute and codec time as the gtx-1080ti profile, since
each run measures its own; short codec schedules; stand-in CIFAR and TorchScript files). Then:
  * `run --trace` on its own network. A scenario that cannot be replayed is refused (exit 2,
    naming the key): reported "refused (key)", which is correct, not a failure;
  * `run --replay` of that trace on the same network, compared with the recorded run;
  * for Ethernet scenarios, the same scenario at 10x and 1/10 of its rate: a full run and a
    replay of the first trace, compared with each other.
Studies (default: when-does-compression-help, dgc-1g-vs-10g, wireless-codecs): the sweep file
reduced the same way (a `set` of N steps, eval_every, eval_samples, profile compute), run with
`gradwire sweep` (runs that differ only in their network replay the first's training) and
with `--no-replay`; every run compared. Prints one line per check and a total; exit 0 when
nothing differs, 1 otherwise.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import same_results as sr  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STUDIES = ["when-does-compression-help", "dgc-1g-vs-10g", "wireless-codecs"]


def gradwire(binary, args, cwd):
    r = subprocess.run([str(binary)] + args, cwd=str(cwd), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return r.returncode, r.stdout, r.stderr


def rate_bps(text):
    """"100Mbps" -> 1e8 (the units scenarios write rates in)."""
    units = {"gbps": 1e9, "mbps": 1e6, "kbps": 1e3, "bps": 1.0}
    low = text.strip().lower()
    for unit, factor in units.items():
        if low.endswith(unit):
            return float(low[: -len(unit)]) * factor
    return float(low)


def run_dir(stdout):
    for line in stdout.splitlines():
        if line.startswith("results: "):
            return Path(line[len("results: "):])
    return None


def compare(a, b):
    """First difference of two run folders, `replayed_from` aside."""
    sr.ADDED_FIELDS.add("replayed_from")
    return sr.compare_runs(a, b)


def check_scenario(binary, path, doc, out):
    """Lines describing each check of one scenario."""
    lines = []
    work = out / sr.scenario_id(path)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    base = work / "scenario.json"
    base.write_text(json.dumps(doc, indent=1))
    code, stdout, stderr = gradwire(binary, ["run", str(base), "--out", str(work / "rec"),
                                             "--trace", "-q", "--set", "name=rec"], work)
    if code == 2 and "cannot be replayed" in stderr:
        key = stderr.strip().splitlines()[-1].split(":")[1].strip()
        return ["refused (%s)" % key], True
    if code != 0:
        return ["FAILED to record: %s" % sr.last_line(stderr)], False
    trace = run_dir(stdout)
    ok = True
    variants = [("same network", [])]
    network = doc.get("network", {})
    if network.get("family", "ethernet") == "ethernet" and isinstance(network.get("rate"), str):
        bps = rate_bps(network["rate"])
        for factor, label in ((10, "10x rate"), (0.1, "rate / 10")):
            variants.append((label, ["--set", "network.rate=%dbps" % round(bps * factor)]))
    for label, extra in variants:
        name = label.replace(" ", "-").replace("/", "div") if extra else "rec"
        if extra:
            code, stdout, stderr = gradwire(binary, ["run", str(base), "--out", str(work / "full"), "-q",
                                                     "--set", "name=" + name] + extra, work)
            if code != 0:
                lines.append("%s: FAILED full run: %s" % (label, sr.last_line(stderr)))
                ok = False
                continue
            reference = run_dir(stdout)
        else:
            reference = trace
        code, stdout, stderr = gradwire(binary, ["run", str(base), "--out", str(work / "rep"), "-q",
                                                 "--replay", str(trace), "--set", "name=" + name] + extra, work)
        if code != 0:
            lines.append("%s: FAILED replay: %s" % (label, sr.last_line(stderr)))
            ok = False
            continue
        d = compare(reference, run_dir(stdout))
        lines.append("%s: %s" % (label, "same" if d is None else "DIFFERENT " + d))
        ok = ok and d is None
    return lines, ok


def check_study(binary, name, steps, eval_samples, out, jobs):
    src = ROOT / "scenarios" / "studies" / (name + ".json")
    doc = json.loads(src.read_text())
    base = doc.get("base")
    if isinstance(base, str):
        doc["base"] = str((src.parent / base).resolve())
    doc["name"] = name
    s = doc.setdefault("set", {})
    s["training.steps"] = steps
    s["training.eval_every"] = max(1, (steps + 1) // 2)
    s["training.eval_samples"] = eval_samples
    s.pop("training.epochs", None)
    # Measured compute cannot be replayed (each run measures its own); the profile stands in.
    compute = s.get("compute")
    if isinstance(compute, dict) and compute.get("mode", "measured") == "measured":
        compute = dict(compute)
        compute.pop("scale", None)
        compute.update(sr.MEASURED_STANDIN)
        s["compute"] = compute
    elif "compute" not in s and "compute.mode" not in s:
        s["compute.mode"] = "profile"
        s["compute.profile"] = sr.MEASURED_STANDIN["profile"]
    work = out / ("study-" + name)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    sweep = work / "sweep.json"
    sweep.write_text(json.dumps(doc, indent=1))
    results = {}
    for label, extra in (("replayed", []), ("trained", ["--no-replay"])):
        code, stdout, stderr = gradwire(binary, ["sweep", str(sweep), "--out", str(work / label),
                                                 "-j", str(jobs), "-q"] + extra, work)
        if code != 0:
            return ["FAILED sweep (%s): %s" % (label, sr.last_line(stderr))], False
        results[label] = work / label / name
    lines, ok, replays = [], True, 0
    for run in sorted(p for p in results["trained"].iterdir() if (p / "summary.json").exists()):
        replayed = results["replayed"] / run.name
        summary = json.loads((replayed / "summary.json").read_text())
        replays += "replayed_from" in summary
        d = compare(run, replayed)
        if d is not None:
            lines.append("%s: DIFFERENT %s" % (run.name, d))
            ok = False
    runs = len(list(results["trained"].glob("*/summary.json")))
    lines.append("%d runs, %d replayed, %s" % (runs, replays, "all same" if ok else "some differ"))
    return lines, ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gradwire", required=True)
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--eval-samples", type=int, default=64)
    p.add_argument("--out", default="runs/replay-exact")
    p.add_argument("--studies", nargs="*", default=DEFAULT_STUDIES)
    p.add_argument("paths", nargs="*")
    args = p.parse_args()
    binary = Path(args.gradwire).resolve()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    files = sr.scenario_files(args.paths)
    declared = sr.codec_declarations(binary)
    inputs = sr.Inputs(out)
    failures = 0
    tasks = []
    for path in files:
        doc = json.loads(Path(path).read_text())
        if "gradwire_sweep" in doc:
            continue
        derived, changes = sr.derive(doc, args.steps, args.eval_samples, declared, inputs)
        if derived is None:
            print("%-60s skipped: %s" % (sr.display_path(path), changes))
            continue
        # Stand-ins are made under OUT; the runs start elsewhere.
        for section in ("dataset", "model"):
            part = derived.get(section)
            if isinstance(part, dict) and isinstance(part.get("path"), str) and \
                    not os.path.isabs(part["path"]) and (out / part["path"]).exists():
                part["path"] = str(out / part["path"])
        tasks.append((path, derived))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(check_scenario, binary, path, doc, out): path for path, doc in tasks}
        for future in concurrent.futures.as_completed(futures):
            lines, ok = future.result()
            failures += not ok
            print("%-60s %s" % (sr.display_path(futures[future]), "; ".join(lines)), flush=True)
    for name in args.studies:
        lines, ok = check_study(binary, name, args.steps, args.eval_samples, out, args.jobs)
        failures += not ok
        print("%-60s %s" % ("study " + name, "; ".join(lines)), flush=True)
    print("%d checks failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
