# SPDX-License-Identifier: Apache-2.0
"""Run under `python -m ncclscope.run` (nothing of ncclscope is called
here): Python before NCCL's first communicator, a collective, Python after
the communicator ended; with the argument "no-nccl", no NCCL at all."""
import os
import sys
import time


def prepare(n):  # before any communicator
    return sum(range(n))


def cleanup():
    return 0


prepare(10)
if sys.argv[1:] != ["no-nccl"]:
    import fakedist

    # the trace file on disk before the first communicator (its SESSION is
    # then rewritten with NCCL's API version)
    wait = os.environ.get("JOINED_WAIT_FOR")
    for _ in range(1000 if wait else 0):
        if any(f.endswith(".nsc") for f in os.listdir(wait)):
            break
        time.sleep(0.01)

    fakedist.init(os.environ["NSC_PLUGIN"])
    fakedist.all_reduce(3000)
    fakedist.finalize()
cleanup()
