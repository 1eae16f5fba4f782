#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package on a GPU machine: PyTorch DDP (4 processes), torch.distributed
# collectives called directly, and JAX (pmap, shard_map; one process, every
# GPU), each under the NCCL profiler plugin with the Python package in
# caller mode, then a check that every NCCL API call has its py_caller.
# From the repository root, after `meson setup build && ninja -C build`
# (the package must be built for the image's Python: build/python).
#   OUT      where logs, check results and example traces go (default /tmp/ncclscope-py)
#   NPROC    processes/GPUs (default 4)   ITERS   iterations (default 20)
#   MODE     caller (default) or functions
set -uo pipefail
OUT=${OUT:-/tmp/ncclscope-py}
NPROC=${NPROC:-4}
ITERS=${ITERS:-20}
MODE=${MODE:-caller}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CLI=$root/build/converter/ncclscope
PLUGIN=$root/build/plugin/libnccl-profiler-ncclscope.so
mkdir -p "$OUT"
python3 -c "import sys; sys.path.insert(0, '$root/build/python'); import ncclscope" ||
    { echo "build/python has no ncclscope for $(python3 --version): rebuild (meson setup --reconfigure build)"; exit 1; }
# .pth files are read only from site directories, not from PYTHONPATH: a
# sitecustomize on the path starts the package the way the installed .pth
# hook does (NCCLSCOPE_PYTHON), in every process torchrun starts.
mkdir -p "$OUT/site"
echo "import ncclscope._autoload  # noqa: F401" >"$OUT/site/sitecustomize.py"
export PYTHONPATH=$OUT/site:$root/build/python${PYTHONPATH:+:$PYTHONPATH}
export NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_PYTHON=$MODE
status=0

run() { # name min-share script args...
    local name=$1 share=$2 script=$3; shift 3
    local dir=$OUT/trace-$name
    rm -rf "$dir"
    echo "== $name ($MODE): $script $*"
    if ! NCCLSCOPE_DIR=$dir "$@" >"$OUT/$name.log" 2>&1; then
        tail -30 "$OUT/$name.log"; status=1; return
    fi
    python3 "$here/check_py_callers.py" "$CLI" "$dir" "$script" --min-share "$share" \
        --json "$OUT/$name.check.json" | tee "$OUT/$name.check.txt" || status=1
    "$CLI" stats "$dir" --by-caller | tee "$OUT/$name.by-caller.txt" | head -12
    ls -S "$dir"/*.nsc | tail -1 | xargs -I{} cp {} "$OUT/example-$name.nsc" # the smallest file
}

run torch_collectives 1.0 "$here/py_torch_collectives.py" \
    torchrun --nproc_per_node "$NPROC" "$here/py_torch_collectives.py" --iters "$ITERS"
run torch_ddp 1.0 "$here/py_torch_ddp.py" \
    torchrun --nproc_per_node "$NPROC" "$here/py_torch_ddp.py" --steps "$ITERS"
# JAX: XLA may run some all-reduces with its own kernels instead of NCCL;
# those never reach the plugin (the log shows what NCCL saw). The share
# reported is of the NCCL calls that did.
run jax 0.0 "$here/py_jax.py" python3 "$here/py_jax.py" --iters "$ITERS"
echo "results in $OUT (status $status)"
exit $status
