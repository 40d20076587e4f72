#!/usr/bin/env python3
"""Converts a FedScale client behaviour trace into a gradwire availability trace.

FedScale's device availability trace (Lai et al., "FedScale: Benchmarking Model and System
Performance of Federated Learning at Scale", ICML 2022) maps each client id to
{"active": [...], "inactive": [...], "finish_time": ..., ...}: client c is available from
active[i] to inactive[i] (seconds), and the whole list repeats with period finish_time
(FedScale takes the time modulo finish_time). This script reads its JSON form (or, with
--pickle, the pickle FedScale ships) and writes gradwire's format (docs/scenarios.md,
"Participation"): one `rank,start_s,end_s` line per available interval.

Clients become ranks 0, 1, ... in the order --clients lists them, or else in increasing id
(numeric ids by value), the first --workers of them. Times are mapped as
gradwire_s = (fedscale_s - offset) * scale, so a day of device behaviour can drive a run of
minutes (--scale) from any instant of the trace (--offset); the periodic trace is unrolled up
to --until FedScale seconds after the offset (default: each client's own finish_time).

    analysis/fedscale_trace.py client_behave_trace.json --workers 8 --scale 0.01 -o trace.csv

Errors (an unreadable file, a client without matching lists) print one line naming the file
and the client, and exit with status 2. Standard library only.
"""
import argparse
import json
import math
import pickle
import sys


class TraceError(Exception):
    """A problem with the input, reported as one line and exit status 2."""


def _number(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TraceError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def client_intervals(client, record, offset, until):
    """The client's available intervals in FedScale seconds after `offset`, unrolled up to
    `until` (None: its finish_time), sorted and merged."""
    where = f"client {client}"
    if not isinstance(record, dict):
        raise TraceError(f"{where}: expected an object with active, inactive and finish_time")
    for key in ("active", "inactive"):
        if not isinstance(record.get(key), list):
            raise TraceError(f"{where}: expected a list '{key}'")
    active = [_number(v, f"{where}: active") for v in record["active"]]
    inactive = [_number(v, f"{where}: inactive") for v in record["inactive"]]
    if len(active) != len(inactive):
        raise TraceError(f"{where}: expected as many active ({len(active)}) as inactive "
                         f"({len(inactive)}) instants")
    if "finish_time" not in record:
        raise TraceError(f"{where}: expected 'finish_time' (the trace's period)")
    period = _number(record["finish_time"], f"{where}: finish_time")
    if period <= 0:
        raise TraceError(f"{where}: expected finish_time > 0, got {period:g}")
    horizon = period if until is None else until
    # Absolute FedScale time of the window [offset, offset + horizon).
    start, end = offset, offset + horizon
    out = []
    first_cycle = math.floor(start / period)
    cycle = first_cycle
    while cycle * period < end:
        base = cycle * period
        for a, b in zip(active, inactive):
            lo, hi = max(a + base, start), min(b + base, end)
            if hi > lo:
                out.append((lo - offset, hi - offset))
        cycle += 1
    out.sort()
    merged = []
    for lo, hi in out:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _sort_key(client):
    text = str(client)
    return (0, int(text), text) if text.isdigit() else (1, 0, text)


def convert(trace, workers=None, clients=None, scale=1.0, offset=0.0, until=None):
    """The gradwire trace (text) for `trace`, a dict client id -> FedScale record."""
    if not isinstance(trace, dict) or not trace:
        raise TraceError("expected an object mapping client ids to their behaviour")
    by_text = {str(k): k for k in trace}
    if clients:
        missing = [c for c in clients if c not in by_text]
        if missing:
            raise TraceError(f"client {missing[0]} is not in the trace")
        chosen = [by_text[c] for c in clients]
    else:
        chosen = sorted(trace, key=_sort_key)
    if workers is not None:
        if workers > len(chosen):
            raise TraceError(f"expected at most {len(chosen)} workers (the clients there are), "
                             f"got {workers}")
        chosen = chosen[:workers]
    lines = ["# gradwire availability trace from a FedScale behaviour trace",
             f"# scale {scale:g}, offset {offset:g} s, until "
             f"{'finish_time' if until is None else f'{until:g} s'}",
             "rank,start_s,end_s"]
    for rank, client in enumerate(chosen):
        lines.append(f"# rank {rank}: client {client}")
        for lo, hi in client_intervals(client, trace[client], offset, until):
            lines.append(f"{rank},{lo * scale!r},{hi * scale!r}")
    return "\n".join(lines) + "\n"


def load(path, use_pickle):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TraceError(f"{path}: cannot be read ({e.strerror})") from None
    if use_pickle:
        # A pickle runs code of its author's choosing when loaded: only for files one trusts.
        try:
            return pickle.loads(data)
        except Exception as e:  # pickle raises many kinds
            raise TraceError(f"{path}: not a readable pickle ({e})") from None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise TraceError(f"{path}: not JSON ({e}); a FedScale pickle needs --pickle") from None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="FedScale behaviour trace (JSON; a pickle with --pickle)")
    p.add_argument("-o", "--output", help="file to write (default: standard output)")
    p.add_argument("--workers", type=int, help="ranks to make (the first clients)")
    p.add_argument("--clients", help="comma-separated client ids, in rank order")
    p.add_argument("--scale", type=float, default=1.0,
                   help="simulated seconds per FedScale second (default 1)")
    p.add_argument("--offset", type=float, default=0.0,
                   help="FedScale second that becomes simulated time 0 (default 0)")
    p.add_argument("--until", type=float,
                   help="FedScale seconds after the offset to unroll the periodic trace to "
                        "(default: each client's finish_time)")
    p.add_argument("--pickle", action="store_true",
                   help="read a Python pickle (runs code from the file: trusted files only)")
    args = p.parse_args(argv)
    try:
        if not (args.scale > 0 and math.isfinite(args.scale)):
            raise TraceError(f"--scale: expected a number > 0, got {args.scale:g}")
        if not (args.offset >= 0 and math.isfinite(args.offset)):
            raise TraceError(f"--offset: expected a number >= 0, got {args.offset:g}")
        if args.until is not None and not (args.until > 0 and math.isfinite(args.until)):
            raise TraceError(f"--until: expected a number > 0, got {args.until:g}")
        if args.workers is not None and args.workers < 1:
            raise TraceError(f"--workers: expected at least 1, got {args.workers}")
        clients = [c.strip() for c in args.clients.split(",")] if args.clients else None
        text = convert(load(args.trace, args.pickle), args.workers, clients, args.scale,
                       args.offset, args.until)
    except TraceError as e:
        where = "" if str(e).startswith(args.trace) else f"{args.trace}: "
        print(f"fedscale_trace: {where}{e}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
