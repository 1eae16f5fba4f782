#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing (Debian), builds, runs every
# suite, then again under ASan+UBSan, and the stress suite under TSan.
# GPU tests are not part of it: they run on a GPU machine through
# bench/gpu/run_gpu_check.sh (see docs/gpu-check.md).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for p in meson ninja-build libzstd-dev zlib1g-dev pkg-config binutils python3-dev python3-numpy python3-pandas python3-dask python3-distributed prometheus prometheus-node-exporter; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "NOTE: no GPU here: the GPU check (bench/gpu/run_gpu_check.sh) is skipped; it runs on a GPU machine"
fi
setup() { # dir, options...
    local d=$1; shift
    if [ -f "$d/build.ninja" ]; then meson setup --reconfigure "$d" "$@" >/dev/null; else meson setup "$d" "$@" >/dev/null; fi
}
setup build
ninja -C build >/dev/null
meson test -C build --print-errorlogs
echo "== ASan + UBSan"
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dgpu=disabled
ninja -C build-asan >/dev/null
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --no-suite stress
echo "== TSan (stress suite)"
setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dgpu=disabled
ninja -C build-tsan >/dev/null
TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --suite stress
