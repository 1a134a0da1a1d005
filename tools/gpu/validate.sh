#!/usr/bin/env bash
# Issue 31's GPU validation, for the [GPU] issue 33: builds dpro-exec, dpro-replay and
# cuda_device_tests with the CUDA toolkit, runs cuda_device_tests, then for each trace below
# `dpro-exec validate --json` on the recorded step (baseline) and on plans from
# `dpro-replay optimize --strategies op_fusion | precision | buckets,compression` (small budgets).
# Everything lands under one folder, $OUT (default ./validate-out): build.log, cuda_device_tests.log,
# <job>/{baseline,op_fusion,precision,buckets_compression}.{json,log}, <job>/plan-*.json,
# dlrm-8xV100-ranks0-<N-1>/multi_rank.{json,log} (several GPUs: DLRM's ranks at once, NCCL),
# summary.tsv (one line per step: step, status, seconds, measured/predicted step, error) and
# summary.txt. The whole run keeps within TOTAL_S (480 s): every step has a timeout and a step
# that no longer fits is skipped and said so in the summary.
#
# Usage (repository root):  bash tools/gpu/validate.sh
#   OUT=dir          results folder (default $OUT from the device tool, else ./validate-out)
#   BUILD=dir        build folder (default build-gpu; an existing one is rebuilt incrementally)
#   FAKE=1           no GPU: configure with DPRO_CUDA=AUTO, skip cuda_device_tests and run every
#                    validate with --fake (the same steps, exercised on a machine without a GPU)
#   DRY_RUN=1        print the steps with their timeouts, run nothing
#   TOTAL_S=480      the whole run's budget (s);  ITERS=10  iterations per validate
#   JOBS="..."       traces to validate (default below; "dlrm" means traces/dlrm-8xV100 --rank 0)
#   JOBS_N=16        build parallelism
#   SKIP_BUILD=1     use the binaries already in $BUILD (e.g. built with -DDPRO_CUDA=ON elsewhere and carried)
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/validate-out}
BUILD=${BUILD:-build-gpu}
FAKE=${FAKE:-0}
DRY_RUN=${DRY_RUN:-0}
TOTAL_S=${TOTAL_S:-480}
ITERS=${ITERS:-10}
JOBS_N=${JOBS_N:-$(nproc 2>/dev/null || echo 4)}
# Priority order: a step that does not fit in the budget is skipped, so the first come first.
JOBS=${JOBS:-dlrm h100/gpt2-emit-nvtx-step h100/resnet50-emit-nvtx-step h100/resnet50-bf16-emit-nvtx-step h100/bert-ddp-emit-nvtx-step h100/gpt2 h100/resnet50 h100/resnet50-bf16}
PLANS="op_fusion precision buckets,compression"
BUDGET=${BUDGET:-8}  # plans each optimize replays (small: a plan to run, not the best one)
START=$(date +%s)
mkdir -p "$OUT"
SUMMARY=$OUT/summary.tsv
printf 'step\tstatus\tseconds\tmeasured_step_ns\tpredicted_step_ns\terror_pct\n' > "$SUMMARY"
FAKE_FLAG=""; [ "$FAKE" = 1 ] && FAKE_FLAG="--fake"

left() { echo $(( TOTAL_S - ($(date +%s) - START) )); }
note() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" "${5:-}" "${6:-}" >> "$SUMMARY"; echo "[$(date +%T)] $1: $2"; }

# step NAME WANT_S LOG CMD...: runs CMD with a timeout of min(WANT_S, what is left - 10 s), or
# skips it when under MIN_S (15 s) is left; its status goes to the summary. Returns CMD's status.
step() {
  local name=$1 want=$2 log=$3; shift 3
  local budget=$(( $(left) - 10 )); [ "$budget" -gt "$want" ] && budget=$want
  if [ "$budget" -lt 15 ]; then note "$name" "skipped: over the ${TOTAL_S}s budget" 0; return 99; fi
  if [ "$DRY_RUN" = 1 ]; then echo "timeout ${budget}s: $*"; note "$name" "dry-run" 0; return 0; fi
  local t0 rc=0; t0=$(date +%s)
  timeout --kill-after=5 "$budget" "$@" > "$log" 2>&1 || rc=$?
  local s=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ]; then note "$name" ok "$s"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then note "$name" "timed out after ${budget}s" "$s"
  elif grep -q "nothing to search" "$log"; then note "$name" "not applicable: $(tail -1 "$log" | cut -d: -f4- | cut -c2-200)" "$s"
  else note "$name" "failed (exit $rc): $(tail -1 "$log" | tr '\t' ' ' | cut -c1-200)" "$s"; fi
  return "$rc"
}

# The step figures of a validate --json file into the summary line just written.
step_figures() {
  [ -s "$1" ] || return 0
  python3 - "$1" "$SUMMARY" <<'PYEOF' || true
import json, sys
j = json.load(open(sys.argv[1]))
j = (j["ranks"][0] if "ranks" in j else j)["step"]  # several ranks: the first rank's step
lines = open(sys.argv[2]).read().splitlines()
f = lines[-1].split("\t")
f[3:6] = [str(j["measured_ns"]), str(j["predicted_ns"]), "" if j["error_pct"] is None else "%.1f" % j["error_pct"]]
lines[-1] = "\t".join(f)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PYEOF
}

{ nvidia-smi -L; nvcc --version | tail -1; uname -a; nproc; git -C "$ROOT" log -1 --oneline; } > "$OUT/probe.txt" 2>&1

# 1. Build: only the three targets.
CUDA_MODE=ON; [ "$FAKE" = 1 ] && CUDA_MODE=AUTO
LAUNCHER=""; command -v ccache > /dev/null && LAUNCHER="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
# A fresh folder is configured for Release; an existing one keeps its configuration (no full rebuild).
TYPE=""; [ -f "$BUILD/CMakeCache.txt" ] || TYPE="-DCMAKE_BUILD_TYPE=Release"
if [ "${SKIP_BUILD:-0}" = 1 ]; then note build "skipped: SKIP_BUILD=1 (binaries from $BUILD)" 0
else step build 300 "$OUT/build.log" bash -c "cmake -S . -B '$BUILD' $TYPE -DDPRO_CUDA=$CUDA_MODE $LAUNCHER \
  && cmake --build '$BUILD' -j$JOBS_N --target dpro-exec dpro-replay $([ "$FAKE" = 1 ] || echo cuda_device_tests)" \
  || { [ "$DRY_RUN" = 1 ] || { echo "build failed: see $OUT/build.log"; exit 1; }; }
fi
EXEC=$(find "$BUILD" -name dpro-exec -type f -perm -u+x 2>/dev/null | head -1)
REPLAY=$(find "$BUILD" -name dpro-replay -type f -perm -u+x 2>/dev/null | head -1)
[ "$DRY_RUN" = 1 ] && { EXEC=${EXEC:-$BUILD/tools/dpro-exec/dpro-exec}; REPLAY=${REPLAY:-$BUILD/tools/dpro-replay/dpro-replay}; }

# 2. The CUDA device's own tests (the kernels against their CPU references).
if [ "$FAKE" = 1 ]; then note cuda_device_tests "skipped: FAKE=1" 0
else
  TESTS=$(find "$BUILD" -name cuda_device_tests -type f -perm -u+x 2>/dev/null | head -1)
  step cuda_device_tests 90 "$OUT/cuda_device_tests.log" "${TESTS:-$BUILD/tests/kernels/cuda_device_tests}"
fi

# 3. The device profile (launch cost, copies, GEMMs per dtype, casts, compression, stand-in accuracy).
step calibrate 90 "$OUT/calibrate.log" "$EXEC" calibrate $FAKE_FLAG --out "$OUT/device-profile.json" --force

# 3b. Several ranks at once, one GPU each, collectives on NCCL: DLRM ranks 0..N-1 with N = the GPUs
# (up to its 8 ranks), validated per rank. Only where there are two GPUs or more (FAKE=1: 4 ranks on
# fake devices joined by the fake fabric).
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$FAKE" = 1 ] || [ "$NGPU" -ge 2 ]; then
  n=4; [ "$FAKE" = 1 ] || n=$(( NGPU < 8 ? NGPU : 8 ))
  d=$OUT/dlrm-8xV100-ranks0-$((n - 1)); mkdir -p "$d"
  # shellcheck disable=SC2086
  step "dlrm-${n}gpu" 60 "$d/multi_rank.log" "$EXEC" validate -q $FAKE_FLAG --ranks "0-$((n - 1))" --gpus "$n" \
    --iterations "$ITERS" traces/dlrm-8xV100 --json "$d/multi_rank.json" --force
  step_figures "$d/multi_rank.json"
else
  note dlrm-multi-gpu "skipped: one GPU ($NGPU found by nvidia-smi -L)" 0
fi

# 4. Per job: the baseline and three plans, each run and replayed by dpro-exec validate.
for job in $JOBS; do
  if [ "$job" = dlrm ]; then src=traces/dlrm-8xV100; rank="--rank 0"; name=dlrm-8xV100-rank0
  else src=traces/$job; rank=""; name=${job//\//-}; fi
  d=$OUT/$name; mkdir -p "$d"
  # shellcheck disable=SC2086
  step "$name/baseline" 45 "$d/baseline.log" "$EXEC" validate -q $FAKE_FLAG $rank --iterations "$ITERS" "$src" --json "$d/baseline.json" --force
  step_figures "$d/baseline.json"
  for strategies in $PLANS; do
    tag=${strategies//,/_}
    plan=$d/plan-$tag.json
    step "$name/optimize-$tag" 40 "$d/optimize-$tag.log" "$REPLAY" optimize -q "$src" --strategies "$strategies" \
      --budget "$BUDGET" --threads 4 --plan-out "$plan" --force || continue
    # shellcheck disable=SC2086
    step "$name/$tag" 45 "$d/$tag.log" "$EXEC" validate -q $FAKE_FLAG $rank --iterations "$ITERS" "$src" --plan "$plan" \
      --json "$d/$tag.json" --force
    step_figures "$d/$tag.json"
  done
done

{
  echo "dpro validate run: $(date -u), $(( $(date +%s) - START )) s of ${TOTAL_S} s; FAKE=$FAKE DRY_RUN=$DRY_RUN ITERS=$ITERS"
  head -1 "$OUT/probe.txt"
  echo "steps: $(($(wc -l < "$SUMMARY") - 1)); ok: $(grep -c $'\tok\t' "$SUMMARY"); skipped: $(grep -c $'\tskipped' "$SUMMARY"); not applicable: $(grep -c $'\tnot applicable' "$SUMMARY"); failed or timed out: $(grep -Ec $'\t(failed|timed out)' "$SUMMARY")"
  column -t -s $'\t' "$SUMMARY" 2>/dev/null || cat "$SUMMARY"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
