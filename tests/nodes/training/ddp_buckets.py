"""PyTorch DDP's own bucket assignment for a list of parameter sizes, as DDP's Reducer
rebuilds its buckets after the first iteration: gradients in ready order (reverse parameter
order), limits [first bucket cap, bucket cap] in bytes, float32 gradients.

usage: ddp_buckets.py FIRST_BYTES CAP_BYTES NUMEL...   prints the buckets' parameter indices
as JSON, one list per bucket, in the order DDP reduces them."""
import json
import sys

import torch
import torch.distributed as dist


def main(argv):
    first, cap = int(argv[1]), int(argv[2])
    tensors = [torch.empty(int(n), dtype=torch.float32) for n in argv[3:]]
    order = list(reversed(range(len(tensors))))
    buckets, _ = dist._compute_bucket_assignment_by_size(
        [tensors[i] for i in order], [first, cap], [False] * len(tensors), order)
    print(json.dumps([list(b) for b in buckets]))


if __name__ == "__main__":
    main(sys.argv)
