#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What ncclscope costs inside real NCCL, in one run on one machine:
#   A. NVLink, 64 B .. 256 MiB, 5 operations, configurations interleaved,
#      REPEATS rounds: no plugin; the empty plugin with the default mask, the
#      default mask + KernelCh, and every event; ncclscope default and all.
#   B. The network path (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1), 64 B .. 4 MiB.
#   C. LONG_OPS (1M) 64 B all_reduces per rank with ncclscope, every event and
#      the default mask: the traces must be complete with zero drops.
#   D. A 4-process run (one process per GPU) recorded with every event: the
#      multi-process trace the converter tests use.
#   P. 64 B all_reduce only, ROUNDS_P (8) interleaved rounds of 20000
#      operations per configuration: the small-message ratios with less noise.
#   E. The callback harness on this machine's cores (1..16 writer threads),
#      flat out and at a rate every thread can sustain.
#   Q. One process per GPU (nccl-bench --procs) on 4 GPUs, and one thread per
#      GPU on 2 GPUs: 64 B and 1 MiB, ROUNDS_Q (4) rounds.
# PHASES picks phases (default "A B C D P E"; Q runs when named).
# Then bench/gpu/overhead_report.py prints the ratios. Results go to $OUT.
#   OUT, NCCL_HOME, DEPS as in build_gpu.sh; REPEATS (3); LONG_OPS (1000000).
set -euo pipefail
OUT=${OUT:-/tmp/ncclscope-overhead}
REPEATS=${REPEATS:-3}
LONG_OPS=${LONG_OPS:-1000000}
ROUNDS_P=${ROUNDS_P:-8}
ROUNDS_Q=${ROUNDS_Q:-4}
PHASES=${PHASES:-A B C D P E}
has() { [[ " $PHASES " == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
source "$here/build_gpu.sh"
BENCH=$PWD/build-gpu/bench/gpu/nccl-bench
LOGS=/tmp/nsc-overhead-logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
{ date -u; nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)"; ls -l "$NCCL_HOME"/lib/libnccl.so*; } >"$LOGS/machine.txt" 2>&1

# config name -> environment
cfg_env() {
    case $1 in
    none) echo "NCCLSCOPE_ENABLE=1" ;;
    empty_default) echo "NCCL_PROFILER_PLUGIN=$EMPTY NCCLSCOPE_EVENTS=default" ;;
    empty_default_kch) echo "NCCL_PROFILER_PLUGIN=$EMPTY NCCLSCOPE_EVENTS=default,KernelCh" ;;
    empty_all) echo "NCCL_PROFILER_PLUGIN=$EMPTY NCCLSCOPE_EVENTS=all" ;;
    scope_default) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=default" ;;
    scope_all) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=all" ;;
    esac
}

bench() { # tsv cfg extra-env -- args
    local tsv=$1 cfg=$2 extra=$3; shift 3
    local dir=/tmp/nsc-trace-$cfg
    rm -rf "$dir"
    # shellcheck disable=SC2046
    env $(cfg_env "$cfg") $extra NCCLSCOPE_DIR="$dir" "$BENCH" --gpus "$NG" --tag "$cfg" "$@" \
        >>"$tsv" 2>>"$LOGS/$cfg.err" || { echo "FAILED: $cfg $*"; tail -5 "$LOGS/$cfg.err"; }
    if ls "$dir"/*.nsc >/dev/null 2>&1; then
        for f in "$dir"/*.nsc; do "$CLI" info "$f"; done >>"$LOGS/$cfg.info" 2>&1 || true
    fi
    rm -rf "$dir"
}

: >"$OUT/sweep.tsv"
: >"$OUT/net.tsv"
if has A; then
echo "== A: NVLink sweep, $REPEATS rounds"
for r in $(seq "$REPEATS"); do
    for c in none empty_default empty_default_kch empty_all scope_default scope_all; do
        bench "$OUT/sweep.tsv" "$c" "" --min 64 --max 256M --factor 4 --iters 2000 --repeats 1
    done
    echo "round $r done ($(wc -l <"$OUT/sweep.tsv") lines)"
done

fi
if has B; then
echo "== B: network path"
for r in 1 2; do
    for c in none empty_all scope_default scope_all; do
        bench "$OUT/net.tsv" "$c" "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1" \
            --min 64 --max 4M --factor 16 --iters 500 --repeats 1 --ops ar,ag,sr
    done
done

fi
if has P; then
echo "== P: 64 B all_reduce, $ROUNDS_P rounds"
for r in $(seq "$ROUNDS_P"); do
    for c in none empty_default empty_default_kch empty_all scope_default scope_all; do
        bench "$OUT/sweep.tsv" "$c" "" --ops ar --min 64 --max 64 --iters 20000 --warmup 200 --repeats 1
    done
done
fi
if has Q; then
echo "== Q: one process per GPU (4 GPUs), and 2 GPUs, $ROUNDS_Q rounds"
: >"$OUT/procs.tsv"
: >"$OUT/gpus2.tsv"
for r in $(seq "$ROUNDS_Q"); do
    for c in none empty_default empty_all scope_default scope_all; do
        bench "$OUT/procs.tsv" "$c" "" --procs --ops ar,ag --min 64 --max 1M --factor 16384 \
            --iters 10000 --warmup 100 --repeats 1
        NG_SAVE=$NG NG=2
        bench "$OUT/gpus2.tsv" "$c" "CUDA_VISIBLE_DEVICES=0,1" --ops ar,ag --min 64 --max 1M \
            --factor 16384 --iters 10000 --warmup 100 --repeats 1
        NG=$NG_SAVE
    done
done
{ echo "### one process per GPU, 4 GPUs"; python3 "$here/overhead_report.py" "$OUT/procs.tsv"; \
  echo; echo "### one thread per GPU, 2 GPUs"; python3 "$here/overhead_report.py" "$OUT/gpus2.tsv"; } \
    >"$OUT/report_q.txt"
cat "$OUT/report_q.txt"
fi
{ cat "$LOGS/machine.txt"; python3 "$here/overhead_report.py" "$OUT/sweep.tsv" "$OUT/net.tsv"; } | tee "$OUT/report.txt"

if has C; then
echo "== C: $LONG_OPS all_reduces of 64 B per rank"
: >"$OUT/long.txt"
for c in scope_all scope_default; do
    dir=/tmp/nsc-long-$c
    rm -rf "$dir"
    # shellcheck disable=SC2046
    env $(cfg_env "$c") NCCLSCOPE_DIR="$dir" "$BENCH" --gpus "$NG" --tag "long_$c" --ops ar \
        --min 64 --max 64 --iters "$LONG_OPS" --warmup 10 --repeats 1 >>"$OUT/long.txt" 2>>"$LOGS/long.err"
    echo "-- $c: $(du -sb "$dir" | cut -f1) bytes of trace" >>"$OUT/long.txt"
    for f in "$dir"/*.nsc; do "$CLI" info "$f"; done >>"$OUT/long.txt" 2>&1 || echo "info failed" >>"$OUT/long.txt"
    rm -rf "$dir"
done

fi
if has D; then
echo "== D: 4-process trace"
dir=/tmp/nsc-procs4
rm -rf "$dir"
env NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLSCOPE_EVENTS=all NCCLSCOPE_DIR="$dir" "$BENCH" --gpus "$NG" --procs \
    --tag procs --ops ar,ag,rs,bc,sr --min 1K --max 1M --factor 32 --iters 20 --warmup 2 --repeats 1 \
    >"$LOGS/procs4.tsv" 2>"$LOGS/procs4.err" || tail -5 "$LOGS/procs4.err"
tar -C "$dir" -czf "$OUT/procs4.tar.gz" .
fi
if has E; then
echo "== E: callback harness"
"$PWD/build-gpu/bench/ncclscope-bench" --threads 16 --seconds 0.5 --json "$OUT/harness.json" >"$OUT/harness.txt" 2>&1 || true
# a rate the single flusher sustains for 16 writers together: every event kept
"$PWD/build-gpu/bench/ncclscope-bench" --threads 16 --seconds 1 --rate 2e5 \
    --json "$OUT/harness_rate.json" >>"$OUT/harness.txt" 2>&1 || true
fi

tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 
rm -f "$OUT/setup.log" "$OUT/build.log"
