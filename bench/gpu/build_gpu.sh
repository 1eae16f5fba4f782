# SPDX-License-Identifier: Apache-2.0
# Sourced by the GPU scripts: builds the tree with bench/gpu into build-gpu.
#   NCCL_HOME  prefix with include/nccl.h and lib/libnccl.so* (default: the
#              NCCL of the PyTorch wheel in /opt/torch/.venv)
#   DEPS       prefix with zstd headers/library when the machine lacks -dev packages
NCCL_HOME=${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$NCCL_HOME/lib:${DEPS:+$DEPS/lib:}${LD_LIBRARY_PATH:-}"
gpu_opts=(-Dnccl_root="$NCCL_HOME" -Dgpu=enabled -Dbuildtype=release)
[ -n "${DEPS:-}" ] && gpu_opts+=(-Ddeps_prefix="$DEPS")
MESON=meson; command -v meson >/dev/null || MESON="python3 -m mesonbuild.mesonmain"
NINJA=ninja; command -v ninja >/dev/null || NINJA="python3 -m ninja"
mkdir -p "$OUT"
$MESON setup build-gpu "${gpu_opts[@]}" >"$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log"; exit 1; }
$NINJA -C build-gpu >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
PLUGIN=$PWD/build-gpu/plugin/libnccl-profiler-ncclscope.so
EMPTY=$PWD/build-gpu/bench/libnccl-profiler-empty.so
CLI=$PWD/build-gpu/converter/ncclscope
NG=$(nvidia-smi -L | wc -l)
