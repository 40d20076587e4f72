#!/usr/bin/env python3
"""torch.distributed (gloo) all_reduce across emulated hosts, for the emulator's tests.

Every rank contributes a tensor of ELEMENTS float32 values equal to rank + 1; the sum is
world * (world + 1) / 2 everywhere. Prints one JSON line per rank with the all_reduce's
duration (after a small warm-up all_reduce that sets up gloo's connections) and whether the
sum is right. Reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun would set them.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    elements = int(sys.argv[1])
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    warm = torch.ones(16)
    dist.all_reduce(warm)
    dist.barrier()
    tensor = torch.full((elements,), float(rank + 1), dtype=torch.float32)
    start = time.time()
    dist.all_reduce(tensor)
    seconds = time.time() - start
    expected = world * (world + 1) / 2
    correct = bool(torch.all(tensor == expected).item())
    print(json.dumps({"rank": rank, "world": world, "elements": elements, "seconds": seconds,
                      "sum": tensor[0].item(), "expected": expected, "correct": correct}),
          flush=True)
    dist.destroy_process_group()
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
