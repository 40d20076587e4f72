#!/usr/bin/env python3
"""A plain PyTorch DistributedDataParallel training job, for `gradwire emulate`.

Nothing in it knows about gradwire: it reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as
torchrun would set them, trains with the gloo backend, and prints its progress. Run it over an
emulated network:

  sudo ./build/gradwire emulate scenarios/emulation/wifi-ax-4.json -- \\
      /usr/bin/python3 examples/emulate/ddp_train.py --steps 30

The task is a synthetic classification problem (inputs from a fixed Gaussian, labels from a
fixed random teacher network), so it needs no dataset and every rank draws its own shard. The
model's size (--hidden) sets how many gradient bytes DDP all-reduces each step, which is what
the network is asked to carry.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def make_model(features, hidden, classes):
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64, help="samples per rank and step")
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--log-every", type=int, default=5)
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)  # several ranks share this machine's cores
    began = time.time()
    dist.init_process_group("gloo", rank=rank, world_size=world)
    connected = time.time()

    torch.manual_seed(0)  # the same teacher and initial model on every rank
    teacher = make_model(args.features, 64, args.classes)
    model = DistributedDataParallel(make_model(args.features, args.hidden, args.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    parameters = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"ddp_train: {world} ranks, {parameters} parameters "
              f"({4 * parameters / 1e6:.2f} MB of gradient per step), "
              f"process group up after {connected - began:.2f} s", flush=True)

    generator = torch.Generator().manual_seed(1000 + rank)  # this rank's shard
    step_times = []
    for step in range(1, args.steps + 1):
        x = torch.randn(args.batch, args.features, generator=generator)
        with torch.no_grad():
            y = teacher(x).argmax(dim=1)
        start = time.time()
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP all-reduces the gradient buckets over the network here
        optimizer.step()
        step_times.append(time.time() - start)
        if rank == 0 and (step % args.log_every == 0 or step == args.steps):
            print(f"step {step:4d}  loss {loss.item():.4f}  step time {step_times[-1] * 1e3:.1f} ms",
                  flush=True)

    mean_step = sum(step_times[1:]) / max(1, len(step_times) - 1)
    print(json.dumps({"rank": rank, "steps": args.steps, "final_loss": loss.item(),
                      "mean_step_s": mean_step, "gradient_bytes": 4 * parameters,
                      "wall_s": time.time() - began}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
