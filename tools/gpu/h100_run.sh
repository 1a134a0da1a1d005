#!/usr/bin/env bash
# Issue 4's measurement run on a lent GPU machine (device tool): profiles real
# training jobs with dpro-profile, records the same jobs with torch.profiler,
# and times them unprofiled. Usage (repo root on the GPU machine):
#   BIN=.gpubin bash tools/gpu/h100_run.sh [JOB ...]
# BIN holds dpro-profile and libdpro_inject.so built on the development machine.
# Results go to $OUT (default ./gpu-out): results.tar.partNN (tar in 15 MiB pieces:
# gzip'd native traces, summary, logs) and one kineto_<job>.tar per job.
# ATTRIB_JOBS: jobs profiled once per ATTRIB_VARIANTS (record classes left out);
# VARIANT: the configuration of the per-job dpro runs (window: --steps $STEPS);
# variants (see run()): default, all-calls, no-*, window, no-subscribe, cupti-idle,
# inject-off, emit-nvtx, emit-nvtx-one (EMIT_STEP), window-emit-nvtx-one, kernels-only, calls-only, no-flush; JOB "none": the ATTRIB_JOBS runs only.
# KINETO=0: no torch.profiler runs.
set -u
BIN=$(realpath "${BIN:-.gpubin}")
OUT=${OUT:-$PWD/gpu-out}
W=/tmp/dpro-gpu
rm -rf "$W"; mkdir -p "$W/dpro" "$W/kineto" "$W/logs" "$OUT"
SUM=$W/summary.jsonl
JOBS=${*:-resnet50 resnet50-bf16 gpt2 bert-ddp resnet18-gloo2}
[ "$JOBS" = none ] && JOBS=""  # only the ATTRIB_JOBS runs
ATTRIB_JOBS=${ATTRIB_JOBS-resnet50-bf16 gpt2}  # jobs whose profiler cost is taken apart
ATTRIB_VARIANTS=${ATTRIB_VARIANTS:-all-calls default no-api no-kernel no-copy-sync}
KINETO=${KINETO:-1}
VARIANT=${VARIANT:-default}  # dpro-profile configuration of the per-job runs
STEPS=${STEPS:-10:14}        # the steps recorded by VARIANT=window
ITERS=${ITERS:-30}; KITERS=${KITERS:-20}; WARMUP=${WARMUP:-10}
PY=python3
export PYTHONUNBUFFERED=1

log() { echo "[$(date +%T)] $*" | tee -a "$W/logs/run.log"; }

{
  nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  $PY -c "import torch,sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
  $PY -c "import torchvision, transformers; print('torchvision', torchvision.__version__, 'transformers', transformers.__version__)"
  uname -a; nproc; (ldd --version | head -1)
} > "$W/logs/probe.txt" 2>&1
cat "$W/logs/probe.txt"

# The libcupti that torch itself loads: CUPTI must be one copy per process, so
# NVTX injection (--nvtx) and libdpro_inject.so's dependency must resolve to it.
CUPTI=$($PY - <<'PYEOF' 2>/dev/null
import torch
torch.zeros(1, device="cuda")
for line in open("/proc/self/maps"):
    p = line.split()[-1]
    if "libcupti.so" in p:
        print(p); break
PYEOF
)
if [ -z "$CUPTI" ]; then
  CUPTI=$(find /opt /usr/local -name 'libcupti.so.13*' 2>/dev/null | head -1)
fi
log "libcupti: ${CUPTI:-none found}"
export DPRO_CUPTI_LIB=$CUPTI
export LD_LIBRARY_PATH=$(dirname "${CUPTI:-/x}"):${LD_LIBRARY_PATH:-}
export DPRO_INJECT_LIB=$BIN/libdpro_inject.so

# Smoke test: a tiny CUDA job under dpro-profile.
cat > "$W/smoke.py" <<'PYEOF'
import torch
a = torch.randn(1024, 1024, device="cuda")
for i in range(5):
    torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
    b = a @ a
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print("smoke ok")
PYEOF
timeout 120 "$BIN/dpro-profile" --out "$W/dpro/smoke" --nvtx -- $PY "$W/smoke.py" > "$W/logs/smoke.log" 2>&1
log "smoke exit $?"; cat "$W/logs/smoke.log"; ls -la "$W/dpro/smoke"

run() {  # job mode [variant]: variant = dpro-profile's configuration (see below)
  local job=$1 mode=$2 variant=${3:-default}
  local n=1; [ "$job" = resnet18-gloo2 ] && n=2
  local iters=$ITERS; [ "$mode" = kineto ] && iters=$KITERS
  local cmd=($PY)
  if [ "$job" = bert-ddp ] || [ "$job" = resnet18-gloo2 ]; then
    cmd=($PY -m torch.distributed.run --standalone --nproc-per-node $n)
  fi
  cmd+=(tools/gpu/train_jobs.py --job "$job" --mode "$mode" --warmup "$WARMUP" --iters "$iters"
        --out "$W/kineto/$job" --summary "$SUM" --variant "$variant")
  [ "$variant" = emit-nvtx ] && cmd+=(--emit-nvtx)
  case $variant in *emit-nvtx-one) cmd+=(--emit-nvtx --emit-nvtx-steps "${EMIT_STEP:-12}:${EMIT_STEP:-12}") ;; esac
  local prof=("$BIN/dpro-profile" --out "$W/dpro/$job.$variant" --nvtx) off="" disable="" flush=1000
  case $variant in
    all-calls) prof+=(--all-cuda-calls) ;;
    no-api) off=runtime,driver ;;
    no-kernel) off=kernel ;;
    no-copy-sync) off=memcpy,memset,sync,event,correlation ;;
    no-sync) off=sync ;;
    no-event) off=event ;;
    no-memcpy-memset) off=memcpy,memset ;;
    no-correlation) off=correlation ;;
    window|window-emit-nvtx-one) prof+=(--steps "$STEPS") ;;
    no-nvtx) prof=("$BIN/dpro-profile" --out "$W/dpro/$job.$variant") ;;
    no-subscribe) off=subscribe ;;  # no CUPTI callback subscriber
    cupti-idle)  # CUPTI attached (subscriber, buffers, flush thread), nothing recorded
      prof=("$BIN/dpro-profile" --out "$W/dpro/$job.$variant")
      off=kernel,runtime,driver,memcpy,memset,sync,event,correlation,nvtx ;;
    inject-off) disable=1 ;;  # the injection library loaded, CUPTI never started
    emit-nvtx|emit-nvtx-one) ;;  # as shipped, the job (or step EMIT_STEP) inside emit_nvtx (see cmd)
    kernels-only) off=runtime,driver,memcpy,memset,sync,event,correlation ;;
    calls-only) off=kernel,memcpy,memset,sync,event,correlation ;;  # runtime and driver calls
    no-flush) flush=0 ;;  # no periodic flush: buffers are handed over when full
  esac
  local t0=$(date +%s.%N) log=$W/logs/$job.$mode.$variant.log
  if [ "$mode" = dpro ]; then
    DPRO_PROFILE_OFF=$off DPRO_PROFILE_DISABLE=$disable DPRO_PROFILE_FLUSH_MS=$flush timeout 240 "${prof[@]}" -- "${cmd[@]}" > "$log" 2>&1
  else
    timeout 240 "${cmd[@]}" > "$log" 2>&1
  fi
  local rc=$?
  log "$job $mode $variant exit $rc ($(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s)"
  [ $rc -ne 0 ] && tail -5 "$log"
}

# Where the profiler's cost goes: one record class left out at a time.
for job in $ATTRIB_JOBS; do
  run "$job" plain
  for v in $ATTRIB_VARIANTS; do
    if [ "$v" = plain ]; then run "$job" plain; else run "$job" dpro $v; fi
  done
  run "$job" plain
done
for job in $JOBS; do
  run "$job" plain
  run "$job" dpro "$VARIANT"
  [ "$KINETO" = 1 ] && run "$job" kineto
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$W/logs/run.log"
done

cut -c1-160 "$SUM"
# Back to the development machine: gzip'd native traces, summary and logs, in pieces
# under the device tool's 16 MiB per file.
find "$W/dpro" -name '*.dpro' -exec gzip -6 {} +
(cd "$W" && tar cf - dpro logs summary.jsonl) | split -b 15m -d - "$OUT/results.tar.part"
for job in $JOBS; do
  [ -d "$W/kineto/$job" ] && (cd "$W/kineto" && tar cf "$OUT/kineto_$job.tar" "$job")
done
ls -la "$OUT"
