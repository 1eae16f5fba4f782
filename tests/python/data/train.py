# SPDX-License-Identifier: Apache-2.0
"""A training loop over fakedist (caller-mode test); the lines the test
expects are marked LINE:<name>."""
import os
import sys

import fakedist
import ncclscope

mode = sys.argv[1] if len(sys.argv) > 1 else "caller"
if mode != "none":
    ncclscope.trace(mode=mode, targets=["fakedist"], include=["__main__", "fakedist"],
                    c_calls=False, session="nccl")
fakedist.init(os.environ["NSC_PLUGIN"])


def train_step(i):
    fakedist.all_reduce(3000)  # LINE:allreduce
    if i % 2 == 0:
        fakedist.send(8)  # LINE:send


def evaluate():
    fakedist.all_gather(1000)  # LINE:allgather


def main():
    for i in range(4):
        train_step(i)
    evaluate()  # LINE:evaluate
    fakedist.backward(500)  # LINE:backward
    fakedist._lib.fake_collective(b"Broadcast", 10)  # not a target: no caller


main()  # LINE:main
print(ncclscope.status() if mode != "none" else {})
fakedist.finalize()
ncclscope.stop()
