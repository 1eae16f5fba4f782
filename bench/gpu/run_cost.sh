#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What ncclscope costs inside NCCL at 64 B, in one run on one machine:
#   T. nccl-tests all_reduce_perf -b 64 -e 64 -t NG -g 1 (one process driving every GPU),
#      ROUNDS interleaved rounds of: no plugin, the empty plugin with every event, ncclscope
#      default, ncclscope with every event, ncclscope with every event and the id/time only
#      path measured by perf where available.
#   P. One process per GPU (nccl-bench --procs), 64 B all_reduce, the same configurations.
#   A. In-process A/B (nccl-bench --ab): ncclscope with every event against its own
#      passthrough (the empty plugin's behaviour) in alternating blocks of one process, one
#      thread per GPU and one process per GPU; ROUNDS processes of AB_REPEATS (6) pairs each;
#      AB_ENV adds NCCLSCOPE_* settings to both arms (e.g. "NCCLSCOPE_MODE=flight");
#      AB_ARMS="scope,pass,floor" adds the floor arm (a timestamp and a line per callback).
#      Separate processes differ by more than the cost measured (docs/benchmarks.md); the
#      two arms of one process do not. Every block's threads are sampled (NB_TASKS) and
#      bench/gpu/ab_modes.py splits the blocks by NCCL's mode (its progress thread spinning,
#      or sleeping once per operation); raw files in $OUT/ab. BURST=K adds --burst K.
#   E. The issuing thread's CPU per operation (nccl-bench --burst ${BURST:-16}, one thread
#      per GPU): a synchronize every K operations keeps the thread from running ahead of
#      the GPU, so the time inside the issuing calls is NCCL's enqueue plus the profiler's
#      callbacks on that thread, whichever mode NCCL's progress thread is in.
#   H. The callback harness on this machine's CPUs: max_zero_drop_rate (--knee) for 1..16
#      writer threads, ncclscope and the empty plugin, network and allreduce64 mixes.
# Needs build-gpu (bench/gpu/build_gpu.sh) and an nccl-tests build (bench/gpu/run_nccl_tests.sh
# STEPS=build leaves it under .nccl-tests/work). Writes $OUT/cost.tsv, $OUT/knee.json and
# prints the medians and ratios (bench/gpu/cost_report.py).
#   OUT (/tmp/ncclscope-cost), ROUNDS (12: a multiple of the default 4 configurations; with every
#   event 6 rounds are too few to carry a median, docs/benchmarks.md §3.2), ITERS (30000), PHASES ("T P H"), KNEE_S (60), CONFIGS,
#   PIN (a command prefix for every NCCL run, e.g. "taskset -c 0-15": the rounds' spread is
#   mostly where the kernel puts NCCL's threads)
set -euo pipefail
OUT=${OUT:-/tmp/ncclscope-cost}
ROUNDS=${ROUNDS:-12}
ITERS=${ITERS:-30000}
PHASES=${PHASES:-T P H}
KNEE_S=${KNEE_S:-60}
has() { [[ " $PHASES " == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
source "$here/build_gpu.sh"
BENCH=$PWD/build-gpu/bench/gpu/nccl-bench
HARNESS=$PWD/build-gpu/bench/ncclscope-bench
PIN=${PIN:-}
ART=$PWD/.nccl-tests/work/nccl-tests-build/all_reduce_perf
[ -x "$ART" ] || ART=$(find "$PWD/.nccl-tests/work" -name all_reduce_perf -type f 2>/dev/null | head -1 || true)
export LD_LIBRARY_PATH="${CUDA_HOME:-/usr/local/cuda}/lib64:$LD_LIBRARY_PATH"
# CONFIGS picks among these (default: none empty_all scope_default scope_all);
# floor_all is the floor plugin (bench/floor_plugin.c: one timestamp and one
# record line per callback); the last three price the hang and flight features on top
# of every event: flight mode, the hang watchdog off (slab and watchdog are on
# by default), live metrics on; scope_lazy keeps ncclscope's background threads
# as quiet as they go (drain every 20 ms, no watchdog thread).
CONFIGS=${CONFIGS:-none empty_all scope_default scope_all}
# The configurations in round r, rotated by r - 1: each takes every place of
# a round in turn, evenly when ROUNDS is a multiple of the number of
# configurations, so that the place stays out of the comparisons. (With a
# fixed order one 2 x H200 call drew NCCL's slow mode in 10, 15, 15 and 19 of
# 25 rounds in places 1 to 4; a rotated one in 13, 9 and 11 of 36 in places
# 1 to 3: docs/benchmarks.md §3.2.)
rotated() {
    local r=$1 i; shift
    local -a c=("$@")
    for ((i = 0; i < ${#c[@]}; i++)); do echo "${c[(i + r - 1) % ${#c[@]}]}"; done
}
cfg_env() {
    case $1 in
    none) echo "NCCLSCOPE_ENABLE=1" ;;
    empty_all) echo "NCCL_PROFILER_PLUGIN=$EMPTY NCCLSCOPE_EVENTS=all" ;;
    floor_all) echo "NCCL_PROFILER_PLUGIN=$PWD/build-gpu/bench/libnccl-profiler-floor.so NCCLSCOPE_EVENTS=all" ;;
    scope_default) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=default" ;;
    scope_all) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=all" ;;
    scope_flight) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=all NCCLSCOPE_MODE=flight" ;;
    scope_nowatch) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=all NCCLSCOPE_HANG_SECONDS=0" ;;
    scope_lazy) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=all NCCLSCOPE_DRAIN_US=20000 NCCLSCOPE_HANG_SECONDS=0" ;;
    scope_metrics) echo "NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_EVENTS=all NCCLSCOPE_METRICS_DIR=/tmp/nsc-cost-metrics NCCLSCOPE_METRICS_SECONDS=1" ;;
    esac
}
: >"$OUT/cost.tsv"
mkdir -p /tmp/nsc-cost-metrics
if has T; then
    [ -n "$ART" ] || { echo "no all_reduce_perf under .nccl-tests/work: run run_nccl_tests.sh STEPS=build first"; exit 1; }
    for r in $(seq 1 "$ROUNDS"); do
        for c in $(rotated "$r" $CONFIGS); do
            rm -rf /tmp/nsc-cost-trace
            # shellcheck disable=SC2046
            line=$($PIN env $(cfg_env "$c") NCCLSCOPE_DIR=/tmp/nsc-cost-trace "$ART" -b 64 -e 64 -t "$NG" -g 1 \
                   -n "$ITERS" -w 200 -c 0 2>&1 | awk '$1 == 64 {print $6; exit}')
            printf 'nccl-tests\t%s\t%d\t%s\n' "$c" "$r" "${line:-NA}" | tee -a "$OUT/cost.tsv"
        done
    done
fi
if has P; then
    for r in $(seq 1 "$ROUNDS"); do
        for c in $(rotated "$r" $CONFIGS); do
            rm -rf /tmp/nsc-cost-trace
            # shellcheck disable=SC2046
            us=$($PIN env $(cfg_env "$c") NCCLSCOPE_DIR=/tmp/nsc-cost-trace "$BENCH" --gpus "$NG" --procs --ops ar \
                 --min 64 --max 64 --iters "$ITERS" --repeats 1 --tag "$c" 2>/dev/null | awk -F'\t' '{print $6; exit}')
            printf 'procs\t%s\t%d\t%s\n' "$c" "$r" "${us:-NA}" | tee -a "$OUT/cost.tsv"
        done
    done
fi
if has A; then
    mkdir -p "$OUT/ab"
    bflag=""; [ -n "${BURST:-}" ] && bflag="--burst $BURST"
    for r in $(seq 1 "$ROUNDS"); do
        for mode in threads procs; do
            flag=""; [ "$mode" = procs ] && flag=--procs
            rm -rf /tmp/nsc-cost-trace
            # shellcheck disable=SC2086
            $PIN env NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLSCOPE_EVENTS=all NCCLSCOPE_DIR=/tmp/nsc-cost-trace ${AB_ENV:-} \
                NB_TASKS="$OUT/ab/$mode.$r.tasks" "$BENCH" --gpus "$NG" $flag --arms "${AB_ARMS:-scope,pass}" --ops ar \
                --min 64 --max 64 --iters "$ITERS" --repeats "${AB_REPEATS:-6}" $bflag --tag ab 2>/dev/null |
                tee "$OUT/ab/$mode.$r.tsv" |
                awk -F'\t' -v r="$r" -v k="ab-$mode" '{arm = $1; sub(/^.*[+]/, "", arm);
                    printf "%s\t%s_all\t%d.%d\t%s\n", k, arm, r, $4, $6}' | tee -a "$OUT/cost.tsv"
        done
    done
    python3 "$here/ab_modes.py" "$OUT/ab" | tee "$OUT/ab_modes.md"
fi
if has E; then
    for r in $(seq 1 "$ROUNDS"); do
        for c in $(rotated "$r" $CONFIGS); do
            rm -rf /tmp/nsc-cost-trace
            # shellcheck disable=SC2046
            $PIN env $(cfg_env "$c") NCCLSCOPE_DIR=/tmp/nsc-cost-trace "$BENCH" --gpus "$NG" --ops ar --min 64 \
                --max 64 --iters "$ITERS" --repeats 1 --burst "${BURST:-16}" --tag "$c" 2>/dev/null |
                awk -F'\t' -v r="$r" -v c="$c" 'NR == 1 {printf "enqueue\t%s\t%d\t%s\nburst\t%s\t%d\t%s\n",
                    c, r, $9, c, r, $6}' | tee -a "$OUT/cost.tsv"
        done
    done
fi
if has H; then
    "$HARNESS" --plugin "$EMPTY" --plugin "$PLUGIN" --mix network,allreduce64 --thread-counts 1,2,4,8,16 \
        --knee "$KNEE_S" --json "$OUT/knee.json" 2>&1 | tee "$OUT/knee.txt" | tail -40
fi
python3 "$here/cost_report.py" "$OUT/cost.tsv" | tee "$OUT/cost.md"
