#!/bin/sh
# The plugin exports only the ncclProfiler_vN tables and the Python package's
# table ncclscope_py_v1 (hidden visibility): anything else fails.
set -e
syms=$(nm -D --defined-only "$NSC_PLUGIN" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')
want="ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 ncclProfiler_v7 ncclscope_py_v1 "
if [ "$syms" != "$want" ]; then
    echo "FAIL: exported: $syms"
    exit 1
fi
echo "ok: exports $syms"
