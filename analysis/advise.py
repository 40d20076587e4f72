#!/usr/bin/env python3
"""The projection and ranking behind `gradwire advise`: from screening runs (each codec trained
for a prefix of the scenario's steps), the time each would take to reach the scenario's target,
ranked, with its accuracy cost. Writes advice.json and advice.md beside the plan.

Usage: analysis/advise.py --plan ADVISE_DIR/plan.json [--elapsed-s SECONDS] [--rank-by time|energy]

--rank-by energy ranks by the projected energy to target (every worker's joules, summary.json's
energy; runs whose workers run on named device profiles) instead of the time.

plan.json is written by `gradwire advise`: the scenario's steps and evaluation interval, the
screening's steps and folder, and one entry per screened codec (its run name). Standard library
only. How the projection is made and how far it can be off: docs/advise.md.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as run_folders  # noqa: E402  (analysis/runs.py: loading run folders)

# Evaluations before this fraction of the screening are left out of the fit: the first steps
# of training do not follow the power law of the later ones.
FIT_FROM = 0.25
# The most of a screening a codec's warm-up may take for its curve to be projected.
SETTLED_SHARE = 0.5
# Fewest evaluations a curve is fitted to.
MIN_POINTS = 3
# A projection further than this many times the scenario's steps is not a projection.
MAX_REACH = 50


def read_plan(path):
    """plan.json as `gradwire advise` writes it; RunError naming the file and key otherwise."""
    plan = run_folders.read_json_object(path)
    c = run_folders.Checked(path, plan)
    c.string("name", required=True)
    c.string("screening", required=True)
    for key in ("full_steps", "eval_every", "screening_steps", "screening_eval_every"):
        c.integer(key, required=True, minimum=1)
    c.number("budget_s", required=True, nullable=False, minimum=0)
    c.number("fixed_compute_s", minimum=0)
    for i, cand in enumerate(c.array("candidates", required=True)):
        if not isinstance(cand, dict):
            raise run_folders.RunError(f"{path}: candidates[{i}]: expected a JSON object")
        entry = run_folders.Checked(path, cand, f"candidates[{i}].")
        for key in ("run", "family", "label"):
            entry.string(key, required=True)
        entry.obj("codec", required=True)
        entry.integer("settled_after", minimum=0)
    return plan


def load_run(folder):
    """A screened codec's run: the simulated time at each step ({step: seconds}), its
    evaluations and bytes per step; None when the screening left no finished run there.
    RunError when its files cannot be read (a folder where one belongs included)."""
    if not all(os.path.lexists(os.path.join(folder, name))
               for name in (run_folders.SUMMARY_FILE, run_folders.SCENARIO_FILE)):
        return None
    run = run_folders.load(folder)
    # Cumulative joules at each step, where the run's devices are named (else empty).
    energy = {rec["step"]: rec["energy_j"] for rec in run.steps
              if isinstance(rec.get("energy_j"), (int, float))}
    return {"steps": {rec["step"]: rec["sim_time_s"] for rec in run.steps}, "evals": run.evals,
            "bytes_per_step": run.bytes_per_step, "energy": energy}


def target_of(training):
    """The Target of a screening run's training object, or None when it has neither target."""
    accuracy, perplexity = training.get("target_accuracy"), training.get("target_perplexity")
    if accuracy or perplexity:
        return Target(accuracy, perplexity)
    return None


class Target:
    """The scenario's target as an error that falls towards 0: 1 - accuracy, or log perplexity."""

    def __init__(self, accuracy, perplexity):
        self.accuracy, self.perplexity = accuracy, perplexity
        if accuracy:
            self.error = 1.0 - accuracy
            self.text = f"{100 * accuracy:g}% test accuracy"
        else:
            self.error = math.log(perplexity)
            self.text = f"perplexity {perplexity:g}"

    def error_of(self, ev):
        if self.accuracy:
            acc = ev.get("accuracy")
            return None if acc is None else 1.0 - acc
        ppl = ev.get("perplexity")
        return None if ppl is None or ppl <= 0 else math.log(ppl)

    def reached(self, ev):
        err = self.error_of(ev)
        return err is not None and err <= self.error

    def quality(self, ev):
        """Accuracy, or perplexity, of an evaluation."""
        return ev.get("accuracy") if self.accuracy else ev.get("perplexity")


def fit_power_law(points):
    """Least squares of log error = log k - alpha log step; (k, alpha) or None."""
    pts = [(math.log(s), math.log(e)) for s, e in points if s > 0 and e and e > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    if my - slope * mx > 700:  # k beyond what a float holds: no curve to project
        return None
    return math.exp(my - slope * mx), -slope


def pace(run, screening_steps, settled_after=0, series="steps"):
    """Simulated seconds (series "energy": joules) per step over the screening's second half,
    or from the end of the codec's warm-up when that is later (a warm-up sends more per step)."""
    steps = run[series]
    last = max(steps)
    start = max(screening_steps // 2, settled_after)
    half = max((s for s in steps if s <= start), default=min(steps))
    if last == half:
        return steps[last] / max(1, last)
    return (steps[last] - steps[half]) / (last - half)


def assess(run, plan, target, settled_after=0):
    """Time to target as the scenario's own run would report it (at its evaluation interval)."""
    every, screened, full = plan["eval_every"], plan["screening_steps"], plan["full_steps"]
    out = {"how": "not projected", "time_to_target_s": None, "steps_to_target": None,
           "within_scenario_steps": None, "fit": None, "energy_to_target_j": None}
    for ev in run["evals"]:
        if ev["step"] % every == 0 and target.reached(ev):
            out.update(how="measured", time_to_target_s=ev["sim_time_s"], steps_to_target=ev["step"],
                       within_scenario_steps=True, time_range_s=[ev["sim_time_s"], ev["sim_time_s"]])
            joules = ev.get("energy_j")
            if isinstance(joules, (int, float)):
                out.update(energy_to_target_j=joules, energy_range_j=[joules, joules])
            return out
    # A curve just out of a warm-up is still recovering from it: less than half a screening
    # after the warm-up, its slope says little about where it is heading.
    if settled_after > screened * SETTLED_SHARE:
        out["reason"] = (f"its warm-up ({settled_after} steps) leaves less than half of the "
                         "screening after it; give a larger --budget")
        return out
    start = max(FIT_FROM * screened, settled_after)
    points = [(ev["step"], target.error_of(ev)) for ev in run["evals"] if ev["step"] > start]
    if len(points) < MIN_POINTS:
        out["reason"] = "too few evaluations to fit"
        return out
    fit = fit_power_law(points)
    if fit is None or fit[1] <= 0:
        out["reason"] = "not improving over the screening's later evaluations"
        return out
    k, alpha = fit
    # How far the evaluations scatter around the fitted curve (in error units): the target is
    # as likely crossed where the curve is that much above or below it.
    residuals = [e - k * s ** -alpha for s, e in points]
    spread = math.sqrt(sum(r * r for r in residuals) / max(1, len(residuals) - 2))
    out["fit"] = {"k": k, "alpha": alpha, "points": len(points), "spread": spread}

    def crossing(error):
        """The scenario's first evaluation after the screening at which the curve is below
        `error`, or None when the curve never gets there."""
        if error <= 0:
            return None
        # Past MAX_REACH times the scenario's steps the crossing is not used; a float may not
        # hold how far past it is.
        if math.log(k / error) / alpha > math.log(MAX_REACH * full + 1):
            return math.inf
        step = (k / error) ** (1.0 / alpha)
        return max(math.ceil(step / every), screened // every + 1) * every

    step = crossing(target.error)
    if step is None or step > MAX_REACH * full:
        out["reason"] = f"beyond {MAX_REACH} times the scenario's steps"
        return out
    last = max(run["steps"])
    per_step = pace(run, screened, settled_after)

    def time_at(s):
        return None if s is None or s > MAX_REACH * full else run["steps"][last] + (s - last) * per_step

    out.update(how="projected", steps_to_target=step, within_scenario_steps=step <= full,
               time_to_target_s=time_at(step),
               time_range_s=[time_at(crossing(target.error + spread)),
                             time_at(crossing(target.error - spread))])
    energy = run.get("energy") or {}
    if energy and max(energy) == last:
        # Energy grows per step as time does: at the late pace of joules per step.
        joules_per_step = pace(run, screened, settled_after, "energy")

        def energy_at(s):
            return None if s is None or s > MAX_REACH * full else energy[last] + (s - last) * joules_per_step

        out.update(energy_to_target_j=energy_at(step),
                   energy_range_j=[energy_at(crossing(target.error + spread)),
                                   energy_at(crossing(target.error - spread))])
    return out


def rank(plan, target, by="time"):
    """One entry per candidate, fastest first (by "energy": least energy to target first);
    those that do not reach the target last."""
    entries = []
    for cand in plan["candidates"]:
        entry = {"run": cand["run"], "family": cand["family"], "label": cand["label"],
                 "codec": cand["codec"], "dense": cand["codec"].get("kind") == "none"}
        try:
            run = load_run(os.path.join(plan["screening"], cand["run"]))
        except run_folders.RunError as e:
            # A screening run that cannot be read is ranked as failed, with the reason.
            print(f"skipped: {e}", file=sys.stderr)
            entry.update(how="failed", time_to_target_s=None, reason=str(e))
            entries.append(entry)
            continue
        if run is None or not run["evals"] or not run["steps"]:
            entry.update(how="failed", time_to_target_s=None)
            entries.append(entry)
            continue
        entry.update(assess(run, plan, target, cand.get("settled_after", 0)))
        entry["energy_known"] = bool(run["energy"])
        final = run["evals"][-1]
        entry["screening_quality"] = target.quality(final)
        entry["screening_quality_step"] = final["step"]
        entry["bytes_per_step"] = run["bytes_per_step"]
        if entry.get("fit") and target.accuracy:
            k, alpha = entry["fit"]["k"], entry["fit"]["alpha"]
            entry["projected_final_accuracy"] = max(0.0, 1.0 - k * plan["full_steps"] ** -alpha)
        entries.append(entry)
    dense = next((e for e in entries if e["dense"]), None)
    for e in entries:
        e["speedup_vs_dense"] = (dense["time_to_target_s"] / e["time_to_target_s"]
                                 if dense and dense.get("time_to_target_s") and e.get("time_to_target_s")
                                 else None)
        if dense and e.get("screening_quality") is not None and dense.get("screening_quality") is not None:
            e["quality_vs_dense"] = e["screening_quality"] - dense["screening_quality"]

    measure = "energy_to_target_j" if by == "energy" else "time_to_target_s"
    for e in entries:
        e["energy_vs_dense"] = (e["energy_to_target_j"] / dense["energy_to_target_j"]
                                if dense and dense.get("energy_to_target_j") and e.get("energy_to_target_j")
                                else None)

    def key(e):
        if e.get(measure) is not None:
            return (0, e[measure])
        quality = e.get("screening_quality")
        if quality is None:
            return (2, 0)
        return (1, -quality if target.accuracy else quality)

    return sorted(entries, key=key), dense


def seconds(value):
    return "-" if value is None else ("%.3g s" % value)


def joules(value):
    return "-" if value is None else ("%.3g J" % value)


def answer_by_energy(ranked, dense, target):
    """The advice when ranked by energy to target."""
    best = ranked[0] if ranked and ranked[0].get("energy_to_target_j") is not None else None
    if best is None:
        return (f"No screened method is projected to reach {target.text} with its energy known: the "
                "screening's curves do not get there, or its runs name no device profile.")
    how = "measured" if best["how"] == "measured" else "projected"
    text = (f"Least energy: {best['label']} reaches {target.text} with {joules(best['energy_to_target_j'])} "
            f"over every worker ({how}, at {seconds(best['time_to_target_s'])})")
    if dense is not None and not best["dense"] and dense.get("energy_to_target_j") is not None:
        text += f", {best['energy_vs_dense']:.2f}x dense SGD's {joules(dense['energy_to_target_j'])}"
    elif best["dense"]:
        text += "; no codec uses less than dense SGD"
    return text + "."


def answer(ranked, dense, target, by="time"):
    """The advice in two or three sentences."""
    if by == "energy":
        return answer_by_energy(ranked, dense, target)
    best = ranked[0] if ranked and ranked[0].get("time_to_target_s") is not None else None
    if best is None:
        return (f"No screened method is projected to reach {target.text}: the screening's curves "
                "do not get there. Try more steps (training.steps) or a larger --budget.")
    how = "measured" if best["how"] == "measured" else "projected"
    if dense is None or dense.get("time_to_target_s") is None:
        return (f"Fastest: {best['label']} reaches {target.text} at {seconds(best['time_to_target_s'])} "
                f"({how}); dense SGD is not projected to reach it.")
    if best["dense"]:
        codecs = [e for e in ranked if not e["dense"] and e.get("time_to_target_s") is not None]
        text = (f"No codec beats dense SGD on this scenario: dense reaches {target.text} at "
                f"{seconds(dense['time_to_target_s'])} ({how})")
        if codecs:
            closest = codecs[0]
            text += (f"; the closest, {closest['label']}, needs {seconds(closest['time_to_target_s'])} "
                     f"({1 / closest['speedup_vs_dense']:.2f}x as long)")
        return (text + ". Compression does not pay on this network and model."
                + close_calls(ranked, best))
    cost = ""
    if best.get("quality_vs_dense") is not None and target.accuracy:
        cost = (f" Its accuracy after {best['screening_quality_step']} steps: "
                f"{best['screening_quality']:.4f} against dense {dense['screening_quality']:.4f} "
                f"({100 * best['quality_vs_dense']:+.1f} points).")
    return (f"Fastest: {best['label']} reaches {target.text} at {seconds(best['time_to_target_s'])} "
            f"({how}), {best['speedup_vs_dense']:.2f}x sooner than dense SGD "
            f"({seconds(dense['time_to_target_s'])}, {dense['how']}).{cost}{close_calls(ranked, best)}")


def close_calls(ranked, best):
    """A sentence naming the methods whose projected range reaches below the best's time: the
    screening cannot tell them apart from it."""
    high = (best.get("time_range_s") or [None, None])[1]
    if high is None:
        high = float("inf")
    close = [e["label"] for e in ranked[1:]
             if e.get("time_range_s") and e["time_range_s"][0] is not None and e["time_range_s"][0] < high]
    if not close:
        return ""
    return (f" Within the projection's spread, {', '.join(close)} may be as fast; a larger --budget "
            "measures more of the curves.")


def devices_text(devices):
    """The line naming the workers' devices and their compute per step (empty without any)."""
    if not devices:
        return ""
    parts = [f"{workers} x {name} ({1e3 * step_s:.3g} ms of compute per step)"
             for name, workers, step_s, _, _ in devices if step_s is not None]
    return "Workers: " + ", ".join(parts) + "." if parts else ""


def markdown(plan, ranked, text, target, elapsed, by="time", devices=()):
    lines = [f"# Advice for {plan['name']}", "",
             f"Target: {target.text}. Screened {len(ranked)} codecs for {plan['screening_steps']} of "
             f"{plan['full_steps']} steps each (evaluating every {plan['screening_eval_every']});"
             " times are simulated seconds as the scenario's run would report them (at its "
             f"evaluation interval of {plan['eval_every']} steps).", ""]
    if devices_text(devices):
        lines += [devices_text(devices), ""]
    if plan.get("fixed_compute_s") is not None:
        lines += [f"The scenario measures compute; the screening fixed it at the pilot's "
                  f"{1e3 * plan['fixed_compute_s']:.3g} ms per step (measured alone), so that "
                  "parallel runs do not time each other's load.", ""]
    lines += [text, ""]
    if by == "energy":
        lines += ["Ranked by energy to target: every worker's joules (compute, and radio where the "
                  "network reports it) until the target, from summary.json's energy.", ""]
    with_energy = any(e.get("energy_to_target_j") is not None for e in ranked)
    quality = "accuracy" if target.accuracy else "perplexity"
    lines.append(f"| rank | method | family | time to target | how | vs dense | {quality} at the "
                 f"screening's end | vs dense | bytes per step |"
                 + (" energy to target | energy vs dense |" if with_energy else ""))
    lines.append("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if with_energy else ""))
    for i, e in enumerate(ranked, 1):
        when = seconds(e.get("time_to_target_s"))
        low, high = (e.get("time_range_s") or [None, None])
        if e.get("how") == "projected" and (low != high or high is None):
            when += f" ({'%.3g' % low}-{'%.3g s' % high if high is not None else 'later'})"
        if e.get("within_scenario_steps") is False:
            when += f" (step {e['steps_to_target']}, after the scenario's {plan['full_steps']})"
        delta = e.get("quality_vs_dense")
        delta_text = "-" if delta is None or e["dense"] else (
            f"{100 * delta:+.1f} points" if target.accuracy else f"{delta:+.3g}")
        lines.append("| " + " | ".join([
            str(i), e["label"], e["family"], when,
            e["how"] + (f" ({e['reason']})" if e.get("reason") else ""),
            "-" if e.get("speedup_vs_dense") is None else f"{e['speedup_vs_dense']:.2f}x",
            "-" if e.get("screening_quality") is None else f"{e['screening_quality']:.4g}",
            delta_text,
            "-" if e.get("bytes_per_step") is None else f"{e['bytes_per_step']:.0f}"]
            + ([joules(e.get("energy_to_target_j")),
                "-" if e.get("energy_vs_dense") is None else f"{e['energy_vs_dense']:.2f}x"]
               if with_energy else [])) + " |")
    lines += ["", "measured: the screening run reached the target at one of the scenario's "
              "evaluations. projected: a power law fitted to the screening's later evaluations, "
              "extrapolated to the target at the run's late pace per step (docs/advise.md says how "
              "far it can be off).", ""]
    if elapsed is not None:
        lines.append(f"The pilot and the screening took {elapsed:.0f} s of wall time (budget "
                     f"{plan['budget_s']:.0f} s).")
    return "\n".join(lines) + "\n"


def write_atomically(path, text):
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", required=True)
    parser.add_argument("--elapsed-s", type=float, default=None)
    parser.add_argument("--rank-by", choices=("time", "energy"), default="time",
                        help="rank by time to target (default) or by energy to target")
    args = parser.parse_args(argv)
    try:
        plan = read_plan(args.plan)
    except run_folders.RunError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # Every screening run has the scenario's target; any finished one that can be read says
    # what it is (rank() lists the others).
    folders = [os.path.join(plan["screening"], c["run"]) for c in plan["candidates"]]
    finished = [f for f in folders if run_folders.is_run(f)]
    target, errors, devices = None, [], []
    for folder in finished:
        try:
            run = run_folders.load(folder)
        except run_folders.RunError as e:
            errors.append(str(e))
            continue
        target = target_of(run.training)
        devices = run.device_compute
        if target is None:
            errors.append(f"{os.path.join(folder, run_folders.SCENARIO_FILE)}: training: expected "
                          "target_accuracy or target_perplexity (gradwire advise needs a target)")
            continue
        break
    if target is None:
        print(f"error: no screened codec left a finished run in {plan['screening']}"
              + (" that can be read: " + "; ".join(errors) if errors else ""), file=sys.stderr)
        return 2
    ranked, dense = rank(plan, target, args.rank_by)
    if args.rank_by == "energy" and not any(e.get("energy_known") for e in ranked):
        print("error: --rank-by energy: no screened run carries energy (its workers need named "
              "device profiles: compute.profile)", file=sys.stderr)
        return 2
    text = answer(ranked, dense, target, args.rank_by)
    folder = os.path.dirname(os.path.abspath(args.plan))
    write_atomically(os.path.join(folder, "advice.json"), json.dumps(
        {"name": plan["name"], "target": {"accuracy": target.accuracy, "perplexity": target.perplexity},
         "screening_steps": plan["screening_steps"], "full_steps": plan["full_steps"],
         "answer": text, "ranking": ranked, "rank_by": args.rank_by, "elapsed_s": args.elapsed_s,
         "devices": [{"profile": name, "workers": workers, "mean_step_compute_s": step_s}
                     for name, workers, step_s, _, _ in devices],
         "budget_s": plan["budget_s"]},
        indent=2) + "\n")
    write_atomically(os.path.join(folder, "advice.md"),
                     markdown(plan, ranked, text, target, args.elapsed_s, args.rank_by, devices))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
