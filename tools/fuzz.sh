#!/usr/bin/env bash
# Runs the in-process fuzzers (tests/fuzz, docs/fuzzing.md) with libFuzzer, ASan and UBSan:
#   tools/fuzz.sh [SECONDS] [TARGET[=SECONDS]...]
# runs each TARGET (default: all) for SECONDS (default 60; TARGET=SECONDS for that one).
# Builds them with clang in ./build-fuzz (-DDPRO_FUZZ=ON -DDPRO_SANITIZE=address,undefined,
# no LibTorch, no CUDA). Each fuzzer starts from the committed seeds and regressions and from
# what earlier runs here kept (build-fuzz/corpus/TARGET, not committed); what it finds goes to
# build-fuzz/findings/TARGET/. Prints one JSON line per target (executions, executions per
# second, findings), also appended to build-fuzz/fuzz-results.jsonl. Exit code 1 when any
# target found something: fix it, then copy the input into tests/fuzz/corpus/TARGET/regressions
# (ctest replays it from then on). Installs nothing: tools/install.sh installs clang.
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets=(kineto native model_file csv cluster device_spec compare share_table device_profile plan tolerances)
seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: tools/fuzz.sh [SECONDS] [TARGET...] (targets: ${all_targets[*]})" >&2; exit 2; }
shift || true
args=("$@")
[ ${#args[@]} -eq 0 ] && args=("${all_targets[@]}")
targets=()
declare -A secs
for a in "${args[@]}"; do
  t=${a%%=*}
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (targets: ${all_targets[*]})" >&2; exit 2; }
  secs[$t]=$seconds
  [[ "$a" == *=* ]] && secs[$t]=${a#*=}
  [[ "${secs[$t]}" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: '$a': seconds must be a whole number" >&2; exit 2; }
  targets+=("$t")
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found; run tools/install.sh (it installs clang)" >&2; exit 2; }

dir=build-fuzz
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
build_start=$SECONDS
CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPRO_FUZZ=ON \
  -DDPRO_SANITIZE=address,undefined -DDPRO_TORCH=OFF -DDPRO_CUDA=OFF "${launcher[@]}" > "$dir.log" 2>&1 \
  || { cat "$dir.log"; exit 1; }
cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]/#/fuzz_}" >> "$dir.log" 2>&1 \
  || { tail -50 "$dir.log"; exit 1; }
echo "fuzz.sh: built ${#targets[@]} fuzzers in $dir in $((SECONDS - build_start)) s (log: $dir.log)"

supp=$PWD/tools/sanitizers
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export ASAN_OPTIONS="suppressions=$supp/asan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
found=0
for t in "${targets[@]}"; do
  work=$dir/corpus/$t findings=$dir/findings/$t log=$dir/fuzz-$t.log
  mkdir -p "$work" "$findings"
  before=$(find "$findings" -type f | wc -l)
  start=$(date +%s.%N)
  rc=0
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb: one using 2 GiB is unbounded memory.
  # kineto: -max_len=69632 (68 KiB), just above the JSON stream's first 64 KiB read (so that the
  # refill and buffer growth stay reachable; its largest seed is 68,178 bytes). Without it
  # libFuzzer takes the largest input of all three folders, and an older build-fuzz/corpus keeps
  # inputs of up to 100 KB, whose cost grows with their size (docs/fuzzing.md).
  extra=()
  [ "$t" = kineto ] && extra=(-max_len=69632)
  "$dir/tests/fuzz/fuzz_$t" -max_total_time="${secs[$t]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${extra[@]}" -artifact_prefix="$findings/" "$work" "tests/fuzz/corpus/$t/seeds" "tests/fuzz/corpus/$t/regressions" \
    > "$log" 2>&1 || rc=$?
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  execs=${execs:-0}
  new=$(( $(find "$findings" -type f | wc -l) - before ))
  [ "$rc" -ne 0 ] && [ "$new" -eq 0 ] && new=1  # a failure libFuzzer could not save (see the log)
  [ "$new" -gt 0 ] && found=1
  line=$(printf '{"fuzz_target": "%s", "seconds": %.1f, "executions": %s, "exec_per_s": %.0f, "corpus": %s, "findings": %s, "log": "%s"}' \
         "$t" "$elapsed" "$execs" "$(awk -v n="$execs" -v s="$elapsed" 'BEGIN { print (s > 0 ? n / s : 0) }')" "$(find "$work" -type f | wc -l)" "$new" "$log")
  echo "$line"
  echo "$line" >> "$dir/fuzz-results.jsonl"
done
if [ "$found" -ne 0 ]; then
  echo "fuzz.sh: findings in $dir/findings (each log's end says what failed); fix them, then copy each input" \
       "into tests/fuzz/corpus/TARGET/regressions" >&2
  exit 1
fi
