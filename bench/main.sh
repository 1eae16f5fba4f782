#!/usr/bin/env bash
# The main job. On a machine with NVIDIA GPUs and NCCL: the plugin under a real
# NCCL run (bench/gpu/run_gpu_check.sh). Without a GPU: the real NCCL traces
# recorded on 2 x H200 and 4 x H200 (tests/data) replayed through the real
# plugin, exactly as NCCL would call it, then converted (Chrome JSON and
# Perfetto protobuf), summarized (stats) and reported (HTML).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for p in meson ninja-build libzstd-dev zlib1g-dev pkg-config; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    exec bash bench/gpu/run_gpu_check.sh
fi
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
OUT=${OUT:-ncclscope-demo}
rm -rf "$OUT" && mkdir -p "$OUT"
echo "No GPU here: replaying real NCCL 2.28.9 callback streams (2 x H200, 4 x H200) through the plugin."
for t in tests/data/*.nsc tests/data/h200x4_procs/*.nsc; do
    name=$(basename "$t" .nsc)
    NCCLSCOPE_DIR="$OUT/$name" NCCLSCOPE_EVENTS=all \
        build/converter/ncclscope replay --plugin build/plugin/libnccl-profiler-ncclscope.so "$t"
    build/converter/ncclscope info "$OUT/$name"/*.nsc
    build/converter/ncclscope convert "$OUT/$name" -o "$OUT/$name.json"
done
# The job-level views, on the 4-process job recorded on 4 x H200 (one
# process per GPU): its files as the plugin wrote them on the GPU machine.
JOB=tests/data/h200x4_procs
echo "A 4-process job recorded on 4 x H200 ($JOB): statistics, merged trace, report."
build/converter/ncclscope stats "$JOB" --top 5
build/converter/ncclscope convert "$JOB" -o "$OUT/job.json"
build/converter/ncclscope convert "$JOB" -o "$OUT/job.pftrace"
build/converter/ncclscope report "$JOB" -o "$OUT/report.html"
echo "Open $OUT/*.json or $OUT/job.pftrace in https://ui.perfetto.dev (or chrome://tracing),"
echo "and $OUT/report.html in any browser."
