# SPDX-License-Identifier: Apache-2.0
"""torch.distributed collectives called directly, each on a marked line, so
the check can tell that every NCCL call's py_caller is that line:

    NCCLSCOPE_PYTHON=caller torchrun --nproc_per_node 4 py_torch_collectives.py --iters 20
"""
import argparse
import os

import torch
import torch.distributed as dist


def step(t, out, rs, world, rank):
    dist.all_reduce(t)  # LINE:all_reduce
    dist.all_gather_into_tensor(out, t)  # LINE:all_gather
    dist.broadcast(t, src=0)  # LINE:broadcast
    dist.reduce_scatter_tensor(rs, t)  # LINE:reduce_scatter
    peer = rank ^ 1
    if rank % 2 == 0:  # pairs exchange (send/recv become P2pApi)
        dist.send(t, peer)  # LINE:send
        dist.recv(t, peer)  # LINE:recv
    else:
        dist.recv(t, peer)  # LINE:recv
        dist.send(t, peer)  # LINE:send


def main(iters):
    rank = int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    t = torch.ones(1 << 20, device="cuda")
    out = torch.empty(world << 20, device="cuda")
    rs = torch.empty((1 << 20) // world, device="cuda")  # reduce_scatter's output: input / world
    for _ in range(iters):
        step(t, out, rs, world, rank)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    main(ap.parse_args().iters)
