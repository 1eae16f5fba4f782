# SPDX-License-Identifier: Apache-2.0
"""A stand-in for torch.distributed: Python functions that issue NCCL calls
through the fake NCCL library (fake_nccl_lib.c), as torch's do through
ProcessGroupNCCL. Tests name it as the caller-mode target."""
import ctypes
import os

_lib = ctypes.CDLL(os.environ["NSC_FAKE_LIB"])
_lib.fake_collective.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
_lib.fake_collective_on_thread.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
_lib.fake_send.argtypes = [ctypes.c_uint64]


def init(plugin, rank=0, nranks=1):
    assert _lib.fake_load(plugin.encode()) == 0
    assert _lib.fake_init(rank, nranks) == 0


def _wrapper(fn):  # like torch's @_exception_logger: targets calling targets
    def inner(*a, **k):
        return fn(*a, **k)
    inner.__name__ = inner.__qualname__ = fn.__name__
    return inner


@_wrapper
def all_reduce(count):
    _lib.fake_collective(b"AllReduce", count)


def all_gather(count):
    _lib.fake_collective(b"AllGather", count)


def send(count):
    _lib.fake_send(count)


def backward(count):
    """Like DDP's backward: the all-reduce runs on another (non-Python) thread."""
    _lib.fake_collective_on_thread(b"AllReduce", count)


def finalize():
    _lib.fake_finalize()
