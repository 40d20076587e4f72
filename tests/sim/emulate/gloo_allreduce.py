#!/usr/bin/env python3
"""torch.distributed (gloo) all_reduce across emulated hosts, for the emulator's tests.

Usage: gloo_allreduce.py ELEMENTS [REPEATS]

Every rank contributes a tensor of ELEMENTS float32 values equal to rank + 1; the sum is
world * (world + 1) / 2 everywhere. After a small warm-up all_reduce that sets up gloo's
connections, the all_reduce runs REPEATS times (default 1), each after a barrier and a second
of quiet, so the kernel's TCP starts each one as a fresh connection would (it restarts slow
start after an idle period), as the simulator's connections do. Prints one JSON line per rank
with the shortest duration ("seconds"), every duration, and whether every sum was right.
Reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun would set them.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    elements = int(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    warm = torch.ones(16)
    dist.all_reduce(warm)
    dist.barrier()
    expected = world * (world + 1) / 2
    durations = []
    correct = True
    total = 0.0
    for _ in range(repeats):
        tensor = torch.full((elements,), float(rank + 1), dtype=torch.float32)
        dist.barrier()
        time.sleep(1.0)
        start = time.time()
        dist.all_reduce(tensor)
        durations.append(time.time() - start)
        correct = correct and bool(torch.all(tensor == expected).item())
        total = tensor[0].item()
    print(json.dumps({"rank": rank, "world": world, "elements": elements,
                      "seconds": min(durations), "all_seconds": durations,
                      "sum": total, "expected": expected, "correct": correct}),
          flush=True)
    dist.destroy_process_group()
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
