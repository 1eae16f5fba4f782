# SPDX-License-Identifier: Apache-2.0
"""A real NCCL job that hangs: 2 ranks all_reduce in a loop; rank 1
skips its SKIP-th all_reduce (1-based) and sleeps, so rank 0 waits inside
that collective. Run with torchrun; ncclscope's watchdog should fire on
rank 0 (NCCLSCOPE_HANG_SECONDS) and `ncclscope hang` name rank 1 and the
collective's seqNumber. bench/gpu/run_hang.sh drives it."""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip", type=int, default=1000, help="the all_reduce rank 1 skips (1-based)")
    ap.add_argument("--elems", type=int, default=1 << 16)
    a = ap.parse_args()
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("nccl")
    x = torch.ones(a.elems, device="cuda")
    for i in range(1, a.skip + 1):
        if rank == 1 and i == a.skip:
            print("rank 1: skipping all_reduce %d, sleeping" % i, flush=True)
            time.sleep(3600)
        dist.all_reduce(x)
        if i % 100 == 0:
            torch.cuda.synchronize()
            print("rank %d: %d all_reduces done" % (rank, i), flush=True)
    print("rank %d: waiting for all_reduce %d" % (rank, a.skip), flush=True)
    torch.cuda.synchronize()  # rank 0 never gets past this
    print("rank %d: unexpected: all done" % rank, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
