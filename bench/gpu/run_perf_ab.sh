#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cost and rate targets (docs/benchmarks.md), measured as an A/B in one run:
# this tree's ncclscope against a baseline build of ncclscope, beside the
# empty and floor reference plugins, on the same machine, interleaved.
#   C. cold callbacks (ncclscope-bench --cold KIB): each call alone in NCCL's
#      order, caches scrubbed before it, a locked add after it
#   T. nccl-tests all_reduce_perf -b 64 -e 64 -t NG -g 1 (one process, every GPU)
#   P. nccl-bench --procs (one process per GPU), 64 B all_reduce
#   R. the harness at a fixed rate per process (RATE callbacks/s, split over
#      N writers) for each N of WRITERS: kept everything, and drained in time?
#   K. (not by default) this tree's knee (--knee KNEE_S) for WRITERS and MIXES
# Inputs (environment):
#   BASE_TAR   git archive of the baseline tree (its plugin is built here);
#              without it, only this tree's plugins run
#   NT_TAR     nccl-tests archive (git archive of NVIDIA/nccl-tests)
#   DEPS       prefix with zstd (bench/gpu/build_gpu.sh)
#   OUT (/tmp/perf-ab)  ROUNDS (4)  ITERS (30000)  PHASES ("C T P R")
#   COLD_KIB ("256 4096")  RATE (22e6)  WRITERS ("1 2 4 8 16")  MIXES (allreduce64)
# Writes $OUT/cost.tsv (phase, config, round, value), $OUT/cold.json,
# $OUT/rate.json and prints medians (bench/gpu/perf_ab_report.py).
set -uo pipefail
OUT=${OUT:-/tmp/perf-ab}
ROUNDS=${ROUNDS:-4}
ITERS=${ITERS:-30000}
PHASES=${PHASES:-C T P R}
COLD_KIB=${COLD_KIB:-256 4096}
RATE=${RATE:-22e6}
WRITERS=${WRITERS:-1 2 4 8 16}
MIXES=${MIXES:-allreduce64}
has() { [[ " $PHASES " == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
RES=$OUT
OUT=/tmp/perf-ab-build # build_gpu.sh's logs stay here
mkdir -p "$OUT"
t0=$(date +%s)
log() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

# ---- nccl-tests all_reduce_perf only, in the background ----
NCCL_PREFIX=${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NTW=/tmp/nt
ART=
if has T && [ -n "${NT_TAR:-}" ]; then
    mkdir -p "$NTW/src" "$NTW/prefix/lib"
    tar -xf "$NT_TAR" -C "$NTW/src"
    ln -sfn "$NCCL_PREFIX/include" "$NTW/prefix/include"
    so=$(ls "$NCCL_PREFIX"/lib/libnccl.so* | head -1)
    ln -sf "$so" "$NTW/prefix/lib/libnccl.so"
    ln -sf "$so" "$NTW/prefix/lib/$(basename "$so")"
    ntsrc=$(dirname "$(find "$NTW/src" -maxdepth 3 -path '*/src/Makefile' | head -1)")
    (make -C "$ntsrc" -j16 MPI=0 NCCL_HOME="$NTW/prefix" CUDA_HOME="$CUDA_HOME" \
        NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR="$NTW/build" \
        os.build "$NTW/build/all_reduce_perf" >"$NTW/build.log" 2>&1 || tail -20 "$NTW/build.log") &
    ntpid=$!
    ART=$NTW/build/all_reduce_perf
fi

# ---- this tree (build-gpu) and the baseline plugin ----
# shellcheck source=bench/gpu/build_gpu.sh
source "$here/build_gpu.sh"
FLOOR=$PWD/build-gpu/bench/libnccl-profiler-floor.so
HARNESS=$PWD/build-gpu/bench/ncclscope-bench
BENCH=$PWD/build-gpu/bench/gpu/nccl-bench
log "built this tree"
BASE=
if [ -n "${BASE_TAR:-}" ]; then
    rm -rf /tmp/base-src && mkdir -p /tmp/base-src && tar -xf "$BASE_TAR" -C /tmp/base-src
    if (cd /tmp/base-src && $MESON setup build -Dbuildtype=release ${DEPS:+-Ddeps_prefix=$DEPS} \
            >/tmp/base-setup.log 2>&1 && $NINJA -C build plugin/libnccl-profiler-ncclscope.so \
            >/tmp/base-build.log 2>&1); then
        BASE=/tmp/base-src/build/plugin/libnccl-profiler-ncclscope.so
    else
        tail -20 /tmp/base-setup.log /tmp/base-build.log
    fi
    log "built the baseline: ${BASE:-failed}"
fi
[ -n "${ntpid:-}" ] && { wait "$ntpid"; log "nccl-tests: $( [ -x "$ART" ] && echo built || echo failed)"; }
export LD_LIBRARY_PATH="$CUDA_HOME/lib64:$LD_LIBRARY_PATH"
{ nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)|L2|L3"; } | tee "$RES/machine.txt"

CONFIGS=${CONFIGS:-none empty tsc floor ${BASE:+base} new}
so_of() {
    case $1 in
    empty) echo "$EMPTY" ;; floor | tsc) echo "$FLOOR" ;; base) echo "$BASE" ;; new) echo "$PLUGIN" ;;
    esac
}
cfg_env() {
    [ "$1" = none ] && { echo "NCCLSCOPE_EVENTS=all"; return; }
    echo "NCCL_PROFILER_PLUGIN=$(so_of "$1") NCCLSCOPE_EVENTS=all NCCLSCOPE_FLOOR=$1"
}
: >"$RES/cost.tsv"

if has C; then
    plugs=()
    for c in empty floor ${BASE:+base} new; do plugs+=(--plugin "$(so_of "$c")"); done
    echo "[" >"$RES/cold.json"
    for kib in $COLD_KIB; do
        for r in $(seq 1 "$ROUNDS"); do
            "$HARNESS" "${plugs[@]}" --thread-counts 1 --seconds 1 --mix allreduce64 --cold "$kib" \
                --json /tmp/cold.json >/dev/null 2>&1
            sed '1d;$d' /tmp/cold.json | sed "s/\"cold_kib\"/\"round\": $r, \"cold_kib\"/" >>"$RES/cold.json"
            echo "," >>"$RES/cold.json"
            # the floor's timestamp alone
            NCCLSCOPE_FLOOR=tsc "$HARNESS" --plugin "$FLOOR" --thread-counts 1 --seconds 1 --mix allreduce64 \
                --cold "$kib" --json /tmp/cold.json >/dev/null 2>&1
            sed '1d;$d' /tmp/cold.json | sed "s/\"cold_kib\"/\"round\": $r, \"cold_kib\"/; s/floor.so\"/floor.so?tsc\"/" >>"$RES/cold.json"
            echo "," >>"$RES/cold.json"
        done
        log "cold $kib KiB done"
    done
    echo "{}]" >>"$RES/cold.json"
fi

if has T && [ -x "$ART" ]; then
    for r in $(seq 1 "$ROUNDS"); do
        for c in $CONFIGS; do
            rm -rf /tmp/nsc-ab-trace
            # shellcheck disable=SC2046
            v=$(env $(cfg_env "$c") NCCLSCOPE_DIR=/tmp/nsc-ab-trace "$ART" -b 64 -e 64 -t "$NG" -g 1 \
                -n "$ITERS" -w 200 -c 0 2>&1 | awk '$1 == 64 {print $6; exit}')
            printf 'nccl-tests\t%s\t%d\t%s\n' "$c" "$r" "${v:-NA}" >>"$RES/cost.tsv"
        done
    done
    log "nccl-tests done"
fi

if has P; then
    for r in $(seq 1 "$ROUNDS"); do
        for c in $CONFIGS; do
            rm -rf /tmp/nsc-ab-trace
            # shellcheck disable=SC2046
            v=$(env $(cfg_env "$c") NCCLSCOPE_DIR=/tmp/nsc-ab-trace "$BENCH" --gpus "$NG" --procs --ops ar \
                --min 64 --max 64 --iters "$ITERS" --repeats 1 --tag "$c" 2>/dev/null |
                awk -F'\t' '{print $6; exit}')
            printf 'procs\t%s\t%d\t%s\n' "$c" "$r" "${v:-NA}" >>"$RES/cost.tsv"
        done
    done
    log "procs done"
fi

if has R; then
    echo "[" >"$RES/rate.json"
    for mix in $MIXES; do
        for n in $WRITERS; do
            per=$(python3 -c "print(float('$RATE') / $n)")
            for c in ${RATE_CONFIGS:-${BASE:+base} new}; do
                "$HARNESS" --plugin "$(so_of "$c")" --thread-counts "$n" --seconds 2 --mix "$mix" \
                    --cb-rate "$per" --json /tmp/rate.json >/dev/null 2>&1
                sed '1d;$d' /tmp/rate.json | sed "s/\"cold_kib\"/\"config\": \"$c\", \"cold_kib\"/" >>"$RES/rate.json"
                echo "," >>"$RES/rate.json"
            done
        done
    done
    echo "{}]" >>"$RES/rate.json"
    log "rates done"
fi
if has K; then
    # the knee of this tree's plugin: max_zero_drop_rate per writer count
    "$HARNESS" --plugin "$PLUGIN" --mix "$(echo $MIXES | tr ' ' ,)" \
        --thread-counts "$(echo $WRITERS | tr ' ' ,)" --knee "${KNEE_S:-6}" \
        --json "$RES/knee.json" 2>&1 | grep -v "^$" | tee "$RES/knee.txt" | tail -30
    log "knee done"
fi
python3 "$here/perf_ab_report.py" "$RES"
