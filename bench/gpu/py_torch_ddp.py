# SPDX-License-Identifier: Apache-2.0
"""A 4-process PyTorch DDP training loop (the Python callers' GPU check). Run under
torchrun with the ncclscope package active (run_python.sh):

    NCCLSCOPE_PYTHON=caller torchrun --nproc_per_node 4 py_torch_ddp.py --steps 50

DDP's bucket all-reduces run on autograd's threads during backward(); the
caller recorded for them is the training loop's backward() line
(py_caller_from: process).
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def model():
    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                         nn.Linear(4096, 1024))


def train(steps):
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    net = DDP(model().cuda(), device_ids=[rank], bucket_cap_mb=8)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    x = torch.randn(64, 1024, device="cuda")
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = net(x).square().mean()  # LINE:forward
        loss.backward()  # LINE:backward
        opt.step()
    torch.cuda.synchronize()
    dist.barrier()  # LINE:barrier
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    train(ap.parse_args().steps)
