#!/usr/bin/env python3
"""The report as a reader sees it: a real sweep, `gradwire report`, and Debian's headless
Chromium driven through the Chrome DevTools Protocol.

Usage: report_browser_test.py GRADWIRE_BINARY

It runs a small sweep (dense and top-k, two link rates, two seeds, a few steps of an MLP on
synthetic data, with evaluations so every run has a time to target), renders the report, loads
report.html at 1280 px and checks that the page logs no console error and throws no exception,
that every image loads, and that the headline table holds what results.csv says: each row's
means and sample standard deviations are recomputed here from the results.csv rows of the runs
the row names. A full-page screenshot, report-1280.png, is saved beside report.html.

A second sweep runs the same model over a Wi-Fi cell, an LTE cell and a hybrid network (whole
network objects as the axis, as scenarios/studies/wireless-codecs.json has them), and its report
is loaded too: its run folders and headline rows are named by the networks' labels, the headline
lists no setting that the network column already tells, and in both reports every image is at
most 2,000 px wide and every table, and the page, fit in 1,280 px.

Everything goes to a temporary folder, removed when the test passes and kept (its path printed)
when it fails; GRADWIRE_KEEP_BROWSER_TEST=1 keeps it either way. Chromium's profile is always
removed. Exit 77 (ctest: skipped) when chromium, python3-websocket or matplotlib is missing.
"""
import base64
import csv
import ctypes
import json
import math
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

try:
    import websocket  # Debian's python3-websocket
except ImportError:
    websocket = None

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WIDTH = 1280
STEPS, WORKERS = 12, 2
SEEDS = [1, 2]
RATES = ["10Mbps", "1Gbps"]

SWEEP = {
    "gradwire_sweep": 1,
    "name": "browser",
    "base": {
        "gradwire": 1, "name": "browser",
        "model": {"kind": "mlp", "hidden": [16]},
        "dataset": {"kind": "synthetic", "train_samples": 800, "test_samples": 200},
        # Evaluating every step at a 0.9 target makes the two seeds reach it at different steps,
        # so the table's standard deviations are not all zero.
        "training": {"workers": WORKERS, "steps": STEPS, "batch": 8, "eval_every": 1,
                     "target_accuracy": 0.9},
        "compute": {"mode": "fixed", "seconds": 0.001, "threads": 1},
        "network": {"family": "ethernet"},
    },
    "grid": {"network.rate": RATES,
             "codec": [{"kind": "none"}, {"kind": "topk", "ratio": 0.1}]},
    "seeds": SEEDS,
}

# The wireless study: each network with the worker count it carries, and its label.
WIRELESS = [
    ({"family": "wifi", "standard": "ax", "width_mhz": 80, "server": "ap",
      "placement": {"kind": "disc", "radius_m": 15}}, 2, "802.11ax 80 MHz, 2 stations within 15 m"),
    ({"family": "lte", "server": "edge", "placement": {"kind": "distances", "distances_m": [80, 400]}},
     2, "LTE 20 MHz, 2 UEs at 80-400 m"),
    ({"family": "hybrid", "groups": [{"family": "wifi", "workers": 1},
                                     {"family": "lte", "workers": 1},
                                     {"family": "ethernet", "workers": 1, "rate": "1Gbps"}]},
     3, "hybrid: 1 Wi-Fi + 1 LTE + 1 Ethernet"),
]
WIRELESS_STEPS = 4
WIRELESS_SWEEP = {
    "gradwire_sweep": 1,
    "name": "browser-wireless",
    "base": dict(SWEEP["base"], name="browser-wireless", topology={"kind": "ps"},
                 training=dict(SWEEP["base"]["training"], steps=WIRELESS_STEPS, eval_every=2)),
    "grid": {"codec": [{"kind": "none"}, {"kind": "topk", "ratio": 0.1}]},
    "zip": {"network": [n for n, _, _ in WIRELESS], "training.workers": [w for _, w, _ in WIRELESS]},
}
MAX_IMAGE_PX = 2000


def skip(reason):
    print(f"skipped: {reason}", file=sys.stderr)
    sys.exit(77)


def find_chromium():
    for candidate in (os.environ.get("GRADWIRE_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class DevTools:
    """A minimal CDP client over one websocket: commands to one page session, events kept."""

    def __init__(self, url, deadline_s=60):
        self.ws = websocket.create_connection(url, timeout=deadline_s, suppress_origin=True)
        self.next_id, self.events, self.session = 0, [], None

    def call(self, method, params=None, timeout_s=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self.receive(deadline, method)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Failure(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def receive(self, deadline, waiting_for):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Failure(f"no answer from Chromium to {waiting_for}")
        self.ws.settimeout(left)
        try:
            message = json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            raise Failure(f"no answer from Chromium to {waiting_for}") from None
        if "method" in message:
            self.events.append(message)
        return message

    def wait_for(self, method, timeout_s=30):
        deadline = time.monotonic() + timeout_s
        while not any(e["method"] == method for e in self.events):
            self.receive(deadline, method)

    def drain(self, seconds):
        """Collects the events that arrive within the next seconds (late console errors)."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.receive(deadline, "events")
        except Failure:
            pass

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise Failure(f"evaluating {expression[:60]}...: {result['exceptionDetails']}")
        return json.loads(result["result"]["value"])


def run(cmd, **kwargs):
    started = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    print(f"{' '.join(cmd[:2])}: exit {proc.returncode}, {time.monotonic() - started:.1f} s")
    check(proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}")
    return proc.stdout


def die_with_parent():
    """Runs in the child before exec: the kernel sends it SIGTERM when this test process ends,
    however it ends (ctest's timeout kills it), so no browser outlives the test."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start_chromium(chromium, profile, home):
    args = [chromium, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-breakpad", "--disable-gpu",
            "--hide-scrollbars", "--mute-audio", "about:blank"]
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    # Chromium keeps a certificate store and caches under HOME: a throwaway one leaves nothing.
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_CACHE_HOME=os.path.join(home, ".cache"))
    log = open(os.path.join(os.path.dirname(profile), "chromium.log"), "w")
    # Its own process group, so that ending it ends its helper processes too.
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True, preexec_fn=die_with_parent)
    log.close()
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Failure(f"chromium exited ({proc.returncode}) before it listened; see chromium.log")
        if os.path.exists(port_file):
            lines = open(port_file).read().split()
            if len(lines) >= 2:
                return proc, f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        time.sleep(0.1)
    raise Failure("chromium wrote no DevToolsActivePort within 60 s")


def stop_chromium(proc):
    if proc is None or proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


HEADLINE_JS = """JSON.stringify((() => {
  const table = document.querySelector('table');
  const definitions = Array.from(document.querySelectorAll('h2'))
      .find(h => h.textContent === 'Definitions');
  return {
    first_table_class: table ? table.className : null,
    before_definitions: !!(table && definitions &&
        (table.compareDocumentPosition(definitions) & Node.DOCUMENT_POSITION_FOLLOWING)),
    header: Array.from(document.querySelectorAll('table.headline th')).map(th => th.textContent),
    rows: Array.from(document.querySelectorAll('table.headline tr[data-runs]')).map(tr => ({
      runs: JSON.parse(tr.dataset.runs),
      cells: Object.fromEntries(Array.from(tr.querySelectorAll('td[data-column]')).map(td =>
          [td.dataset.column, {mean: td.dataset.mean, sd: td.dataset.sd, n: td.dataset.n,
                               text: td.textContent}]))
    }))
  };
})())"""

IMAGES_JS = """JSON.stringify(Array.from(document.images).map(img => ({
  alt: img.alt, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight})))"""

# How wide each table is as laid out (its scrollWidth, and how far its right edge reaches), and
# the page's own scroll width: anything past the window would need a horizontal scroll.
WIDTHS_JS = """JSON.stringify({
  page: document.documentElement.scrollWidth,
  tables: Array.from(document.querySelectorAll('table')).map(t => ({
    css_class: t.className, scroll: t.scrollWidth,
    right: Math.ceil(t.getBoundingClientRect().right + window.scrollX)}))})"""

NETWORK_LABELS_JS = """JSON.stringify({
  header: Array.from(document.querySelectorAll('table.headline th')).map(th => th.textContent),
  rows: Array.from(document.querySelectorAll('table.headline tr[data-runs]')).map(tr =>
      Array.from(tr.querySelectorAll('td:not([data-column])')).map(td => td.textContent))})"""


def number(text):
    return float(text) if text not in ("", None) else None


def expected_columns(results):
    """{run: {column: value}} of the headline table's measures, from results.csv rows."""
    by_run = {}
    for row in results:
        kind = json.loads(row["codec"])["kind"]
        dense = next(r for r in results if json.loads(r["codec"])["kind"] == "none"
                     and r["network.rate"] == row["network.rate"] and r["seed"] == row["seed"])
        t, t_dense = number(row["time_to_target_s"]), number(dense["time_to_target_s"])
        speedup = t_dense / t if t and t_dense else None
        by_run[row["run"]] = {
            "time_to_target_s": t,
            # The only dense codec here is none: the best dense run is the dense fp32 run.
            "speedup_vs_dense_fp32": speedup,
            "speedup_vs_best_dense": speedup,
            "final_accuracy": number(row["final_accuracy"]),
            "bytes_per_step": number(row["payload_bytes"]) / STEPS / WORKERS,
            "kind": kind,
        }
    return by_run


def close(a, b, scale):
    # results.csv rounds to 6 significant digits; the report reads summary.json's full values.
    return abs(a - b) <= 2e-5 * scale + 1e-15


def check_headline(dom, results):
    check(dom["first_table_class"] == "headline", f"the first table is {dom['first_table_class']!r}")
    check(dom["before_definitions"], "the headline table does not come before the definitions")
    check(not any("lost gradient" in h for h in dom["header"]), "a lost-gradient column without UDP")
    expected = expected_columns(results)
    named = sorted(name for row in dom["rows"] for name in row["runs"])
    check(named == sorted(expected), f"the table's runs {named} are not results.csv's {sorted(expected)}")
    check(len(dom["rows"]) == len(RATES) * 2, f"{len(dom['rows'])} rows, expected one per rate and codec")
    for row in dom["rows"]:
        names = row["runs"]
        check(len(names) == len(SEEDS), f"{names}: expected one run per seed")
        check(len({expected[n]["kind"] for n in names}) == 1, f"{names} mixes codecs")
        check(row["cells"]["runs"]["n"] == str(len(names)), f"{names}: runs column")
        for column in ("time_to_target_s", "speedup_vs_dense_fp32", "speedup_vs_best_dense",
                       "final_accuracy", "bytes_per_step"):
            cell = row["cells"][column]
            values = [expected[n][column] for n in names if expected[n][column] is not None]
            check(int(cell["n"]) == len(values), f"{names} {column}: n {cell['n']}, expected {len(values)}")
            if not values:
                check(cell["text"] == "-", f"{names} {column}: {cell['text']!r} without values")
                continue
            mean = statistics.mean(values)
            scale = max(abs(v) for v in values)
            check(close(number(cell["mean"]), mean, scale),
                  f"{names} {column}: mean {cell['mean']} in the table, {mean} from results.csv")
            if len(values) > 1:
                sd = statistics.stdev(values)
                check(close(number(cell["sd"]), sd, scale),
                      f"{names} {column}: sd {cell['sd']} in the table, {sd} from results.csv")
                check(cell["text"].startswith("%.4g ± " % number(cell["mean"])),
                      f"{names} {column}: text {cell['text']!r} is not its mean ± sd")
    # Per network, the fastest mean time to target first.
    for rate in RATES:
        times = [number(row["cells"]["time_to_target_s"]["mean"]) for row in dom["rows"]
                 if rate in row["runs"][0]]
        check(times == sorted(times), f"{rate}: rows not fastest first: {times}")


def sweep_and_report(gradwire, sweep, tmp, env):
    """Runs the sweep and its report; (report.html, sweep folder)."""
    sweep_file = os.path.join(tmp, sweep["name"] + ".json")
    with open(sweep_file, "w") as f:
        json.dump(sweep, f)
    run([gradwire, "sweep", sweep_file, "--out", os.path.join(tmp, "runs"), "-j", "2", "-q"], env=env)
    sweep_dir = os.path.join(tmp, "runs", sweep["name"])
    report_dir = os.path.join(tmp, sweep["name"] + "-report")
    run([gradwire, "report", sweep_dir, "--out", report_dir], env=env)
    return os.path.join(report_dir, "report.html"), sweep_dir


def open_and_check(cdp, page):
    """Loads the page: no console error or exception, every image loaded and at most
    MAX_IMAGE_PX wide, every table and the page within the window. Returns the images."""
    cdp.events.clear()
    cdp.call("Page.navigate", {"url": "file://" + os.path.abspath(page)})
    cdp.wait_for("Page.loadEventFired", timeout_s=60)
    cdp.drain(0.5)
    name = os.path.basename(os.path.dirname(page))
    errors = []
    for e in cdp.events:
        p = e.get("params", {})
        if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                for a in p.get("args", [])))
        elif e["method"] == "Runtime.exceptionThrown":
            errors.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
        elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            errors.append("log: " + p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
    check(not errors, f"{name}: the page logged errors:\n" + "\n".join(errors))

    images = cdp.evaluate(IMAGES_JS)
    check(images, f"{name}: the page has no image")
    broken = [i for i in images if not i["complete"] or i["width"] <= 0]
    check(not broken, f"{name}: images that did not load: {broken}")
    wide = [(i["alt"], i["width"]) for i in images if i["width"] > MAX_IMAGE_PX]
    check(not wide, f"{name}: images wider than {MAX_IMAGE_PX} px: {wide}")
    widths = cdp.evaluate(WIDTHS_JS)
    over = [t for t in widths["tables"] if t["scroll"] > WIDTH or t["right"] > WIDTH]
    check(not over, f"{name}: tables wider than the {WIDTH} px window: {over}")
    check(widths["page"] <= WIDTH, f"{name}: the page is {widths['page']} px wide, over {WIDTH}")
    print(f"{name}: {len(images)} images, widest {max(i['width'] for i in images)} px; "
          f"widest table {max(t['scroll'] for t in widths['tables'])} px")
    return images


def label_slug(label):
    """The label as sim/study/NetworkLabel.cpp writes it into a folder name."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", label).strip("-.")


def check_run_names(results):
    """Each run folder of the wireless sweep is named by its network's label and a hash."""
    for row in results:
        network = json.loads(row["network"])
        label = next(lab for n, _, lab in WIRELESS if n == network)
        check(re.search(r"(^|__)network=" + re.escape(label_slug(label)) + r"-[0-9a-f]{8}(__|$)",
                        row["run"]), f"run {row['run']} is not named by its network's label {label!r}")


def check_wireless_headline(dom):
    """Rows named by the networks' labels, and no settings column: the network objects differ
    only in what the network column already tells."""
    check(dom["header"][:3] == ["network", "method", "workers"],
          f"wireless headline header {dom['header']}")
    check("settings" not in dom["header"], f"a settings column the labels make needless: {dom['header']}")
    shown = sorted({row[0] for row in dom["rows"]})
    check(shown == sorted(label for *_, label in WIRELESS),
          f"network column {shown}, expected the labels {[label for *_, label in WIRELESS]}")
    check(len(dom["rows"]) == 2 * len(WIRELESS), f"{len(dom['rows'])} wireless rows")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    gradwire = os.path.abspath(argv[1])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        skip(f"no matplotlib for {sys.executable} (Debian: python3-matplotlib)")
    if websocket is None:
        skip(f"no websocket module for {sys.executable} (Debian: python3-websocket)")
    chromium = find_chromium()
    if not chromium:
        skip("no chromium on PATH (Debian: chromium)")

    # On SIGTERM the clean-up below still runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tmp = tempfile.mkdtemp(prefix="gradwire-report-browser-test-")
    profile = os.path.join(tmp, "chromium-profile")
    home = os.path.join(tmp, "chromium-home")
    os.makedirs(home)
    browser, passed, started = None, False, time.monotonic()
    try:
        # The report script of this checkout, with this Python (which has matplotlib).
        env = dict(os.environ, GRADWIRE_ANALYSIS_DIR=os.path.join(SOURCE, "analysis"),
                   GRADWIRE_PYTHON=sys.executable)
        page, sweep_dir = sweep_and_report(gradwire, SWEEP, tmp, env)
        report_dir = os.path.dirname(page)
        with open(os.path.join(sweep_dir, "results.csv"), newline="") as f:
            results = list(csv.DictReader(f))
        check(len(results) == len(RATES) * 2 * len(SEEDS) and all(r["status"] == "ok" for r in results),
              f"the sweep did not run every run: {[(r['run'], r['status']) for r in results]}")
        wireless_page, wireless_dir = sweep_and_report(gradwire, WIRELESS_SWEEP, tmp, env)
        with open(os.path.join(wireless_dir, "results.csv"), newline="") as f:
            wireless_results = list(csv.DictReader(f))
        check(len(wireless_results) == 2 * len(WIRELESS)
              and all(r["status"] == "ok" for r in wireless_results),
              f"the wireless sweep did not run every run: "
              f"{[(r['run'], r['status']) for r in wireless_results]}")
        check_run_names(wireless_results)

        launched = time.monotonic()
        browser, url = start_chromium(chromium, profile, home)
        cdp = DevTools(url)
        target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        cdp.session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            cdp.call(domain + ".enable")
        cdp.call("Emulation.setDeviceMetricsOverride",
                 {"width": WIDTH, "height": 800, "deviceScaleFactor": 1, "mobile": False})

        images = open_and_check(cdp, wireless_page)
        check_wireless_headline(cdp.evaluate(NETWORK_LABELS_JS))
        images = open_and_check(cdp, page)
        figures = {i["alt"] for i in images}
        for stem in ("time_to_target", "accuracy_vs_time", "speedup_vs_bandwidth",
                     "bytes_vs_accuracy", "step_breakdown"):
            check(stem in figures, f"figure {stem} missing; the page has {sorted(figures)}")

        height = math.ceil(cdp.call("Page.getLayoutMetrics")["cssContentSize"]["height"])
        shot = cdp.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1}}, timeout_s=60)
        screenshot = os.path.join(report_dir, "report-1280.png")
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        w, h = png_size(screenshot)
        check(w == WIDTH and h >= height, f"screenshot is {w}x{h}, expected {WIDTH} wide and {height} high")

        check_headline(cdp.evaluate(HEADLINE_JS), results)
        print(f"browser checks: {time.monotonic() - launched:.1f} s; screenshot {w}x{h}: {screenshot}")
        print(f"report_browser_test passed in {time.monotonic() - started:.1f} s "
              f"({len(images)} images, {len(results)} runs)")
        passed = True
        return 0
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        stop_chromium(browser)
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        if passed and not os.environ.get("GRADWIRE_KEEP_BROWSER_TEST"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"outputs kept in {tmp} (browser-report/report.html, browser-report/report-1280.png, "
                  "browser-wireless-report/report.html, chromium.log)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
