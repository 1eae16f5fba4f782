#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing (Debian), builds, runs every
# suite but fuzz, then every suite but stress under ASan+UBSan, and the
# stress suite under TSan.
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
# Built normally, most tests spend their time waiting on the plugin's
# clocks (flush intervals, hang periods, stalls), not on a CPU: four at a
# time keep two cores busy. Under a sanitizer they are bound by the CPU,
# and the rate test_bench must reach needs a core: one test per core there. The longest start first (their meson.build priority).
JOBS=${NSC_TEST_JOBS:-4}
SAN_JOBS=${NSC_SAN_TEST_JOBS:-2}
# ninja's lines from meson test building what the selected tests need
quiet_ninja() { grep --line-buffered -v -e '^\[[0-9]*/[0-9]*\] ' -e '^ninja: '; }
setup build
ninja -C build >/dev/null
# The fuzz suite runs once, under ASan+UBSan below: the same seeded mutants
# through the same commands, with the sanitizers watching.
meson test -C build --print-errorlogs --num-processes "$JOBS" --no-suite fuzz
echo "== ASan + UBSan"
# The sanitizer trees build only what their tests need (meson test builds
# the selected tests' dependencies). The suite `scripts` runs no code of
# ours compiled (Python over files, promtool): nothing for a sanitizer.
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dgpu=disabled
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes "$SAN_JOBS" --no-suite stress \
    --no-suite scripts | quiet_ninja
echo "== TSan (stress suite)"
setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dgpu=disabled
TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --num-processes "$SAN_JOBS" \
    --suite stress | quiet_ninja
