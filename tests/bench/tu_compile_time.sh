#!/usr/bin/env bash
# CPU seconds (user + sys) to compile chosen translation units, in two or more configured build
# folders (before and after a change), without ccache. Each TU is compiled with its own command
# from the folder's compile_commands.json (the ccache launcher, if any, stripped; object and
# dependency files written to a scratch folder, so the builds are left as they were), RUNS times,
# the folders alternating, so load that drifts during the measurement hits all of them alike.
# Prints the median per TU and folder, and the totals. CPU seconds, not wall time: on a loaded
# machine the wall time of a compile says more about the neighbours than about the code.
#
# Usage (from anywhere):
#   tests/bench/tu_compile_time.sh [--runs N] LABEL=BUILD_DIR LABEL=BUILD_DIR ... [-- TU ...]
# A TU is a source path relative to its tree (codecs/CodecRegistry.cpp); a unique suffix of it
# is enough (LeNet.cpp). Without TUs, the registration and settings TUs a FieldTable change
# affects. Example, a change against main (both configured with cmake, nothing built needed):
#   tests/bench/tu_compile_time.sh main=../main/build branch=build
set -euo pipefail
exec /usr/bin/python3 - "$@" <<'PY'
import json, os, shlex, statistics, subprocess, sys, tempfile

DEFAULT_TUS = [
    "codecs/sparsify/SparsifierRegistration.cpp",
    "codecs/quantize/QuantizerRegistration.cpp",
    "codecs/CodecRegistry.cpp",
    "netmodels/WifiNetwork.cpp",
    "netmodels/Impairments.cpp",
    "sim/cli/Cli.cpp",
    "nodes/training/LeNet.cpp",
    "sim/engine/ScenarioLoader.cpp",
    "sim/engine/TrainingSetup.cpp",
]

args = sys.argv[1:]
runs = 3
if args[:1] == ["--runs"]:
    runs, args = int(args[1]), args[2:]
tus = DEFAULT_TUS
if "--" in args:
    cut = args.index("--")
    args, tus = args[:cut], args[cut + 1:]
trees = [a.split("=", 1) for a in args]
if len(trees) < 1 or any(len(t) != 2 for t in trees):
    sys.exit("usage: tu_compile_time.sh [--runs N] LABEL=BUILD_DIR ... [-- TU ...]")


def command_for(build, tu):
    """The TU's compile command as argv, writing into a scratch folder; None when absent."""
    entries = json.load(open(os.path.join(build, "compile_commands.json")))
    found = [e for e in entries if e["file"].endswith("/" + tu)]
    if not found:
        return None
    if len({e["file"] for e in found}) > 1:
        sys.exit(f"{tu}: several TUs in {build} end so; name more of its path")
    # A TU built into several targets (a library and a sanitised test): its first, the library.
    e = found[0]
    argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    if os.path.basename(argv[0]) == "ccache":
        argv = argv[1:]
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            if a == "-o":
                out += ["-o", os.path.join(scratch, "tu.o")]
            skip = True
            continue
        if a in ("-MD", "-MMD"):
            continue
        out.append(a)
    return e["directory"], out


def cpu_seconds(directory, argv):
    env = dict(os.environ, CCACHE_DISABLE="1")
    child = subprocess.Popen(argv, cwd=directory, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        sys.exit(f"compile failed in {directory}: {' '.join(argv)}")
    return usage.ru_utime + usage.ru_stime


scratch = tempfile.mkdtemp(prefix="tu_compile_time.")
commands = {(label, tu): command_for(build, tu) for label, build in trees for tu in tus}
times = {key: [] for key in commands}
for run in range(runs):
    for tu in tus:
        for label, _ in trees:
            if commands[(label, tu)] is not None:
                times[(label, tu)].append(cpu_seconds(*commands[(label, tu)]))
    print(f"run {run + 1}/{runs} done: " + ", ".join(
        f"{label} {tu.rsplit('/', 1)[-1]} {times[(label, tu)][-1]:.1f}"
        for tu in tus for label, _ in trees if times[(label, tu)]), file=sys.stderr)

labels = [label for label, _ in trees]
width = max(len(tu) for tu in tus)
print(f"{'TU (median CPU s, user+sys)':<{width}}" + "".join(f" {l:>10}" for l in labels))
totals = {l: 0.0 for l in labels}
for tu in tus:
    row = f"{tu:<{width}}"
    for l in labels:
        t = times[(l, tu)]
        if t:
            m = statistics.median(t)
            totals[l] += m
            row += f" {m:>10.1f}"
        else:
            row += f" {'-':>10}"
    print(row)
print(f"{'total':<{width}}" + "".join(f" {totals[l]:>10.1f}" for l in labels))
PY
