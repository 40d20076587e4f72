"""Run folders as the analysis scripts read them: finding them, loading them, naming them.

A run folder is what `gradwire run` leaves: scenario.json (the scenario with every default
filled in), summary.json and metrics.jsonl (docs/outputs.md). report.py, answer.py, advise.py
and summarize_runs.py read runs through this module only, so they find the same runs and call
the same configuration by the same name; and every file they read (a sweep's results.csv and
question.json too) is checked here, so that a corrupt one is a RunError naming it, never an
exception from deep inside a script.

The units of a scenario ("1Gbps", "50us") are parsed exactly as the C++ side parses them
(common/Units.cpp): tests/analysis/runs_test.py compares the two on the same texts.

Standard library only.
"""
import csv
import functools
import io
import json
import math
import os
import re

SUMMARY_FILE = "summary.json"
SCENARIO_FILE = "scenario.json"
METRICS_FILE = "metrics.jsonl"
RESULTS_FILE = "results.csv"


class RunError(Exception):
    """A folder that is not a readable run, or a run whose files say something malformed."""


# ---------------------------------------------------------------------------------------------
# Units, as common/Units.cpp reads them: a number as strtod reads it (leading C whitespace
# skipped, hexadecimal allowed), then a unit compared after dropping every whitespace character
# and lower-casing A-Z only.

MIN_RATE_BPS = 1.0
MAX_RATE_BPS = 1e12
MAX_DURATION_S = 1e6

RATE_UNITS = {"bps": 1.0, "b/s": 1.0, "kbps": 1e3, "kb/s": 1e3, "mbps": 1e6, "mb/s": 1e6,
              "gbps": 1e9, "gb/s": 1e9, "tbps": 1e12, "tb/s": 1e12}
DURATION_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}

# What C's isspace() accepts in the "C" locale; Python's str.isspace() accepts more.
_C_SPACE = " \t\n\v\f\r"
_HEX_NUMBER = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?")
_DECIMAL_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _number_and_unit(text):
    """(value, unit) of "12.5 Mbps" -> (12.5, "mbps"), or None when no finite number leads it.
    The infinities and NaN that strtod also reads are not finite, so they need no case here."""
    # The C++ side reads the string through c_str(): an embedded NUL ends it.
    text = text.split("\0", 1)[0].lstrip(_C_SPACE)
    match = _HEX_NUMBER.match(text)
    try:
        value = float.fromhex(match.group()) if match else None
    except OverflowError:
        return None
    if match is None:
        match = _DECIMAL_NUMBER.match(text)
        if match is None:
            return None
        value = float(match.group())
    if not math.isfinite(value):
        return None
    unit = "".join(c for c in text[match.end():] if c not in _C_SPACE).translate(_ASCII_LOWER)
    return value, unit


def _brief(value):
    """A value as the error messages quote it (JSON, cut at 60 characters)."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_data_rate(text):
    """Bits per second of a rate such as "1Gbps", "100 Mbps" or "10 Gb/s" (bps to Tbps, also
    written b/s to Tb/s), from 1 bit/s to 1 Tbit/s; ValueError otherwise."""
    parsed = _number_and_unit(text) if isinstance(text, str) else None
    if parsed is not None and parsed[1] in RATE_UNITS:
        bps = parsed[0] * RATE_UNITS[parsed[1]]
        if MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
            return bps
    raise ValueError('expected a data rate from 1bps to 1Tbps such as "1Gbps" or "100Mbps", '
                     "got " + _brief(text))


def parse_duration(text):
    """Seconds of a duration such as "50us", "2ms" or "0.1s" (also ns), from 0 to 1000000 s;
    ValueError otherwise."""
    parsed = _number_and_unit(text) if isinstance(text, str) else None
    if parsed is not None and parsed[1] in DURATION_UNITS and not parsed[0] < 0:
        seconds = parsed[0] * DURATION_UNITS[parsed[1]]
        if seconds <= MAX_DURATION_S:
            return seconds
    raise ValueError('expected a duration up to 1000000s such as "50us", "2ms" or "0.1s", got '
                     + _brief(text))


# ---------------------------------------------------------------------------------------------
# Finding run folders.

def is_run(folder):
    """Whether the folder holds a finished run: both summary.json and scenario.json."""
    return (os.path.isfile(os.path.join(folder, SUMMARY_FILE))
            and os.path.isfile(os.path.join(folder, SCENARIO_FILE)))


def find_all(paths):
    """(run folders, sweep folders, skipped) under the given folders: in the order the folders
    were given, below each in name order (depth first), each folder once.

    A run folder has summary.json and scenario.json (as files or not: load() says what is
    wrong); nothing below it is searched. A sweep folder has results.csv. Hidden folders are
    skipped: a run is assembled in a hidden staging folder (.NAME.partial-PID) and is not
    finished until it is renamed. skipped: [(folder, reason)] of the folders that look like a
    run but lack one of its two files (an unfinished run, a scenario without its run) and of the
    folders that could not be listed. RunError when a path is not a folder."""
    runs, sweeps, skipped, seen = [], [], [], set()

    def unreadable(error):
        skipped.append((error.filename, f"{error.filename}: cannot be listed ({error.strerror})"))

    for top in paths:
        if not os.path.isdir(top):
            raise RunError(f"{top}: not a folder")
        for root, dirs, files in os.walk(top, onerror=unreadable):
            # A folder named like a run's file is still that file's place: load() refuses it.
            names = set(files) | set(dirs)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and d not in (SUMMARY_FILE, SCENARIO_FILE, METRICS_FILE, RESULTS_FILE))
            key = os.path.normpath(root)
            if key in seen:
                dirs[:] = []
                continue
            seen.add(key)
            if RESULTS_FILE in names:
                sweeps.append(root)
            if SUMMARY_FILE in names and SCENARIO_FILE in names:
                runs.append(root)
                dirs[:] = []
            elif SUMMARY_FILE in names or SCENARIO_FILE in names:
                missing = SCENARIO_FILE if SUMMARY_FILE in names else SUMMARY_FILE
                skipped.append((root, f"{root}: not a finished run (no {missing})"))
    return runs, sweeps, skipped


def find(paths):
    """(run folders, sweep folders) under the given folders (find_all without the skipped)."""
    runs, sweeps, _ = find_all(paths)
    return runs, sweeps


# ---------------------------------------------------------------------------------------------
# Reading files. Every file an analysis script reads is read here and checked against what
# gradwire writes; what does not match is a RunError naming the file (and the line of a JSONL
# or CSV file) and what was expected. The scripts decide what an error costs: a run folder is
# skipped and listed, a sweep's own file stops the command (exit 2).

def _refuse_constant(name):
    # Python reads NaN, Infinity and -Infinity; JSON has no such numbers, and gradwire writes
    # null for a value that is not finite.
    raise ValueError(f"{name} is not a JSON number")


def _parse_json(text, one_line=False):
    """The document in a JSON text; ValueError (with where) when it is not one."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        where = f"column {e.colno}" if one_line else f"line {e.lineno} column {e.colno}"
        raise ValueError(f"{e.msg}: {where}") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _read_bytes(path):
    if not os.path.lexists(path):
        raise RunError(f"{path}: missing")
    if os.path.isdir(path):
        raise RunError(f"{path}: expected a file, found a folder")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise RunError(f"{path}: cannot be read ({e.strerror})") from None


def _text(path, data, line=None):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        where = f"line {line}: " if line is not None else ""
        raise RunError(f"{path}: {where}not UTF-8 text (binary?)") from None


def read_json_object(path):
    """The JSON object in a file; RunError when the file is missing, unreadable, not JSON or
    not an object."""
    text = _text(path, _read_bytes(path))
    if not text.strip():
        raise RunError(f"{path}: not JSON (the file is empty)")
    try:
        doc = _parse_json(text)
    except ValueError as e:
        raise RunError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise RunError(f"{path}: expected a JSON object, got {_brief(doc)}")
    return doc


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


# No count, time or byte total gradwire writes comes near this; larger values (or 1e999, which
# Python reads as infinite) are a corrupt file, and would overflow the report's sums and ratios.
LARGEST = 1e18


class Checked:
    """Typed reads of one JSON object of a file, each naming the file and the key's path when
    the value is not what gradwire writes there."""

    def __init__(self, path, doc, prefix=""):
        self.path, self.doc, self.prefix = path, doc, prefix

    def fail(self, key, expected):
        value = self.doc.get(key)
        got = "nothing" if key not in self.doc else f"{_json_type(value)} {_brief(value)}"
        raise RunError(f"{self.path}: {self.prefix}{key}: expected {expected}, got {got}")

    def _get(self, key, required, ok, expected):
        if key not in self.doc:
            if required:
                self.fail(key, expected)
            return None
        value = self.doc[key]
        if not ok(value):
            self.fail(key, expected)
        return value

    def number(self, key, required=False, nullable=True, minimum=None):
        """A number (or null where nullable) from `minimum` to LARGEST, -LARGEST without one."""
        low = -LARGEST if minimum is None else minimum

        def ok(v):
            if v is None:
                return nullable
            return _is_number(v) and low <= v <= LARGEST
        what = f"a number from {low:g} to {LARGEST:g}"
        return self._get(key, required, ok, what + (" or null" if nullable else ""))

    def integer(self, key, required=False, minimum=None):
        ok = lambda v: (isinstance(v, int) and not isinstance(v, bool)
                        and (minimum is None or v >= minimum))
        return self._get(key, required, ok, "an integer" + (f" >= {minimum}" if minimum is not None else ""))

    def string(self, key, required=False):
        return self._get(key, required, lambda v: isinstance(v, str), "a string")

    def obj(self, key, required=False):
        """The object at key as a Checked (None when absent and not required)."""
        value = self._get(key, required, lambda v: isinstance(v, dict), "a JSON object")
        return None if value is None else Checked(self.path, value, f"{self.prefix}{key}.")

    def array(self, key, required=False):
        return self._get(key, required, lambda v: isinstance(v, list), "an array")


# What report, answer, advise and summarize_runs read of summary.json: a number from 0 up, or
# null, where gradwire writes one (it writes null for a number that is not finite).
SUMMARY_NUMBERS = (
    "final_accuracy", "final_top5_accuracy", "final_perplexity", "target_accuracy",
    "target_perplexity", "time_to_target_s", "sim_time_s", "mean_step_compute_s", "mean_step_comm_s", "mean_step_codec_s",
    "bytes_on_wire", "payload_bytes", "dense_bytes", "compression_ratio", "wall_time_s",
    "ns3_wall_time_s", "lost_gradient_fraction", "mean_staleness", "energy_j", "energy_to_target_j")
SUMMARY_INTEGERS = ("steps", "workers", "parameters", "steps_to_target")
# Written by every training run, so a summary without them is not one (a hand-edited or a
# truncated file, or an emulation's summary, which the report does not tabulate).
SUMMARY_REQUIRED = ("final_accuracy", "sim_time_s")


def check_summary(path, doc):
    c = Checked(path, doc)
    for key in SUMMARY_REQUIRED:
        c.number(key, required=True, nullable=key != "sim_time_s", minimum=0)
    for key in SUMMARY_NUMBERS:
        c.number(key, minimum=0)
    for key in SUMMARY_INTEGERS:
        if doc.get(key) is not None:
            c.integer(key, minimum=0)
    for key in ("name", "codec", "topology", "network"):
        c.string(key)


def check_scenario(path, doc):
    """The parts of a resolved scenario that the scripts read: the objects they look into and
    the values they compute with."""
    c = Checked(path, doc)
    c.integer("seed", minimum=0)
    for key in ("network", "compute", "topology", "model", "dataset"):
        c.obj(key)
    training = c.obj("training")
    if training is not None:
        training.integer("workers", minimum=1)
        for key in ("steps", "batch", "eval_every"):
            if training.doc.get(key) is not None:
                training.integer(key, minimum=0)
        training.number("target_accuracy", minimum=0)
        training.number("target_perplexity", minimum=0)
        if isinstance(training.doc.get("buckets"), dict):
            b = training.obj("buckets")
            b.number("size_mb", minimum=0)
            b.number("first_mb", minimum=0)
        elif training.doc.get("buckets") not in (None, "none"):
            training.fail("buckets", '"none" or an object')
    codec = c.obj("codec")
    if codec is not None:
        codec.string("kind")
        for key in FRACTION_KEYS + SIZE_KEYS:
            codec.number(key, minimum=0)
    compute = c.obj("compute")
    if compute is not None:
        compute.string("mode")
        compute.string("codec_time")
    topology = c.obj("topology")
    if topology is not None:
        topology.string("kind")
    network = c.obj("network")
    if network is not None:
        network.string("family")


def check_record(path, number, rec):
    """A metrics.jsonl record: steps and evaluations carry their step and simulated time."""
    kind = rec.get("type")
    if kind not in ("step", "eval"):
        return
    c = Checked(f"{path}: line {number}", rec)
    c.integer("step", required=True, minimum=0)
    c.number("sim_time_s", required=True, nullable=False, minimum=0)
    c.number("wall_time_s", minimum=0)
    if kind == "eval":
        c.number("accuracy", minimum=0)
        c.number("perplexity", minimum=0)


def read_records(path):
    """The records of a JSONL file (blank lines skipped); RunError naming the line of the first
    that is not a JSON object."""
    data = _read_bytes(path)
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = _text(path, raw, number)
        if not line.strip():
            continue
        try:
            rec = _parse_json(line, one_line=True)
        except ValueError as e:
            raise RunError(f"{path}: line {number} is not JSON ({e})") from None
        if not isinstance(rec, dict):
            raise RunError(f"{path}: line {number}: expected a JSON object, got {_brief(rec)}")
        check_record(path, number, rec)
        out.append(rec)
    return out


def read_results(path):
    """(header, rows) of a sweep's results.csv: a header starting run,status, then rows of as
    many fields; RunError naming the line of the first that is not."""
    text = _text(path, _read_bytes(path))
    if "\0" in text:
        raise RunError(f"{path}: not CSV text (it holds NUL bytes)")
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = []
    try:
        for row in reader:
            rows.append((reader.line_num, row))
    except csv.Error as e:
        raise RunError(f"{path}: line {reader.line_num}: not CSV ({e})") from None
    if not rows:
        raise RunError(f"{path}: line 1: expected the header run,status,..., the file is empty")
    header = rows[0][1]
    if header[:2] != ["run", "status"]:
        raise RunError(f"{path}: line 1: expected the header run,status,..., got "
                       + _brief(",".join(header)))
    body = []
    for number, row in rows[1:]:
        if not row:
            continue
        if len(row) != len(header):
            raise RunError(f"{path}: line {number}: expected {len(header)} fields (as the "
                           f"header), got {len(row)}")
        body.append(row)
    return header, body


def read_question(path):
    """A sweep's question.json: text, candidate and baseline selectors, per (docs/scenarios.md)."""
    doc = read_json_object(path)
    c = Checked(path, doc)
    c.string("text", required=True)
    c.obj("candidate", required=True)
    c.obj("baseline", required=True)
    per = c.array("per")
    if per is not None and not all(isinstance(p, str) for p in per):
        c.fail("per", "an array of key paths (strings)")
    return doc


# ---------------------------------------------------------------------------------------------
# Loading a run.

class Run:
    """One run folder: its scenario and summary, read and checked when loaded, and its metrics,
    read from metrics.jsonl the first time they are asked for."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(os.path.normpath(path))
        scenario_path = os.path.join(path, SCENARIO_FILE)
        summary_path = os.path.join(path, SUMMARY_FILE)
        self.scenario = read_json_object(scenario_path)
        check_scenario(scenario_path, self.scenario)
        self.summary = read_json_object(summary_path)
        check_summary(summary_path, self.summary)

    def __repr__(self):
        return f"Run({self.path!r})"

    @functools.cached_property
    def records(self):
        """Every line of metrics.jsonl (empty without the file)."""
        path = os.path.join(self.path, METRICS_FILE)
        if not os.path.lexists(path):
            return []
        return read_records(path)

    @functools.cached_property
    def steps(self):
        """The step records ("type": "step"), in step order."""
        return sorted((r for r in self.records if r.get("type") == "step"), key=lambda r: r["step"])

    @functools.cached_property
    def evals(self):
        """The evaluation records ("type": "eval"), in step order."""
        return sorted((r for r in self.records if r.get("type") == "eval"), key=lambda r: r["step"])

    # The configuration, from the resolved scenario.

    @property
    def codec(self):
        return self.scenario.get("codec") or {}

    @property
    def codec_kind(self):
        return self.codec.get("kind", "?")

    @property
    def network(self):
        return self.scenario.get("network") or {}

    @property
    def training(self):
        return self.scenario.get("training") or {}

    @property
    def workers(self):
        return self.training.get("workers", 0)

    @property
    def seed(self):
        return self.scenario.get("seed")

    @functools.cached_property
    def rate_bps(self):
        """The network's link rate in bits per second; None for a family without one."""
        if "rate" not in self.network:
            return None
        try:
            return parse_data_rate(self.network["rate"])
        except ValueError as e:
            raise RunError(f"{os.path.join(self.path, SCENARIO_FILE)}: network.rate: {e}") from None

    # Results, from the summary.

    @property
    def time_to_target_s(self):
        return self.summary.get("time_to_target_s")

    @property
    def energy_to_target_j(self):
        """Every worker's joules until the target was first reached (None without devices or
        when not reached)."""
        return self.summary.get("energy_to_target_j")

    @property
    def device_compute(self):
        """Per device profile: (name, workers, mean step compute s, busy s, compute J), from
        summary.json's energy object; [] when the run's workers have no named devices."""
        energy = self.summary.get("energy")
        if not isinstance(energy, dict) or not isinstance(energy.get("profiles"), dict):
            return []
        out = []
        for name, p in sorted(energy["profiles"].items()):
            if isinstance(p, dict):
                out.append((name, p.get("workers"), p.get("mean_step_compute_s"),
                            p.get("busy_s"), p.get("compute_j")))
        return out

    @property
    def step_time_s(self):
        """Mean simulated step time: compute plus the communication left exposed after it."""
        compute, comm = self.summary.get("mean_step_compute_s"), self.summary.get("mean_step_comm_s")
        if compute is None or comm is None:
            return None
        return compute + comm

    @property
    def bytes_per_step(self):
        """Size of the gradient one worker's codec produced per step (0 when not recorded)."""
        steps = max(1, self.summary.get("steps") or 1)
        return (self.summary.get("payload_bytes") or 0) / steps / max(1, self.summary.get("workers") or 1)


# Loaded runs by folder, so that a folder's files are read once however many callers ask. A
# folder rewritten since (a run redone under the same name) is read again.
_loaded = {}


def _signature(path):
    out = []
    for name in (SCENARIO_FILE, SUMMARY_FILE, METRICS_FILE):
        try:
            st = os.stat(os.path.join(path, name))
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def load(path):
    """The run in a folder (RunError when it is not a run or its files are malformed)."""
    if not os.path.isdir(path):
        raise RunError(f"{path}: not a folder")
    for name in (SCENARIO_FILE, SUMMARY_FILE):
        if not os.path.lexists(os.path.join(path, name)):
            raise RunError(f"{path}: not a finished run (no {name})")
    key = os.path.realpath(path)
    signature = _signature(path)
    cached = _loaded.get(key)
    if cached is None or cached[0] != signature:
        cached = (signature, Run(path))
        _loaded[key] = cached
    return cached[1]


def load_all(paths):
    """The runs found under the given folders (find), loaded."""
    return [load(p) for p in find(paths)[0]]


# ---------------------------------------------------------------------------------------------
# Naming a configuration. One naming everywhere: the report's tables and figures, the demo's
# answer and the summary table call a run the same, e.g. "topk (1%, error feedback)" on
# "Ethernet 1 Gbit/s".

# Codec parameters a method's name shows: the fraction sent, as a percentage, then the size of
# what is sent.
FRACTION_KEYS = ("ratio", "density")
SIZE_KEYS = ("rank", "bits", "levels")


def _number(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


def codec_label(codec):
    """'dense SGD' for codec none, else the kind and its main parameters:
    'topk (1%, error feedback)', 'powersgd (rank 2)', 'dgc (0.1%)'."""
    kind = codec.get("kind", "?")
    details = [f"{_number(100 * codec[k])}%" for k in FRACTION_KEYS if k in codec]
    details += [f"{k} {_number(codec[k])}" for k in SIZE_KEYS if k in codec]
    if codec.get("error_feedback") and kind != "none":
        details.append("error feedback")
    if codec.get("zstd"):
        details.append("zstd")
    name = "dense SGD" if kind == "none" else kind
    return name + (f" ({', '.join(details)})" if details else "")


# The gradient buckets gradwire takes when a scenario names none: PyTorch DDP's on the schemes
# that send gradients without faults, none elsewhere (sim/engine/ScenarioLoader.cpp,
# read_buckets; runs_test compares). A run's name mentions its buckets only where they differ.
DDP_BUCKETS = {"size_mb": 25, "first_mb": 1}
BUCKET_SCHEMES = ("ring", "ps")


def buckets(scenario):
    """The run's gradient buckets: "none" or {"size_mb": ..., "first_mb": ...}. Runs from
    before buckets existed have no training.buckets and had none."""
    b = (scenario.get("training") or {}).get("buckets", "none")
    return b if isinstance(b, dict) else "none"


def default_buckets(scenario):
    kind = (scenario.get("topology") or {}).get("kind", "ring")
    return DDP_BUCKETS if kind in BUCKET_SCHEMES and not scenario.get("faults") else "none"


def buckets_label(scenario):
    """'' with the buckets gradwire takes by default, else 'no buckets' or e.g.
    'buckets 10 MB (first 1 MB)'."""
    b = buckets(scenario)
    if b == default_buckets(scenario):
        return ""
    if b == "none":
        return "no buckets"
    text = f"buckets {_number(b.get('size_mb'))} MB"
    if b.get("first_mb") not in (None, b.get("size_mb")):
        text += f" (first {_number(b.get('first_mb'))} MB)"
    return text


def method_label(run):
    """How the run's gradients are sent: its codec, then its buckets where they are not the
    default: 'topk (1%, error feedback)', 'dense SGD, no buckets',
    'fp16, buckets 10 MB (first 1 MB)'."""
    label = buckets_label(run.scenario)
    return codec_label(run.codec) + (f", {label}" if label else "")


# A network's label: its `label` when one was given, else a short line made from the resolved
# object, e.g. "802.11ax 80 MHz, 8 stations within 15 m". sim/study/NetworkLabel.cpp makes the
# same label for run folder names; tests/analysis/runs_test.py compares the two through
# `gradwire validate`. Numbers are written as C's and Python's %g write them.

# LTE resource blocks to channel width, MHz (3GPP TS 36.101, table 5.6-1).
LTE_WIDTHS = {6: "1.4", 15: "3", 25: "5", 50: "10", 75: "15", 100: "20"}
FAMILY_NAMES = {"wifi": "Wi-Fi", "lte": "LTE", "ethernet": "Ethernet"}
RATE_TEXT_UNITS = ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"))


def _g(value):
    return "%g" % value


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number_at(obj, key, fallback):
    value = obj.get(key)
    return value if _is_number(value) else fallback


def _string_at(obj, key, fallback):
    value = obj.get(key)
    return value if isinstance(value, str) else fallback


def _count(n, one, many):
    return f"{n} {one if n == 1 else many}"


def rate_label(rate):
    """'1 Gbit/s', '100 Mbit/s', '2.5 Gbit/s': the rate in the largest unit it reaches; the text
    as written when it does not parse."""
    try:
        bps = parse_data_rate(rate)
    except ValueError:
        return rate if isinstance(rate, str) else json.dumps(rate)
    for scale, unit in RATE_TEXT_UNITS:
        if bps >= scale:
            return f"{_g(bps / scale)} {unit}"
    return f"{_g(bps)} bit/s"


def _placement_label(placement):
    """' at 5 m', ' at 80-400 m', ' within 15 m', ' on a 2 m grid'."""
    if not isinstance(placement, dict):
        return ""
    kind = _string_at(placement, "kind", "")
    if kind == "distance":
        return f" at {_g(_number_at(placement, 'distance_m', 0))} m"
    if kind == "disc":
        return f" within {_g(_number_at(placement, 'radius_m', 0))} m"
    if kind == "grid":
        return f" on a {_g(_number_at(placement, 'spacing_m', 0))} m grid"
    if kind == "distances":
        listed = placement.get("distances_m")
        d = [v for v in listed if _is_number(v)] if isinstance(listed, list) else []
        if not d:
            return ""
        lo, hi = min(d), max(d)
        return f" at {_g(lo)}" + ("" if lo == hi else f"-{_g(hi)}") + " m"
    return ""


def _lte_width(blocks):
    return f"{LTE_WIDTHS[blocks]} MHz" if blocks in LTE_WIDTHS else f"{_g(blocks)} RBs"


def label_of_network(network, workers):
    """The label of a resolved `network` object carrying `workers` workers:
    'Ethernet 1 Gbit/s', '802.11ax 80 MHz, 8 stations within 15 m',
    'LTE 20 MHz, 4 UEs at 80-400 m', 'hybrid: 2 Wi-Fi + 2 LTE + 2 Ethernet', or its `label`."""
    if not isinstance(network, dict):
        return "?"
    given = _string_at(network, "label", "")
    if given:
        return given
    family = _string_at(network, "family", "?")
    if family == "ethernet":
        return "Ethernet " + rate_label(network.get("rate", "1Gbps"))
    if family == "wifi":
        out = "802.11" + _string_at(network, "standard", "?")
        band = _string_at(network, "band", "5GHz")
        if band != "5GHz":
            out += " " + band.replace("GHz", " GHz", 1)
        out += f" {_g(_number_at(network, 'width_mhz', 0))} MHz"
        streams = int(_number_at(network, "spatial_streams", 1))
        if streams > 1:
            out += f" {streams}x{streams}"
        if _string_at(network, "rate_control", "ideal") == "constant":
            out += f" MCS {_g(_number_at(network, 'mcs', 0))}"
        return (out + ", " + _count(workers, "station", "stations")
                + _placement_label(network.get("placement")))
    if family == "lte":
        ul, dl = _number_at(network, "ul_bandwidth", 100), _number_at(network, "dl_bandwidth", 100)
        out = ("LTE " + _lte_width(ul) if ul == dl
               else f"LTE UL {_lte_width(ul)} / DL {_lte_width(dl)}")
        enbs = int(_number_at(network, "enbs", 1))
        if enbs > 1:
            out += f", {enbs} cells"
        return (out + ", " + _count(workers, "UE", "UEs")
                + _placement_label(network.get("placement")))
    if family == "hybrid":
        groups = network.get("groups")
        parts = [f"{_g(_number_at(g, 'workers', 0))} "
                 + FAMILY_NAMES.get(_string_at(g, "family", "?"), _string_at(g, "family", "?"))
                 for g in (groups if isinstance(groups, list) else []) if isinstance(g, dict)]
        return "hybrid: " + (" + ".join(parts) if parts else "no groups")
    return family


def network_label(run):
    """The run's network for people (label_of_network): 'Ethernet 1 Gbit/s',
    '802.11ax 80 MHz, 8 stations within 15 m'."""
    return label_of_network(run.network, run.workers)


def network_key(run):
    """Networks in order: by family, then slowest link first."""
    return (run.network.get("family", "?"), run.rate_bps or 0.0, network_label(run))
