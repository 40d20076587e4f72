#!/usr/bin/env python3
"""Trains a logistic regression through gradwire's simulated network (gradwire serve).

Your own training loop, gradwire's network: this one process plays every host of the scenario
(4 workers and a parameter server), each over its own ZeroMQ DEALER socket, and speaks the
protocol of sim/service/PROTOCOL.md. Per step each worker computes its gradient with numpy, takes a
fixed simulated compute time, pushes the float32 gradient bytes to the server host, and waits;
the server averages the n gradients when the last one *arrives in simulated time* and sends the
mean back; every worker applies it when its bytes arrive. The service turns each send into real
bytes over ns-3 TCP, so the simulated time per step is the network's answer.

Workers also report their steps (loss, times, bytes), and worker 0 answers the service's
"evaluate" commands, so the service writes metrics.jsonl and summary.json like any run.

    ./build/gradwire serve examples/python/logreg-scenario.json &
    /usr/bin/python3 examples/python/logreg_client.py --connect tcp://127.0.0.1:5555

or let the script start (and stop) the service itself:

    /usr/bin/python3 examples/python/logreg_client.py --serve ./build/gradwire

Needs python3-zmq and python3-numpy (Debian packages).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import zmq

VERSION = 1
PUSH, PULL = 1, 2  # our own message kinds (the service only carries them)


def header(kind, **fields):
    return dict(v=VERSION, type=kind, **fields)


class Host:
    """One host of the scenario: a socket, a simulated clock, and what it reports."""

    def __init__(self, context, endpoint, role, rank=None):
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)
        self.role, self.rank = role, rank
        self.host = None
        self.ended = False
        hello = header("hello", role=role)
        if rank is not None:
            hello["rank"] = rank
        self.send(hello)

    def send(self, head, payloads=()):
        frames = [json.dumps(head).encode()] + [bytes(p) for p in payloads]
        self.socket.send_multipart(frames)

    def report(self, seq, sends=(), next_ns=None, finished=False, steps=(), **extra):
        """Answers a command: messages sent (each (to, time_ns, kind, step, bytes)), the time
        of our next own event (None: we only wait for messages), step records."""
        entries, payloads = [], []
        for to, time_ns, kind, step, data in sends:
            entries.append(dict(to=to, time_ns=time_ns, kind=kind, round=0, step=step,
                                size=len(data), data=True))
            payloads.append(data)
        self.send(header("report", seq=seq, sends=entries, next_ns=next_ns,
                         finished=finished, steps=list(steps), **extra), payloads)


def make_data(workers, features=20, samples=4000, seed=0):
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=features)
    x = rng.normal(size=(samples, features)).astype(np.float32)
    y = (x @ w_true + 0.5 * rng.normal(size=samples) > 0).astype(np.float32)
    test = slice(0, samples // 5)
    train_x, train_y = x[samples // 5:], y[samples // 5:]
    shards = np.array_split(np.arange(len(train_y)), workers)
    return [(train_x[s], train_y[s]) for s in shards], (x[test], y[test])


def loss_and_gradient(w, x, y):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    eps = 1e-7
    loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
    return loss, (x.T @ (p - y) / len(y)).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connect", default="tcp://127.0.0.1:5555")
    ap.add_argument("--serve", metavar="GRADWIRE",
                    help="start `GRADWIRE serve` on a free loopback port first")
    ap.add_argument("--scenario", default=os.path.join(os.path.dirname(__file__),
                                                       "logreg-scenario.json"))
    ap.add_argument("--out", default="runs", help="with --serve: where the run folder goes")
    ap.add_argument("--compute-ms", type=float, default=5.0,
                    help="simulated compute time per step (ms)")
    ap.add_argument("--lr", type=float, help="learning rate (default: the scenario's)")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds without any message from the service before giving up")
    args = ap.parse_args()

    service = None
    endpoint = args.connect
    if args.serve:
        service = subprocess.Popen([args.serve, "serve", args.scenario, "--bind",
                                    "tcp://127.0.0.1:*", "--out", args.out, "-q"],
                                   stdout=subprocess.PIPE, text=True)
        first = service.stdout.readline()  # "serving NAME on ENDPOINT"
        if " on " not in first:
            sys.exit("the service did not start: " + first)
        endpoint = first.split(" on ")[-1].strip()

    with open(args.scenario) as f:
        scenario = json.load(f)
    n = scenario["training"]["workers"]
    steps = scenario["training"]["steps"]
    lr = args.lr or scenario["training"].get("optimizer", {}).get("lr", 0.05)
    compute_ns = int(args.compute_ms * 1e6)
    shards, (test_x, test_y) = make_data(n)
    features = test_x.shape[1]

    context = zmq.Context()
    workers = [Host(context, endpoint, "worker", r) for r in range(n)]
    server = Host(context, endpoint, "server")
    everyone = workers + [server]
    by_socket = {h.socket: h for h in everyone}
    poller = zmq.Poller()
    for h in everyone:
        poller.register(h.socket, zmq.POLLIN)

    # Training state: every worker holds a replica; the server gathers pushes per step.
    w = [np.zeros(features, dtype=np.float32) for _ in range(n)]
    step = [0] * n
    step_start_ns = [0] * n
    step_bytes = [0] * n
    last_loss = [0.0] * n
    pending_gradient = [None] * n
    pushes = {}  # step -> list of gradients

    def start_step(r, now_ns):
        """Compute now (numpy), finish after the simulated compute time."""
        step_start_ns[r] = now_ns
        last_loss[r], pending_gradient[r] = loss_and_gradient(w[r], *shards[r])
        return now_ns + compute_ns

    exit_code = 0
    while not all(h.ended for h in everyone):
        ready = dict(poller.poll(int(args.timeout * 1000)))
        if not ready:
            print("no word from the service within %.0f s" % args.timeout, file=sys.stderr)
            exit_code = 1
            break
        for sock in ready:
            h = by_socket[sock]
            frames = sock.recv_multipart()
            msg, payloads = json.loads(frames[0]), frames[1:]
            kind = msg["type"]
            if kind == "error":
                raise SystemExit("service error %s: %s" % (msg["code"], msg["message"]))
            if kind == "end":
                h.ended = True
                if msg["reason"] != "complete":
                    print("run ended: %s: %s" % (msg["reason"], msg["message"]), file=sys.stderr)
                    exit_code = 1
                elif h is server:
                    s = msg["summary"]
                    print("done: accuracy %.3f, simulated %.4f s, %d bytes on the wire"
                          % (s["final_accuracy"], s["sim_time_s"], s["bytes_on_wire"]))
                continue
            if kind == "welcome":
                h.host = msg["host"]
                # Workers start their first step when the network is ready; the server waits.
                # "parameters" sizes summary.json's dense_bytes (the model's element count).
                h.report(0, next_ns=start_step(h.rank, msg["start_ns"]) if h is not server else None,
                         parameters=features)
                continue
            if kind == "evaluate":  # worker 0 holds the common model (synchronous PS)
                p = 1.0 / (1.0 + np.exp(-(test_x @ w[0])))
                acc = float(np.mean((p > 0.5) == (test_y > 0.5)))
                loss, _ = loss_and_gradient(w[0], test_x, test_y)
                print("step %4d  simulated %.4f s  test accuracy %.3f"
                      % (msg["step"], msg["time_ns"] / 1e9, acc))
                h.send(header("evaluation", seq=msg["seq"], accuracy=acc, loss=loss,
                              samples=len(test_y), consensus_distance=0.0))
                continue
            assert kind == "advance", msg
            now, seq = msg["time_ns"], msg["seq"]
            deliveries = msg["deliveries"]
            payload_iter = iter(payloads)
            if h is server:
                sends = []
                for d in deliveries:
                    g = np.frombuffer(next(payload_iter), dtype=np.float32)
                    pushes.setdefault(d["step"], []).append(g)
                    if len(pushes[d["step"]]) == n:  # the last push of the step has arrived
                        mean = np.mean(pushes.pop(d["step"]), axis=0).astype(np.float32)
                        sends += [(r, now, PULL, d["step"], mean.tobytes()) for r in range(n)]
                h.report(seq, sends=sends)
                continue
            r = h.rank
            if not deliveries:  # our compute finished: push the gradient
                step_bytes[r] = msg["bytes_sent"]  # the host's byte count before the push
                g = pending_gradient[r]
                h.report(seq, sends=[(n, now, PUSH, step[r], g.tobytes())])
                continue
            # The averaged gradient arrived: apply it, record the step, start the next one.
            mean = np.frombuffer(next(payload_iter), dtype=np.float32)
            w[r] = w[r] - lr * mean
            record = dict(rank=r, step=step[r], start_s=step_start_ns[r] / 1e9,
                          compute_s=compute_ns / 1e9,
                          comm_s=(now - step_start_ns[r] - compute_ns) / 1e9, end_s=now / 1e9,
                          bytes_sent=msg["bytes_sent"] - step_bytes[r],
                          payload_bytes=4 * features, density=1.0, loss=last_loss[r])
            step[r] += 1
            if step[r] < steps:
                h.report(seq, next_ns=start_step(r, now), steps=[record])
            else:
                h.report(seq, finished=True, steps=[record])

    context.destroy(linger=0)
    if service:
        out, _ = service.communicate(timeout=30)
        print(out.strip())
        exit_code = exit_code or service.returncode
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
