#!/usr/bin/env bash
# Builds dpro with sanitizers and runs its tests there (CI runs both after tools/test.sh):
#   tools/sanitize.sh asan   ASan+UBSan build in ./build-asan, every test
#   tools/sanitize.sh tsan   TSan build in ./build-tsan, the threaded tests (profiler, optimizer)
# Extra arguments go to cmake's configure step. Installs nothing: run tools/install.sh first
# (tools/test.sh does). Exit code is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
shift || true
# TSan runs the tests that start threads: the profiler's session (its flusher thread), the NCCL
# plugin's callbacks from several threads, the injected library in a child process
# (tests/profiler: "[process]"), the step window and record-cost calibration, the launcher, the
# optimizer (its evaluator replays plans on several threads), and the executor's runner (one host
# thread per recorded CPU thread on the fake device; several ranks at once on the fake fabric),
# gzip read-ahead in a second thread (core_tests) and rank files loaded in parallel (trace_tests).
threaded_tests=(test_nccl_plugin test_profiler_process test_step_window test_record_cost test_launcher optimizer_tests optimizer_incremental_tests executor_tests executor_multi_rank_tests core_tests trace_tests)
case "$kind" in
  asan) sanitize=address,undefined; targets=(all) ;;
  tsan) sanitize=thread; targets=("${threaded_tests[@]}") ;;
  *) echo "usage: tools/sanitize.sh asan|tsan [cmake options...]" >&2; exit 2 ;;
esac
dir=build-$kind
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# LibTorch is left out (DPRO_TORCH=OFF): it is not instrumented, its headers double the build
# time, and the learned model's tests then check the "not available" path, which the Release
# build's tests (tools/test.sh) cover with LibTorch. CUDA parts stay optional as usual.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPRO_SANITIZE=$sanitize -DDPRO_TORCH=OFF \
      "${launcher[@]}" "$@" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
cmake --build "$dir" -j "$jobs" --target "${targets[@]}" >> "$dir.log" 2>&1 || { tail -50 "$dir.log"; exit 1; }
echo "sanitize.sh: built $dir (log: $dir.log)"

supp=$PWD/tools/sanitizers
# halt_on_error: the first finding ends the process with a non-zero exit and a stack trace.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:suppressions=$supp/asan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"

cd "$dir"
if [ "$kind" = asan ]; then
  # Every test but two that score the learned cost model, which needs LibTorch (left out above):
  # without it they check figures that are not there. The Release build's tests run them.
  needs_torch='^(A what-if that leaves the step where it was says why in one sentence|cost model on the operators measured on an H100 and an H200$)'
  ctest --output-on-failure -j "$jobs" -E "$needs_torch"
else
  # Each test is labelled with its executable's name (tests/CMakeLists.txt).
  labels=$(IFS='|'; echo "${threaded_tests[*]}")
  ctest --output-on-failure -j "$jobs" -L "^($labels)\$"
fi
