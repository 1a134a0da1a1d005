#!/usr/bin/env bash
# The roofline-share model (src/costmodel/roofline_share.h, issue 36) against the learned model.
#   1. how its form was chosen: leave-one-GPU-out over the five training GPUs (the table fitted on
#      four, scored on the fifth's host-timed Latency), for the chosen form and the forms it beat;
#   2. zero-shot on GPUs outside the training data: our H100 and H200 runs (data/costmodel/
#      measured-2026-11-23: Latency and Kernel Time), each GPU left out of the fit in turn (the shipped
#      data/costmodel/shares.json holds both since 2026-11-27), and NeuSight's test rows of L4, H100
#      and A100 80GB (Latency only) with NeuSight's five GPUs' table and the shipped one. Each line is the MAPE line of
#      `costmodel predict`, the learned model's (--pricer learned, the default) beside the
#      roofline-share model's (--pricer roofline-share); the learned model's kernel time is its
#      latency less the measurement overhead its predictions carry (kernel_time.h).
#
#   tools/costmodel/share_eval.sh [BUILD_DIR]      (default: build; about a minute; step 1 needs
#   the shared training data at ../shared/data/neusight/train)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
# shellcheck source=tools/costmodel/eval_common.sh
source "$root/tools/costmodel/eval_common.sh"

lines() {  # lines LABEL ARGS...: every MAPE line of `costmodel ARGS...`, prefixed by LABEL
  local label="$1"; shift
  "$cli" costmodel "$@" 2>&1 >/dev/null | grep '^against the' | sed "s/^against the /$label: /" || true
}

echo "## 1. Leave one GPU out over the training GPUs (host-timed Latency)"
echo "### the chosen form (fit-shares' defaults)"
"$cli" costmodel fit-shares --logo
echo
echo "### the forms it was chosen against: mean MAPE % of the five held-out GPUs"
for form in "--intensity-width 0 --bucket-width 0.5 --floor-margin 1.2" "--intensity-width 0 --bucket-width 0.5" \
            "--intensity-width 0.5 --bucket-width 0.5" "--intensity-width 1 --bucket-width 0.5" \
            "--intensity-width 1 --bucket-width 1" "--intensity-width 1 --floor-margin 1.2" \
            "--intensity-width 1 --floor-quantile 0.25" "--intensity-width 1 --min-rows 20" "--no-host-floor"; do
  # shellcheck disable=SC2086
  echo "$form: $("$cli" costmodel fit-shares --logo $form | grep 'mean of the GPUs' | tr -d '|* ' | sed 's/meanoftheGPUs//')"
done

echo
echo "### seven GPUs: NeuSight's five and our H100 and H200 runs (data/costmodel/measured-2026-11-23), GPU time read"
echo "### where a row has a Kernel Time (the shipped table's data), then every row's latency (--latency-only)"
"$cli" costmodel fit-shares --logo --data "$root/../shared/data/neusight/train" --data "$root/data/costmodel/measured-2026-11-23"
"$cli" costmodel fit-shares --logo --latency-only --data "$root/../shared/data/neusight/train" \
  --data "$root/data/costmodel/measured-2026-11-23"
echo
echo "## The shipped table's host figures and kernel floors (us)"
python3 - "$root/data/costmodel/shares.json" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))
floors = sorted(f["kernel_floor_ms"] * 1e3 for f in t["families"].values())
print(f"host overhead {t['host_overhead_ms'] * 1e3:.1f}, host floor {t['host_floor_ms'] * 1e3:.1f}, "
      f"kernel floors {floors[0]:.1f}-{floors[-1]:.1f}")
PYEOF

echo
echo "## 2. Zero-shot on GPUs outside the training data (nothing measured on them)"
# The shipped table (data/costmodel/shares.json) holds our H100 and H200 runs since 2026-11-27, so
# on their rows each GPU is left out in turn: the table fitted on NeuSight's five GPUs (the table
# shipped before), on them and the other GPU's two runs read as host-timed latencies
# (--latency-only), and on the same rows reading the GPU time of those with a Kernel Time.
shared=""
[ -d "$root/../shared/data/neusight/train" ] && shared="$root/../shared/data/neusight/train"
data="$root/data/costmodel/measured-2026-11-23"
if [ -n "$shared" ]; then
  "$cli" costmodel fit-shares --data "$shared" -o "$work/neusight.json" 2>/dev/null
  for other in h100 h200; do
    "$cli" costmodel fit-shares --data "$shared" --data "$data/$other" --data "$data/$other-rerun" --latency-only \
      -o "$work/with-$other-latency.json" 2>/dev/null
    "$cli" costmodel fit-shares --data "$shared" --data "$data/$other" --data "$data/$other-rerun" \
      -o "$work/with-$other.json" 2>/dev/null
  done
fi
for spec in h100:H100-SXM5-80GB:h200 h100-rerun:H100-SXM5-80GB:h200 h200:H200-SXM-141GB:h100 h200-rerun:H200-SXM-141GB:h100; do
  IFS=: read -r run gpu other <<< "$spec"
  python3 "$root/tools/gpu/merge_ops.py" "$data/$run" "$work/$run.csv"
  lines "$run, learned" predict --device "$gpu" "$work/$run.csv"
  [ -n "$shared" ] || continue
  lines "$run, roofline-share (NeuSight's GPUs)" predict --pricer roofline-share --shares "$work/neusight.json" \
    --device "$gpu" "$work/$run.csv"
  lines "$run, roofline-share (and $other, latencies)" predict --pricer roofline-share \
    --shares "$work/with-$other-latency.json" --device "$gpu" "$work/$run.csv"
  lines "$run, roofline-share (and $other, GPU time)" predict --pricer roofline-share --shares "$work/with-$other.json" \
    --device "$gpu" "$work/$run.csv"
done
python3 - "$data" <<'PYEOF'
import csv, glob, gzip, statistics as st, sys
# GPU time of the small elementwise ops (Latency under 30 us) of the runs with a Kernel Time.
for run in ("h100-rerun", "h200-rerun"):
    k = []
    for f in glob.glob(f"{sys.argv[1]}/{run}/*/*.csv.gz"):
        if f.split("/")[-2] in ("bmm", "linear", "conv", "ln", "softmax"):
            continue
        with gzip.open(f, "rt", newline="") as g:
            k += [float(r["Kernel Time"]) * 1e3 for r in csv.DictReader(g)
                  if r["Kernel Time"] and float(r["Latency"]) < 0.03]
    q = st.quantiles(k, n=10)
    print(f"{run}: small elementwise ops' Kernel Time (us): median {st.median(k):.1f}, p10-p90 {q[0]:.1f}-{q[-1]:.1f}, {len(k)} rows")
PYEOF
data="$root/data/costmodel/neusight-test"
for spec in NVIDIA_L4:L4 NVIDIA_H100_80GB_HBM3:H100-SXM5-80GB NVIDIA_A100_80GB_PCIe:A100-PCIE-80GB; do
  file="$data/${spec%%:*}.csv.gz" gpu="${spec#*:}"
  lines "NeuSight $gpu, learned" predict --device "$gpu" "$file"
  [ -z "$shared" ] || lines "NeuSight $gpu, roofline-share (NeuSight's GPUs)" predict --pricer roofline-share \
    --shares "$work/neusight.json" --device "$gpu" "$file"
  lines "NeuSight $gpu, roofline-share (shipped)" predict --pricer roofline-share --device "$gpu" "$file"
done
