#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The plugin exports only the ncclProfiler_vN tables, the control API of
# include/ncclscope.h (with the benchmarks' passthrough switch) and the Python package's table ncclscope_py_v1 (hidden
# visibility): anything else fails.
set -e
syms=$(nm -D --defined-only "$NSC_PLUGIN" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')
want="ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 ncclProfiler_v7"
want="$want ncclscope_bench_passthrough ncclscope_control_dump ncclscope_control_mark ncclscope_control_mask"
want="$want ncclscope_control_set_events ncclscope_control_set_mask ncclscope_control_start"
want="$want ncclscope_control_stop ncclscope_control_strerror ncclscope_py_v1 "
if [ "$syms" != "$want" ]; then
    echo "FAIL: exported: $syms"
    exit 1
fi
echo "ok: exports $syms"
