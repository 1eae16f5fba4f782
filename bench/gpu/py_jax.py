# SPDX-License-Identifier: Apache-2.0
"""JAX on every local GPU from one process: pmap with psum and all_gather,
and shard_map (under jit) with psum. XLA issues the NCCL calls from its own
threads after the Python call returned (asynchronous dispatch): the caller
recorded is the latest jitted call (py_caller_from: process).

    NCCLSCOPE_PYTHON=caller python py_jax.py --iters 20
"""
import argparse
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

try:
    from jax import shard_map
except ImportError:  # older jax
    from jax.experimental.shard_map import shard_map


def main(iters):
    n = jax.local_device_count()
    mesh = Mesh(np.array(jax.local_devices()), ("d",))

    @partial(jax.pmap, axis_name="d")
    def pm_psum(x):
        return jax.lax.psum(x, "d")

    @partial(jax.pmap, axis_name="d")
    def pm_gather(x):
        return jax.lax.all_gather(x, "d")

    @jax.jit
    @partial(shard_map, mesh=mesh, in_specs=P("d"), out_specs=P())
    def sm_psum(x):
        return jax.lax.psum(x.sum(0), "d")

    x = jnp.ones((n, 1 << 20), jnp.float32)
    xs = jax.device_put(jnp.ones((n * 8, 1 << 16), jnp.float32), NamedSharding(mesh, P("d")))
    for _ in range(iters):
        a = pm_psum(x)  # LINE:pmap_psum
        b = pm_gather(x)  # LINE:pmap_all_gather
        c = sm_psum(xs)  # LINE:shard_map_psum
    jax.block_until_ready((a, b, c))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    main(ap.parse_args().iters)
