#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hang watchdog on a GPU machine: a real NCCL job that hangs. PyTorch
# (torch.distributed, NCCL), 2 ranks on 2 GPUs; rank 1 skips its SKIP-th
# all_reduce. ncclscope's hang watchdog (NCCLSCOPE_HANG_SECONDS) must fire
# in rank 0 (HANG block, one NCCL WARN line); then the job is killed
# (SIGKILL, as a scheduler would) and `ncclscope hang` runs on the cut
# traces: it must name rank 1 and the collective's seqNumber.
# From the repository root; builds with meson into build-hang (no GPU code:
# the plugin only needs NCCL's headers' layout, which it carries).
#   OUT    where the logs, hang reports and traces go (default /tmp/ncclscope-hang)
#   DEPS   prefix with zstd headers/library when the machine lacks -dev packages
#   SKIP   the all_reduce rank 1 skips (default 1000)
#   HANG_SECONDS  the watchdog's limit (default 5)   WAIT  seconds to wait for it (default 120)
#   PY     python with torch (default /opt/torch/.venv/bin/python)
#   MODE   stream (default) or flight
#   EVENTS NCCLSCOPE_EVENTS (default: Coll,P2p,KernelCh,ProxyOp,ProxyStep and the API
#          events). Without KernelCh the watchdog sees operations through their
#          ProxyOps only: run it on the network path then (NCCL_P2P_DISABLE=1
#          NCCL_SHM_DISABLE=1 in the environment, which the job inherits)
#   FIRE   1 (default): the watchdog must fire. 0: it cannot (no KernelCh on NVLink:
#          nothing shows an operation's progress); then `ncclscope hang` must name the
#          divergence instead (rank 1 never entered the collective rank 0 entered; exit 5)
set -uo pipefail
OUT=${OUT:-/tmp/ncclscope-hang}
SKIP=${SKIP:-1000}
HANG_SECONDS=${HANG_SECONDS:-5}
WAIT=${WAIT:-120}
MODE=${MODE:-stream}
FIRE=${FIRE:-1}
EVENTS=${EVENTS:-Coll,P2p,KernelCh,ProxyOp,ProxyStep,CollApi,KernelLaunch,GroupApi,Group}
PY=${PY:-/opt/torch/.venv/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
MESON=meson; command -v meson >/dev/null || MESON="$PY -m mesonbuild.mesonmain"
NINJA=ninja; command -v ninja >/dev/null || NINJA="$PY -m ninja"
opts=(-Dgpu=disabled -Dbuildtype=release)
[ -n "${DEPS:-}" ] && opts+=(-Ddeps_prefix="$DEPS") && export LD_LIBRARY_PATH="$DEPS/lib:${LD_LIBRARY_PATH:-}"
{ $MESON setup build-hang "${opts[@]}" && $NINJA -C build-hang plugin/libnccl-profiler-ncclscope.so converter/ncclscope; } \
    >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
PLUGIN=$root/build-hang/plugin/libnccl-profiler-ncclscope.so
CLI=$root/build-hang/converter/ncclscope
TRACE=$OUT/trace
rm -rf "$TRACE"
{ nvidia-smi -L; "$PY" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } \
    >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

echo "== job: 2 ranks, rank 1 skips all_reduce $SKIP; NCCLSCOPE_HANG_SECONDS=$HANG_SECONDS, mode $MODE, events $EVENTS, P2P_DISABLE=${NCCL_P2P_DISABLE:-} SHM_DISABLE=${NCCL_SHM_DISABLE:-}"
t0=$(date +%s)
# its own process group: the kill below takes torchrun and both ranks
setsid env NCCL_PROFILER_PLUGIN="$PLUGIN" NCCL_DEBUG=WARN NCCLSCOPE_DIR="$TRACE" \
    NCCLSCOPE_HANG_SECONDS="$HANG_SECONDS" NCCLSCOPE_MODE="$MODE" \
    NCCLSCOPE_EVENTS="$EVENTS" \
    PYTHONUNBUFFERED=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=0 \
    "$PY" -m torch.distributed.run --nproc_per_node 2 "$here/py_hang.py" --skip "$SKIP" \
    >"$OUT/job.log" 2>&1 &
job=$!
fired=0
for _ in $(seq 1 "$WAIT"); do
    sleep 1
    if grep -q "hang watchdog" "$OUT/job.log"; then fired=1; break; fi
    kill -0 $job 2>/dev/null || break
done
t1=$(date +%s)
sleep 2 # the HANG block goes out with the next chunk (streaming) or the dump (flight)
kill -KILL -- -$job 2>/dev/null
wait $job 2>/dev/null
echo "watchdog fired: $fired after $((t1 - t0)) s (job start included); log lines:"
grep "hang watchdog" "$OUT/job.log" | tee "$OUT/watchdog.txt"
grep -c "hang watchdog" "$OUT/job.log" | sed 's/^/count: /'
tail -5 "$OUT/job.log"
ls -l "$TRACE"
for f in "$TRACE"/*.nsc; do "$CLI" info "$f" >"$OUT/info-$(basename "$f" .nsc).txt" 2>&1; done
echo "== ncclscope hang"
"$CLI" hang "$TRACE" 2>&1 | tee "$OUT/hang.txt"
"$CLI" hang "$TRACE" --json >"$OUT/hang.json" 2>"$OUT/hang.stderr"
rc=$?
echo "hang exit $rc (4: a hang found; 5: a divergence where completion was not recorded)"
"$PY" - "$OUT/hang.json" "$SKIP" "$FIRE" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
skip = int(sys.argv[2])
ok = False
if sys.argv[3] == "0":  # no watchdog view: the divergence must be named
    for v in doc.get("divergences", []):
        print("divergence: comm %s op %s seq %s entered %s missing %s (last %s)" % (
            v["comm"], v["op"], v["seq"], v["entered_ranks"], v["missing_ranks"], v["missing_last_seq"]))
        ok |= v["op"] == "AllReduce" and v["seq"] == skip - 1 and v["missing_ranks"] == [1] and 0 in v["entered_ranks"]
    print("RESULT:", "ok: the divergence at seq %d named, rank 1 missing" % (skip - 1) if ok else "NOT as expected")
    sys.exit(0 if ok else 1)
for h in doc["hangs"]:
    print("comm %s op %s seq %s missing %s stuck %s untraced %s" % (
        h["comm"], h["op"], h["seq"], h["missing_ranks"], [s["rank"] for s in h["stuck_ranks"]],
        h.get("untraced_ranks")))
    for s in h["stuck_ranks"]:
        print("  rank %d (%s): channels open %s of %s, peers %s" % (
            s["rank"], s.get("source", "records"), s["channels"], s["nch"], s["peers"]))
    ok |= h["op"] == "AllReduce" and 1 in h["missing_ranks"] and 0 in [s["rank"] for s in h["stuck_ranks"]]
print("RESULT:", "ok: rank 1 named missing, rank 0 stuck" if ok else "NOT as expected")
sys.exit(0 if ok else 1)
PYEOF
status=$?
[ "$fired" = "$FIRE" ] || status=1
[ "$FIRE" = 0 ] && [ "$rc" != 5 ] && status=1   # the divergence is named, exit 5
tar -C "$OUT" -czf "$OUT/traces.tgz" trace 2>/dev/null
echo "results in $OUT (status $status)"
exit $status
