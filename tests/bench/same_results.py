#!/usr/bin/python3
"""Same simulated results from two gradwire binaries: every shipped scenario run for a few steps
by each, and their metrics.jsonl and summary.json compared field by field, wall-clock fields
aside. For a refactoring that must change no simulated result.

    tests/bench/same_results.py --before OLD/build/gradwire --after build/gradwire [-j 2]
    tests/bench/same_results.py --before OLD/build/gradwire --before-dir DIR [-j 2]   # once
    tests/bench/same_results.py --before-dir DIR --after build/gradwire [-j 2]        # reuse
      [--steps N] [--eval-samples N] [--out DIR] [--timeout S] [scenario files or folders...]

Runs from any folder; scenarios default to every file under the repository's scenarios/.
`--before BIN` runs the "before" half into `--before-dir` (default OUT/before): the derived
scenario files (below), their inputs and the runs, with manifest.json saying what was run. With
`--before-dir` alone an earlier before half is reused as it is (its steps, its inputs), so the
expensive half is made once. `--after BIN` runs the same derived files into OUT/after (OUT:
`--out`, default runs/same-results) and compares. Prints one line per scenario (same,
DIFFERENT with the first differing field, skipped with the reason) and a total; exit status 0
when nothing differs, 1 when a run differs or fails, 2 on bad arguments.

Which files run. A file with "gradwire_sweep" is a sweep (scenarios/studies/): skipped, its
runs are variations of the scenarios here. A file with "gradwire" is a scenario. One that the
before binary refuses (exit 2, a ConfigError) is run by the after binary too and reported
skipped when both refuse it, DIFFERENT when only one does.

What each scenario becomes (the same derived file for both binaries, kept in the before dir):
  * training: `steps` N (default 3; `epochs` removed), `eval_every` ceil(N/2) (with 3 steps,
    evaluations after steps 2 and 3), `eval_samples` 64 (--eval-samples);
  * compute: `threads` 1 and `device` "cpu" (results must not depend on the core count or on a
    GPU being present). `compute.mode` "measured" (explicit, or the default when the scenario
    has no `compute`, as the emulation scenarios) charges the wall time of each LibTorch step,
    codec call and optimizer step in simulated time, and bucket release times come from
    autograd's wall-clock hooks: two runs of one binary differ in every time. Such scenarios
    run with `"mode": "profile", "profile": "gtx-1080ti"` instead (`scale` and `codec_scale`
    removed), so their codec work is timed on that profile (codec_time "profile", as for the
    other profile scenarios) and every field repeats bit for bit; an explicit codec_time
    "measured" becomes "profile" likewise. Only compute times change: the same model, data,
    codec, scheme and network run;
  * codec schedules: a codec's integer parameters named *_steps or *_every (warm-up and
    phase lengths, refit and fine-tune intervals: DGC's warmup_stage_steps, GradiVeQ's
    warmup_steps/refit_every/refit_steps, LGC's warmup_steps/phase1_steps/ae_finetune_every)
    set to 1 when larger, and DGC's warmup_stage_steps 0 ("one epoch") too, so that 3 steps
    pass through every phase (DGC's densities 0.25, 0.0625, 0.0156; GradiVeQ dense, coded,
    dense for a refit; LGC's autoencoder trained for step 2 and fine-tuned for step 3);
    *_iters (LGC's autoencoder iterations) capped at 10. The parameters and their defaults come
    from the before binary's `gradwire codecs --json`; nested codec objects are treated alike;
  * faults: leave_at and rejoin_at scaled by N / the scenario's steps, so they fall at the same
    fraction of the shortened run;
  * data and models that are not on this machine: a CIFAR-10/100 folder that does not exist is
    replaced by small files in the binary format (inputs/cifar*, fixed pseudo-random bytes), a
    missing TorchScript file by `scripts/export-model --torchvision resnet18` (the command
    docs/scenarios.md gives) into inputs/. Relative paths that exist are made absolute.
Every change is listed per scenario in manifest.json ("changes").

What is compared: metrics.jsonl line by line (count, order, every field) and summary.json,
values and JSON types exact. Ignored: fields whose name ends in "wall_time_s", the wall-clock
fields (MetricsRecorder.h, docs/outputs.md): "wall_time_s" on step and eval lines of
metrics.jsonl and in summary.json (the run's wall time), and "ns3_wall_time_s" in summary.json
(wall time in ns-3's event loop). Everything else is simulated or counted and must repeat.
`--added NAME` (repeatable) also passes a field that only the after binary writes (a new
output, e.g. `energy`, `energy_j`, `energy_to_target_j`, `worker_busy_s`); every field the
before binary wrote is still compared.
scenario.json (the resolved input) is not compared. Both binaries run with the before dir as
their working folder.
"""
import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFEST_VERSION = 1
MEASURED_STANDIN = {"mode": "profile", "profile": "gtx-1080ti"}
EXIT_BAD_INPUT = 2  # gradwire's exit status for a ConfigError (docs/exit-codes.md)


# Fields the after binary writes and the before binary did not (--added): new outputs, not
# changed results. Anything the before binary wrote must still be there and equal.
ADDED_FIELDS = set()


def is_wall_clock(key):
    """The wall-clock fields: 'wall_time_s' (metrics.jsonl step/eval lines, summary.json) and
    'ns3_wall_time_s' (summary.json); docs/outputs.md: fields ending in wall_time_s differ
    between runs, everything else repeats with fixed or profile compute."""
    return key.endswith("wall_time_s")


# ---------------------------------------------------------------------------- scenario files

def scenario_files(args):
    paths = args or [str(ROOT / "scenarios")]
    files = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(p.rglob("*.json")))
        elif p.is_file():
            files.append(p)
        else:
            sys.exit("same_results.py: no such scenario file or folder: %s" % p)
    return [f.resolve() for f in files]


def scenario_id(path):
    """scenarios/codecs/dgc.json -> codecs/dgc (a folder name under runs/ and inputs/)."""
    try:
        rel = path.relative_to(ROOT / "scenarios")
    except ValueError:
        try:
            rel = Path("_other") / path.relative_to(ROOT)
        except ValueError:
            rel = Path("_other") / path.name
    return str(rel.with_suffix(""))


def display_path(path):
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def sha256_of(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def parse_duration(text):
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(s|ms|us|ns)\s*", text)
    if not m:
        raise ValueError("not a duration: %r" % text)
    return float(m.group(1)) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[m.group(2)]


def format_duration(seconds):
    return "%.12gus" % (seconds * 1e6)


# ---------------------------------------------------------------------------- stand-in inputs

def write_cifar(folder, hundred, per_file=64, test=64):
    """CIFAR-10 (label byte + 3072 pixel bytes) or CIFAR-100 (coarse and fine label bytes +
    3072) files of fixed pseudo-random content."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)

    def write(name, records):
        with open(folder / name, "wb") as out:
            for _ in range(records):
                if hundred:
                    fine = rng.randrange(100)
                    out.write(bytes([fine // 5, fine]))
                else:
                    out.write(bytes([rng.randrange(10)]))
                out.write(bytes(rng.getrandbits(8) for _ in range(3072)))

    if hundred:
        write("train.bin", 5 * per_file)
    else:
        for b in range(1, 6):
            write("data_batch_%d.bin" % b, per_file)
    write("test_batch.bin" if not hundred else "test.bin", test)


class Inputs:
    """The before dir's inputs/ folder: stand-ins made once, shared by the scenarios."""

    def __init__(self, before_dir):
        self.dir = before_dir / "inputs"
        self.lock = threading.Lock()

    def cifar(self, kind):
        with self.lock:
            folder = self.dir / ("%s-standin" % kind)
            if not (folder / ".done").exists():
                shutil.rmtree(folder, ignore_errors=True)
                write_cifar(folder, kind == "cifar100")
                (folder / ".done").write_text("")
            return str(folder.relative_to(self.dir.parent))

    def resnet18(self):
        with self.lock:
            out = self.dir / "resnet18-cifar10.pt"
            if not out.exists():
                self.dir.mkdir(parents=True, exist_ok=True)
                tmp = out.with_suffix(".tmp.pt")
                cmd = ["/usr/bin/python3", str(ROOT / "scripts" / "export-model"), "--torchvision",
                       "resnet18", "--input-shape", "3,32,32", "--classes", "10", "--out", str(tmp)]
                r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True)
                if r.returncode != 0:
                    return None, "scripts/export-model failed: " + last_line(r.stderr)
                tmp.rename(out)
            return str(out.relative_to(self.dir.parent)), None


# ---------------------------------------------------------------------------- derivation

def codec_declarations(binary):
    r = subprocess.run([binary, "codecs", "--json"], stdout=subprocess.PIPE, text=True,
                       check=True)
    return {c["kind"]: c["params"] for c in json.loads(r.stdout)}


def shrink_codec(codec, declared, where, changes):
    """Schedules of a codec (and of codecs nested in it) shortened to fit a few steps."""
    if not isinstance(codec, dict) or codec.get("kind") not in declared:
        return
    for p in declared[codec["kind"]]:
        name, kind = p["name"], p["type"]
        value = codec.get(name, p["default"])
        if kind == "codec object":
            shrink_codec(codec.get(name), declared, where + "." + name, changes)
            continue
        if kind != "integer" or not isinstance(value, int):
            continue
        new = value
        if name.endswith("_steps") or name.endswith("_every"):
            if value > 1 or (value == 0 and name == "warmup_stage_steps"):
                new = 1
        elif name.endswith("_iters") and value > 10:
            new = 10
        if new != value:
            codec[name] = new
            changes.append("%s.%s %s -> %s" % (where, name, value, new))


def resolve_path(value):
    """A path from the scenario, relative ones read from the repository root."""
    p = Path(value)
    return p if p.is_absolute() else ROOT / p


def derive(doc, steps, eval_samples, declared, inputs):
    """The scenario to run, and the list of what was changed; or (None, reason) when it cannot
    be prepared here."""
    doc = json.loads(json.dumps(doc))
    changes = []
    t = doc.setdefault("training", {})
    original_steps = t.get("steps")
    if "epochs" in t:
        changes.append("training.epochs %s removed" % t.pop("epochs"))
    t["steps"] = steps
    t["eval_every"] = max(1, math.ceil(steps / 2))
    t["eval_samples"] = eval_samples
    changes.append("training.steps %s, eval_every %d, eval_samples %d"
                   % (steps, t["eval_every"], eval_samples))

    c = doc.setdefault("compute", {})
    if c.get("mode", "measured") == "measured":
        for key in ("mode", "scale", "codec_scale"):
            c.pop(key, None)
        c.update(MEASURED_STANDIN)
        changes.append("compute.mode measured -> profile gtx-1080ti")
    if c.get("codec_time") == "measured":
        c["codec_time"] = "profile"
        c.pop("codec_scale", None)
        if "profile" not in c:
            c["codec_device"] = MEASURED_STANDIN["profile"]
        changes.append("compute.codec_time measured -> profile")
    c["threads"] = 1
    c["device"] = "cpu"

    if isinstance(doc.get("codec"), dict):
        shrink_codec(doc["codec"], declared, "codec", changes)

    if isinstance(doc.get("faults"), list):
        # The default steps (100) where the scenario gives epochs: it runs as long as it did.
        ratio = steps / float(original_steps or 100)
        for f in doc["faults"]:
            for key in ("leave_at", "rejoin_at"):
                if isinstance(f, dict) and isinstance(f.get(key), str):
                    new = format_duration(parse_duration(f[key]) * ratio)
                    changes.append("faults rank %s %s %s -> %s" % (f.get("rank"), key, f[key], new))
                    f[key] = new

    d = doc.get("dataset")
    if isinstance(d, dict) and isinstance(d.get("path"), str):
        kind = d.get("kind")
        path = resolve_path(d["path"])
        if path.exists():
            d["path"] = str(path)
        elif kind in ("cifar10", "cifar100"):
            d["path"] = inputs.cifar(kind)
            changes.append("dataset.path %s (absent) -> stand-in %s" % (path, d["path"]))
    m = doc.get("model")
    if isinstance(m, dict) and isinstance(m.get("path"), str):
        path = resolve_path(m["path"])
        if path.exists():
            m["path"] = str(path)
        elif m.get("kind") == "torchscript":
            standin, problem = inputs.resnet18()
            if problem:
                return None, "model.path %s absent and %s" % (m["path"], problem)
            changes.append("model.path %s (absent) -> %s (export-model resnet18)"
                           % (m["path"], standin))
            m["path"] = standin
    return doc, changes


# ---------------------------------------------------------------------------- running

def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def run_one(binary, scenario, out_parent, cwd, timeout):
    """Runs `gradwire run`; returns {exit, seconds, run_dir, message}."""
    shutil.rmtree(out_parent, ignore_errors=True)
    out_parent.mkdir(parents=True)
    start = time.monotonic()
    try:
        r = subprocess.run([str(binary), "run", str(scenario), "--out", str(out_parent), "-q"],
                           cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"exit": None, "seconds": round(time.monotonic() - start, 2), "run_dir": None,
                "message": "timed out after %d s" % timeout}
    seconds = round(time.monotonic() - start, 2)
    (out_parent / "stderr.txt").write_text(r.stderr)
    run_dir = None
    m = re.search(r"^results: (.*)$", r.stdout, re.M)
    if r.returncode == 0 and m:
        run_dir = str(Path(m.group(1)).resolve().relative_to(out_parent.resolve()))
    return {"exit": r.returncode, "seconds": seconds, "run_dir": run_dir,
            "message": last_line(r.stderr)}


def parallel(jobs, tasks, label):
    """Runs (key, function) tasks on `jobs` threads; prints a progress line per task."""
    results = {}
    done = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(fn): key for key, fn in tasks}
        for fut in concurrent.futures.as_completed(futures):
            key = futures[fut]
            results[key] = fut.result()
            done += 1
            r = results[key]
            what = ("exit %s" % r["exit"]) if r["exit"] != 0 else "ok"
            print("  [%d/%d] %s %s: %s, %.1f s" % (done, len(tasks), label, key, what,
                                                  r["seconds"]), file=sys.stderr, flush=True)
    return results


def make_before(args, files):
    before_dir = Path(args.before_dir).resolve()
    before_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = before_dir / "manifest.json"
    manifest = {"version": MANIFEST_VERSION, "scenarios": {}}
    if manifest_path.exists():
        old = json.loads(manifest_path.read_text())
        if old.get("steps") == args.steps and old.get("eval_samples") == args.eval_samples:
            manifest = old  # add to it (other scenarios keep their runs)
    binary = Path(args.before).resolve()
    manifest.update({"version": MANIFEST_VERSION, "steps": args.steps,
                     "eval_samples": args.eval_samples, "binary": str(binary),
                     "binary_sha256": sha256_of(binary)})
    declared = codec_declarations(str(binary))
    inputs = Inputs(before_dir)
    tasks = []
    entries = {}
    for f in files:
        sid = scenario_id(f)
        entry = {"file": display_path(f), "sha256": sha256_of(f)}
        entries[sid] = entry
        try:
            doc = json.loads(f.read_text())
        except ValueError as e:
            entry.update(status="skipped", reason="not JSON: %s" % e)
            continue
        if not isinstance(doc, dict) or "gradwire" not in doc:
            entry.update(status="skipped", reason=(
                "sweep file (gradwire_sweep): its runs vary the scenarios checked here"
                if isinstance(doc, dict) and "gradwire_sweep" in doc
                else "not a scenario (no \"gradwire\" key)"))
            continue
        derived, changes = derive(doc, args.steps, args.eval_samples, declared, inputs)
        if derived is None:
            entry.update(status="skipped", reason=changes)
            continue
        scenario = before_dir / "scenarios" / (sid + ".json")
        scenario.parent.mkdir(parents=True, exist_ok=True)
        scenario.write_text(json.dumps(derived, indent=1) + "\n")
        entry.update(scenario=str(scenario.relative_to(before_dir)), changes=changes)
        out_parent = before_dir / "runs" / sid
        tasks.append((sid, lambda s=scenario, o=out_parent:
                      run_one(binary, s, o, before_dir, args.timeout)))
    start = time.monotonic()
    print("before: %d runs of %s, -j %d, into %s" % (len(tasks), binary, args.jobs, before_dir),
          file=sys.stderr)
    results = parallel(args.jobs, tasks, "before")
    elapsed = time.monotonic() - start
    for sid, r in results.items():
        e = entries[sid]
        e.update(r)
        e["status"] = ("ran" if r["exit"] == 0 and r["run_dir"]
                       else "refused" if r["exit"] == EXIT_BAD_INPUT else "failed")
        if e["status"] == "refused":
            e["reason"] = "the before binary refuses it: " + r["message"]
        elif e["status"] == "failed":
            e["reason"] = "the before binary failed (exit %s): %s" % (r["exit"], r["message"])
    manifest["scenarios"].update(entries)
    manifest["before_seconds"] = round(elapsed, 1)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print("before: %d runs in %.0f s (%.1f min)" % (len(tasks), elapsed, elapsed / 60),
          file=sys.stderr)
    return manifest


# ---------------------------------------------------------------------------- comparison

def first_difference(a, b, where):
    """The first field where a and b differ (wall-clock fields aside), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if is_wall_clock(key):
                continue
            if key not in b:
                return "%s.%s: only before (%s)" % (where, key, json.dumps(a[key]))
            if key not in a:
                if key in ADDED_FIELDS:
                    continue
                return "%s.%s: only after (%s)" % (where, key, json.dumps(b[key]))
            d = first_difference(a[key], b[key], "%s.%s" % (where, key))
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (where, i))
            if d:
                return d
        if len(a) != len(b):
            return "%s: %d elements before, %d after" % (where, len(a), len(b))
        return None
    if type(a) is not type(b) or a != b:
        return "%s: %s before, %s after" % (where, json.dumps(a), json.dumps(b))
    return None


def compare_runs(before_run, after_run):
    for name in ("summary.json", "metrics.jsonl"):
        pa, pb = before_run / name, after_run / name
        if not pb.exists():
            return "%s missing after" % name
        if name == "summary.json":
            d = first_difference(json.loads(pa.read_text()), json.loads(pb.read_text()), name)
            if d:
                return d
            continue
        la = pa.read_text().splitlines()
        lb = pb.read_text().splitlines()
        for i, (x, y) in enumerate(zip(la, lb), 1):
            ja, jb = json.loads(x), json.loads(y)
            label = "%s line %d (%s%s)" % (name, i, ja.get("type"),
                                           " %s" % ja["step"] if "step" in ja else "")
            d = first_difference(ja, jb, label)
            if d:
                return d
        if len(la) != len(lb):
            return "%s: %d lines before, %d after" % (name, len(la), len(lb))
    return None


def make_after_and_compare(args, manifest, selected):
    before_dir = Path(args.before_dir).resolve()
    after_dir = Path(args.out).resolve() / "after"
    binary = Path(args.after).resolve()
    tasks = []
    for sid in selected:
        e = manifest["scenarios"][sid]
        if e["status"] in ("ran", "refused"):
            tasks.append((sid, lambda s=before_dir / e["scenario"], o=after_dir / sid:
                          run_one(binary, s, o, before_dir, args.timeout)))
    start = time.monotonic()
    print("after: %d runs of %s, -j %d, into %s" % (len(tasks), binary, args.jobs, after_dir),
          file=sys.stderr)
    results = parallel(args.jobs, tasks, "after")
    elapsed = time.monotonic() - start
    counts = {"same": 0, "DIFFERENT": 0, "skipped": 0, "ERROR": 0}
    for sid in selected:
        e = manifest["scenarios"][sid]
        name = e["file"]
        if e["status"] == "skipped":
            status, detail = "skipped", e["reason"]
        elif e["status"] == "failed":
            status, detail = "ERROR", e["reason"]
        else:
            r = results[sid]
            if e["status"] == "refused":
                if r["exit"] == EXIT_BAD_INPUT:
                    status, detail = "skipped", "both binaries refuse it: " + r["message"]
                else:
                    status, detail = "DIFFERENT", ("the before binary refuses it (%s), the after "
                                                   "exits %s" % (e["message"], r["exit"]))
            elif r["exit"] != 0 or not r["run_dir"]:
                status, detail = "DIFFERENT", "the after run failed (exit %s): %s" % (
                    r["exit"], r["message"])
            else:
                d = compare_runs(before_dir / "runs" / sid / e["run_dir"],
                                 after_dir / sid / r["run_dir"])
                status, detail = ("DIFFERENT", d) if d else ("same", "")
                if not d and any("stand-in" in c or "export-model" in c
                                 for c in e.get("changes", [])):
                    detail = "(stand-in data or model)"
        counts[status] += 1
        print("%-9s %s%s" % (status, name, ("  " + detail) if detail else ""), flush=True)
    print("total: %d scenario files: %d same, %d DIFFERENT, %d skipped, %d errors "
          "(before: %s, %d steps; after: %.0f s)"
          % (len(selected), counts["same"], counts["DIFFERENT"], counts["skipped"],
             counts["ERROR"], manifest["binary"], manifest["steps"], elapsed))
    return 0 if counts["DIFFERENT"] == 0 and counts["ERROR"] == 0 else 1


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", help="scenario files or folders (default: scenarios/)")
    ap.add_argument("--before", help="the before binary: (re)make the before half")
    ap.add_argument("--after", help="the after binary: run it and compare")
    ap.add_argument("--before-dir", help="the before half's folder (default OUT/before); "
                    "without --before, reused as it is")
    ap.add_argument("--out", default=str(ROOT / "runs" / "same-results"),
                    help="OUT: where after/ (and by default before/) go (default runs/same-results)")
    ap.add_argument("--steps", type=int, default=3, help="steps per run (default 3)")
    ap.add_argument("--eval-samples", type=int, default=64,
                    help="test samples per evaluation (default 64)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="runs at a time (default 1)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per run (default 1800)")
    ap.add_argument("--added", action="append", default=[],
                    help="a field only the after binary writes, not compared (repeatable), "
                         "e.g. --added energy --added energy_j")
    args = ap.parse_args()
    ADDED_FIELDS.update(args.added)
    if not args.before and not args.after:
        ap.error("give --before, --after or both")
    if args.steps < 1 or args.jobs < 1 or args.eval_samples < 1:
        ap.error("--steps, --eval-samples and --jobs must be at least 1")
    if not args.before and not args.before_dir:
        ap.error("--after alone needs --before-dir (an earlier before half)")
    args.before_dir = args.before_dir or str(Path(args.out) / "before")
    for b in (args.before, args.after):
        if b and not os.access(b, os.X_OK):
            ap.error("not an executable: %s" % b)

    files = scenario_files(args.scenarios)
    if args.before:
        manifest = make_before(args, files)
    else:
        path = Path(args.before_dir) / "manifest.json"
        if not path.exists():
            ap.error("%s: no manifest.json (make it with --before)" % args.before_dir)
        manifest = json.loads(path.read_text())
        if "--steps" in sys.argv or "--eval-samples" in sys.argv:
            print("note: the before dir's steps (%d) and eval samples (%d) are used"
                  % (manifest["steps"], manifest["eval_samples"]), file=sys.stderr)
    by_file = {e["file"]: sid for sid, e in manifest["scenarios"].items()}
    selected = []
    for f in files:
        sid = by_file.get(display_path(f))
        if sid is None:
            sys.exit("same_results.py: %s is not in %s (run the before half for it)"
                     % (display_path(f), args.before_dir))
        if manifest["scenarios"][sid]["sha256"] != sha256_of(f):
            print("warning: %s changed since the before half was made" % display_path(f),
                  file=sys.stderr)
        selected.append(sid)
    if not args.after:
        counts = {}
        for sid in selected:
            e = manifest["scenarios"][sid]
            counts[e["status"]] = counts.get(e["status"], 0) + 1
            detail = e.get("reason") or "%.1f s" % e.get("seconds", 0)
            print("%-9s %s  %s" % (e["status"], e["file"], detail))
        print("total: %d scenario files: %s; before half %.0f s"
              % (len(selected), ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())),
                 manifest.get("before_seconds", 0)))
        return 1 if counts.get("failed") else 0
    return make_after_and_compare(args, manifest, selected)


if __name__ == "__main__":
    sys.exit(main())
