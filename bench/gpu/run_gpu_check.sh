#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plugin under a real NCCL run (the GPU check, docs/gpu-check.md). Runs on a GPU
# machine from the repository root; writes logs and small traces to $OUT.
#   NCCL_HOME, DEPS as in build_gpu.sh
#   ITERS       operations per kind for the long run (default 25000: 4 kinds
#               = 100k operations per rank)
set -euo pipefail
OUT=${OUT:-/tmp/ncclscope-gpu}
ITERS=${ITERS:-25000}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/build_gpu.sh"
DRIVER=$PWD/build-gpu/bench/gpu/nccl-bench

run() { # name, env..., -- driver args
    local name=$1; shift
    local dir=/tmp/nsc-$name
    rm -rf "$dir"
    echo "== $name: $*"
    env NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLSCOPE_DIR="$dir" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT "$@" \
        >"$OUT/$name.log" 2>&1 || { tail -20 "$OUT/$name.log"; return 1; }
    grep -E "^-|ncclscope" "$OUT/$name.log" | head -8 # nccl-bench lines start with the tag "-"
    for f in "$dir"/*.nsc; do "$CLI" info "$f"; done | grep -E "NCCL API|events by type|dropped|closed|records " | tee "$OUT/$name.info"
    "$CLI" convert "$dir" -o "/tmp/$name.json" 2>&1 | tail -1
}

# Small recordings shipped in tests/data (every event type NCCL produces here).
OPS="--ops ar,ag,bc,sr --warmup 0 --repeats 1"
run small env NCCLSCOPE_EVENTS=all "$DRIVER" --gpus "$NG" $OPS --iters 20 --min 65536 --max 65536
cp /tmp/nsc-small/*.nsc "$OUT/small.nsc"
run small_net env NCCLSCOPE_EVENTS=all NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$DRIVER" --gpus "$NG" $OPS --iters 5 --min 1M --max 1M
cp /tmp/nsc-small_net/*.nsc "$OUT/small_net.nsc"
# The long run: >= 100k operations per rank, every event type, no drops allowed.
run long env NCCLSCOPE_EVENTS=all "$DRIVER" --gpus "$NG" $OPS --iters "$ITERS" --min 64 --max 64
run long_default "$DRIVER" --gpus "$NG" $OPS --iters "$ITERS" --min 64 --max 64
run net env NCCLSCOPE_EVENTS=all NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$DRIVER" --gpus "$NG" $OPS --iters 2000 --min 1M --max 1M
ls -la /tmp/nsc-*/ | tee "$OUT/sizes.txt"
