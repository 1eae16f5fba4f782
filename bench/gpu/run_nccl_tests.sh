#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Offered vs kept on real NCCL workloads: every nccl-tests
# binary, 64 B to 256 MiB, NCCLSCOPE_EVENTS=all and every other ncclscope
# setting at its default, once under the counting reference plugin (what
# NCCL offers) and once under ncclscope (what it keeps), on NVLink and on the
# network path; then the same with one process per GPU through nccl-bench
# --procs. bench/gpu/nccl_tests_report.py turns $OUT into a markdown table.
#
#   bash bench/gpu/run_nccl_tests.sh NCCL_TESTS [NCCL_PREFIX]
#
#   NCCL_TESTS   a nccl-tests source tree, or a .tar of one (git archive of
#                NVIDIA/nccl-tests); nothing of it is ever committed
#   NCCL_PREFIX  NCCL with include/nccl.h and lib/libnccl.so* (default: the
#                PyTorch wheel's copy on the GPU machines); a lib holding only
#                libnccl.so.2 gets a prefix of links under $WORK
# Environment (all optional):
#   OUT          results (default /tmp/ncclscope-nccl-tests): report.md, and
#                runs/<case>/<plugin>/{cmd,log,status,counts/,info.txt}
#   WORK         nccl-tests build and the NCCL prefix links (default
#                .nccl-tests/work, git-ignored); reused when already built
#   DEPS         prefix with zstd headers/library (as bench/gpu/build_gpu.sh)
#   CUDA_HOME    (/usr/local/cuda)   NVCC_GENCODE (sm_90 only: H100/H200)
#   STEPS        any of "build nvlink net procs report" (default: all); run
#                them as separate commands where a command's time is
#                limited (docs/gpu-check.md)
#   TESTS        nccl-tests binaries (default: all ten)
#   PLUGINS      "counting ncclscope"   PROC_OPS nccl-bench ops (ar,ag,rs,bc,sr)
#   SMALL_ITERS/SMALL_WARMUP  -n/-w from 64 B to 1 MiB (1000/20)
#   LARGE_ITERS/LARGE_WARMUP  -n/-w from 4 MiB to 256 MiB (10/2)
#   RUN_TIMEOUT  seconds per run before it is killed and marked (300)
#   KEEP_TRACES  1: leave ncclscope's traces under $TRACES (/tmp/nsc-nccl-tests)
#   NG           GPUs to use (default: all that nvidia-smi lists)
# Every run writes into $OUT and a failed run does not stop the others: its
# status file says why, and the report says so in the table.
set -uo pipefail
if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit $(( $# < 1 ))
fi
SRC=$1
NCCL_PREFIX=${2:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
OUT=${OUT:-/tmp/ncclscope-nccl-tests}
WORK=${WORK:-$PWD/.nccl-tests/work}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC_GENCODE=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
STEPS=${STEPS:-build nvlink net procs report}
TESTS=${TESTS:-all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter hypercube}
PLUGINS=${PLUGINS:-counting ncclscope}
PROC_OPS=${PROC_OPS:-ar,ag,rs,bc,sr}
SMALL_ITERS=${SMALL_ITERS:-1000}
SMALL_WARMUP=${SMALL_WARMUP:-20}
LARGE_ITERS=${LARGE_ITERS:-10}
LARGE_WARMUP=${LARGE_WARMUP:-2}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
TRACES=${TRACES:-/tmp/nsc-nccl-tests}
here=$(cd "$(dirname "$0")" && pwd)
has() { [[ " $STEPS " == *" $1 "* ]]; }
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/progress.log"; }
mkdir -p "$OUT" "$WORK"
[ -d "$NCCL_PREFIX/include" ] || { echo "no NCCL headers under $NCCL_PREFIX/include" >&2; exit 1; }

# ---- an NCCL prefix whose lib has libnccl.so (nccl-tests links -lnccl) ----
NCCL_HOME=$NCCL_PREFIX
if [ ! -e "$NCCL_PREFIX/lib/libnccl.so" ]; then
    sos=("$NCCL_PREFIX"/lib/libnccl.so.*)
    so=${sos[0]}
    [ -e "$so" ] || { echo "no libnccl.so* under $NCCL_PREFIX/lib" >&2; exit 1; }
    NCCL_HOME=$WORK/nccl-prefix
    mkdir -p "$NCCL_HOME/lib"
    ln -sfn "$NCCL_PREFIX/include" "$NCCL_HOME/include"
    ln -sf "$so" "$NCCL_HOME/lib/libnccl.so"
    ln -sf "$so" "$NCCL_HOME/lib/$(basename "$so")"
fi
export NCCL_HOME

# ---- ncclscope, the counting plugin, nccl-bench (meson, build-gpu) ----
# build_gpu.sh exits when the build fails: nothing can run without it.
NG_WANT=${NG:-}
# shellcheck source=bench/gpu/build_gpu.sh
source "$here/build_gpu.sh"
export LD_LIBRARY_PATH="$CUDA_HOME/lib64:$LD_LIBRARY_PATH"
COUNTING=$PWD/build-gpu/bench/libnccl-profiler-counting.so
NCCL_BENCH=$PWD/build-gpu/bench/gpu/nccl-bench
NG=${NG_WANT:-$NG} # GPUs: every one nvidia-smi lists, unless NG says otherwise
{ date -u; nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)"; ls -l "$NCCL_PREFIX"/lib/libnccl.so*;
  git -C "$PWD" log --oneline -1; } >"$OUT/machine.txt" 2>&1

# ---- nccl-tests: unpack (a .tar) and build once ----
TBUILD=$WORK/nccl-tests-build
if has build || [ ! -x "$TBUILD/all_reduce_perf" ]; then
    if [ -f "$SRC" ]; then
        rm -rf "$WORK/nccl-tests-src" && mkdir -p "$WORK/nccl-tests-src"
        tar -C "$WORK/nccl-tests-src" -xf "$SRC" || { echo "cannot unpack $SRC" >&2; exit 1; }
        SRCDIR=$(dirname "$(find "$WORK/nccl-tests-src" -maxdepth 3 -name Makefile -path '*/src/Makefile' | head -1)")/..
    else
        SRCDIR=$SRC
    fi
    [ -f "$SRCDIR/src/Makefile" ] || { echo "$SRC: not a nccl-tests tree (no src/Makefile)" >&2; exit 1; }
    log "building nccl-tests from $SRC against $NCCL_HOME"
    t0=$(date +%s)
    if ! make -C "$SRCDIR/src" -j"$(nproc)" MPI=0 NCCL_HOME="$NCCL_HOME" CUDA_HOME="$CUDA_HOME" \
        NVCC_GENCODE="$NVCC_GENCODE" BUILDDIR="$TBUILD" >"$OUT/nccl-tests-build.log" 2>&1; then
        tail -30 "$OUT/nccl-tests-build.log"
        echo "nccl-tests did not build (log: $OUT/nccl-tests-build.log)" >&2
        exit 1
    fi
    log "nccl-tests built in $(( $(date +%s) - t0 )) s"
fi

# ---- one run ----
# run_case CASE PLUGIN EXTRA_ENV -- command...: the plugin and every
# NCCLSCOPE_* setting but EVENTS at its default; output under
# $OUT/runs/CASE/PLUGIN.
run_case() {
    local case=$1 plugin=$2 extra=$3; shift 4
    local dir=$OUT/runs/$case/$plugin trace=$TRACES/$case-$plugin so
    case $plugin in
    counting) so=$COUNTING ;;
    ncclscope) so=$PLUGIN ;;
    *) echo "unknown plugin $plugin" >&2; return 1 ;;
    esac
    rm -rf "$dir" "$trace" && mkdir -p "$dir/counts"
    local unset_args=() v
    for v in $(compgen -e | grep '^NCCLSCOPE_'); do unset_args+=(-u "$v"); done
    { echo "$extra NCCL_PROFILER_PLUGIN=$so NCCLSCOPE_EVENTS=all NCCLSCOPE_DIR=$trace NCCLSCOPE_COUNT_DIR=$dir/counts"
      printf '%q ' "$@"; echo; } >"$dir/cmd"
    local t0 rc secs
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    timeout -k 10 "$RUN_TIMEOUT" env "${unset_args[@]}" $extra NCCL_PROFILER_PLUGIN="$so" \
        NCCLSCOPE_EVENTS=all NCCLSCOPE_DIR="$trace" NCCLSCOPE_COUNT_DIR="$dir/counts" "$@" \
        >"$dir/log" 2>&1
    rc=$?
    secs=$(( ($(date +%s%N) - t0) / 1000000 ))
    secs=$(printf "%d.%03d" $((secs / 1000)) $((secs % 1000)))
    case $rc in
    0) echo "ok $secs" >"$dir/status" ;;
    124 | 137) echo "timeout $secs (after ${RUN_TIMEOUT} s)" >"$dir/status" ;;
    *) echo "failed $secs (exit $rc)" >"$dir/status" ;;
    esac
    if [ "$plugin" = ncclscope ]; then
        if ls "$trace"/*.nsc >/dev/null 2>&1; then
            for f in "$trace"/*.nsc; do "$CLI" info "$f"; echo; done >"$dir/info.txt" 2>&1
            du -sb "$trace" | cut -f1 >"$dir/trace_bytes"
        else
            echo "no trace written" >"$dir/info.txt"
        fi
        [ "${KEEP_TRACES:-0}" = 1 ] || rm -rf "$trace"
    fi
    log "$case $plugin: $(cat "$dir/status")"
}

# nccl-tests, one process driving every GPU (-t N -g 1), small sizes with
# many iterations (the event rate), large ones with few (the time).
sweep() { # path-name extra-env
    local path=$1 extra=$2 t p
    for t in $TESTS; do
        local bin=$TBUILD/${t}_perf
        for p in $PLUGINS; do
            if [ ! -x "$bin" ]; then
                mkdir -p "$OUT/runs/$t-$path/$p" && echo "failed 0 (no binary $bin)" >"$OUT/runs/$t-$path/$p/status"
                log "$t-$path $p: no binary $bin"
                continue
            fi
            # two processes (small sizes, large sizes); the second runs even
            # when the first failed, the status keeps the first failure
            # shellcheck disable=SC2016 # expanded by the inner bash
            run_case "$t-$path" "$p" "$extra" -- bash -c '"$0" -t "$1" -g 1 -b 64 -e 1M -f 4 -n "$2" -w "$3" -c 0
                r=$?; "$0" -t "$1" -g 1 -b 4M -e 256M -f 4 -n "$4" -w "$5" -c 0 || exit $?; exit $r' \
                "$bin" "$NG" "$SMALL_ITERS" "$SMALL_WARMUP" "$LARGE_ITERS" "$LARGE_WARMUP"
        done
    done
}

NET_ENV="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
if has nvlink; then log "== nccl-tests, NVLink, $NG GPUs, one process"; sweep nvlink ""; fi
if has net; then log "== nccl-tests, network path, $NG GPUs, one process"; sweep net "$NET_ENV"; fi
if has procs; then
    log "== nccl-bench --procs: one process per GPU"
    for path in nvlink net; do
        extra=""; [ $path = net ] && extra=$NET_ENV
        for p in $PLUGINS; do
            run_case "nccl_bench_procs-$path" "$p" "$extra" -- "$NCCL_BENCH" --gpus "$NG" --procs \
                --ops "$PROC_OPS" --min 64 --max 256M --factor 4 --iters "$SMALL_ITERS" \
                --warmup "$SMALL_WARMUP" --repeats 1 --tag "$p"
        done
    done
fi
if has report; then
    python3 "$here/nccl_tests_report.py" "$OUT/runs" -o "$OUT/report.md"
    rc=$?
    cat "$OUT/report.md"
    log "report: $OUT/report.md (exit $rc: 0 nothing dropped, 1 drops, 2 failed or missing runs)"
    exit $rc
fi
