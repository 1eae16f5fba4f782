# SPDX-License-Identifier: Apache-2.0
"""functions mode: Python and C calls on 4 threads at once, exceptions,
generators; prints what each thread did so the test can count."""
import math
import sys
import threading

import ncclscope

backend = sys.argv[1]
ncclscope.trace(mode="functions", backend=backend, include=["__main__"])


def leaf(x):
    return math.sqrt(x)  # a C call


def gen(n):
    for i in range(n):
        yield leaf(i)


def fails():
    raise ValueError("x")


def middle(n):
    s = 0.0
    for i in range(n):
        s += leaf(i)
    s += sum(gen(3))
    try:
        fails()
    except ValueError:
        pass
    return s


barrier = threading.Barrier(4)


def worker(n):
    barrier.wait()
    for _ in range(n):
        middle(5)


threads = [threading.Thread(target=worker, args=(10 + k,)) for k in range(3)]
for t in threads:
    t.start()
worker(10)
for t in threads:
    t.join()
st = ncclscope.status()
ncclscope.stop()
print("STATUS", st)
