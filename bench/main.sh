#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job. On a machine with NVIDIA GPUs and NCCL: the plugin under a real
# NCCL run (bench/gpu/run_gpu_check.sh). Without a GPU: the real NCCL traces
# recorded on 2 x H200 and 4 x H200 (tests/data) replayed through the real
# plugin, exactly as NCCL would call it, then converted (Chrome JSON and
# Perfetto protobuf), summarized (stats) and reported (HTML).
set -euo pipefail
VERBOSE=0
case "${1:-}" in -v | --verbose) VERBOSE=1 ;; esac
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
# By default one line per trace and where the outputs are; -v shows every
# tool's per-file diagnostics (replay counts, info, convert's notes), which
# otherwise go to $OUT/main.log.
LOG=$OUT/main.log
if [ "$VERBOSE" = 1 ]; then LOG=/dev/stderr; fi
CLI=build/converter/ncclscope
echo "No GPU here: replaying real NCCL 2.28.9 callback streams (2 x H200, 4 x H200) through the plugin."
echo "Each recorded process, its ranks, and the check: every event NCCL started there is in the new trace."
bad=0
for t in tests/data/*.nsc tests/data/h200x4_procs/*.nsc; do
    name=$(basename "$t" .nsc)
    NCCLSCOPE_DIR="$OUT/$name" NCCLSCOPE_EVENTS=all \
        $CLI replay --plugin build/plugin/libnccl-profiler-ncclscope.so "$t" >>"$LOG" 2>&1
    if [ "$VERBOSE" = 1 ]; then
        $CLI info "$OUT/$name"/*.nsc
        $CLI convert -v "$OUT/$name" -o "$OUT/$name.json"
    else
        $CLI info "$OUT/$name"/*.nsc >>"$LOG" 2>&1
        msg=$($CLI convert "$OUT/$name" -o "$OUT/$name.json" 2>&1)
        echo "$msg" >>"$LOG"
        events=$(echo "$msg" | sed -n 's/.*file(s), \([0-9]*\) events.*/\1/p')
        dropped=$(echo "$msg" | sed -n 's/.*, \([0-9]*\) records dropped by the plugin.*/\1/p')
        # what NCCL started in the recorded process, and which ranks it was
        src=$($CLI info "$t")
        offered=$(echo "$src" | sed -n 's/^records .*(start \([0-9]*\),.*/\1/p')
        ranks=$(echo "$src" | sed -n 's/^ *#[0-9]* rank \([0-9]*\) of \([0-9]*\),.*/\1 \2/p' | sort -n -u)
        of=$(echo "$ranks" | awk '{print $2}' | sort -n | tail -1)
        ranks=$(echo "$ranks" | awk '{print $1}' | paste -sd, -)
        if [ "${events:-x}" = "$offered" ] && [ "${dropped:-x}" = 0 ]; then
            check="all $offered events kept, 0 dropped"
        else
            check="FAILED: ${events:-?} of $offered events kept, ${dropped:-?} records dropped"; bad=1
        fi
        printf '  %-19s %-17s %-34s -> %s\n' "$name" "rank(s) $ranks of $of" "$check" "$OUT/$name.json"
    fi
done
# The job-level views, on the 4-process job recorded on 4 x H200 (one
# process per GPU): its files as the plugin wrote them on the GPU machine.
JOB=tests/data/h200x4_procs
# The first operations of each rank of a comm set up NCCL's connections
# (milliseconds where the rest take microseconds): the summary leaves them
# out, so that p99/max and the stragglers are the job's, not its warm-up.
WARMUP=5
echo "A 4-process job recorded on 4 x H200 ($JOB): statistics, merged trace, report."
$CLI stats "$JOB" --top 5 --skip-first $WARMUP -o "$OUT/stats.txt" 2>>"$LOG"
$CLI convert "$JOB" -o "$OUT/job.json" 2>>"$LOG"
$CLI convert "$JOB" -o "$OUT/job.pftrace" 2>>"$LOG"
$CLI report "$JOB" --skip-first $WARMUP -o "$OUT/report.html" 2>>"$LOG"
if [ "$VERBOSE" = 1 ]; then
    cat "$OUT/stats.txt"
else
    # the AllReduce rows of the GPU-time table, its legend (stats' own), the worst straggler
    echo "  warm-up left out: each rank's first $WARMUP operations of every comm (--skip-first $WARMUP);" \
        "GPU time split into wait (for the last rank) and transfer (xfer); busbw from transfer"
    awk '/^comm +ranks/{p=1; print; next} p && /^$/{exit} p && /AllReduce/' "$OUT/stats.txt"
    echo "  (size<=: the operation's bytes as nccl-tests counts them, up to this power of two; times in microseconds (us); rank-ops: operations summed over ranks)"
    awk '/^timing gpu:/{p=1} p && /^$/{exit} p{print "  " $0}' "$OUT/stats.txt"
    awk '/^comm +rank +collectives/{getline; print "  worst straggler by GPU start: rank " $2 ", last in " $4 " of " $3 " collectives, made the first rank wait " $5 " us in all"; exit}' "$OUT/stats.txt"
fi
echo "Outputs in $OUT/:"
echo "  report.html           the job's report: open in any browser"
echo "  job.json, job.pftrace the job's merged trace: open in https://ui.perfetto.dev"
echo "  stats.txt             ncclscope stats of the job (GPU time, wait/transfer, queue time, stragglers; warm-up left out)"
echo "  <trace>.json          each replayed trace; <trace>/ its .nsc files"
[ "$VERBOSE" = 1 ] || echo "  main.log              every tool's per-file diagnostics (or run: bash bench/main.sh -v)"
if [ "$bad" != 0 ]; then echo "FAILED: a replayed trace lost events (see $LOG)" >&2; exit 1; fi
