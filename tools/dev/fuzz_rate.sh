#!/usr/bin/env bash
# One libFuzzer run of a fuzz target with tools/fuzz.sh's flags, from an empty work folder, the
# given seed folder and the target's committed regressions, for comparing seed sets or libFuzzer
# options in alternating runs (docs/fuzzing.md, "Smaller Kineto seeds"):
#   tools/dev/fuzz_rate.sh LABEL TARGET SECONDS SEED SEED_DIR [libFuzzer flags...]
# Needs build-fuzz (tools/fuzz.sh builds it). Prints one line: executions, executions per second,
# the 1-minute load average before and after, libFuzzer's cov/ft after the seeds (INITED) and at
# the end (DONE), the bytes of the corpus it grew; the log stays in build-fuzz/rate-logs/.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 5 ] || { echo "usage: tools/dev/fuzz_rate.sh LABEL TARGET SECONDS SEED SEED_DIR [libFuzzer flags...]" >&2; exit 2; }
label=$1 t=$2 secs=$3 seed=$4 seeds=$5
shift 5
exe=build-fuzz/tests/fuzz/fuzz_$t
[ -x "$exe" ] || { echo "fuzz_rate.sh: $exe not built (run tools/fuzz.sh 1 $t)" >&2; exit 2; }
[ -d "$seeds" ] || { echo "fuzz_rate.sh: $seeds: no such folder" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p build-fuzz/rate-logs
log=build-fuzz/rate-logs/$label-$t-seed$seed-$(date +%H%M%S).log
supp=$PWD/tools/sanitizers
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export ASAN_OPTIONS="suppressions=$supp/asan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
load0=$(cut -d' ' -f1 /proc/loadavg)
start=$(date +%s.%N)
rc=0
"$exe" -max_total_time="$secs" -seed="$seed" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="build-fuzz/rate-logs/finding-$label-" "$@" "$work" "$seeds" "tests/fuzz/corpus/$t/regressions" > "$log" 2>&1 || rc=$?
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
load1=$(cut -d' ' -f1 /proc/loadavg)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
inited=$(grep -m1 -P '^#\d+\tINITED' "$log" | grep -o 'cov: [0-9]* ft: [0-9]*' || true)
final=$(grep -P '^#\d+\tDONE' "$log" | grep -o 'cov: [0-9]* ft: [0-9]* corp: [^ ]*' || true)
echo "$label $t seed=$seed seconds=$elapsed rc=$rc executions=${execs:-0}" \
     "exec_per_s=$(awk -v n="${execs:-0}" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }') load=$load0-$load1" \
     "inited=[$inited] done=[$final] log=$log"
[ "$rc" -eq 0 ] || { echo "fuzz_rate.sh: the fuzzer exited $rc (a finding? see $log and build-fuzz/rate-logs/finding-*)" >&2; exit 1; }
