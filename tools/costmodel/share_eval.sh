#!/usr/bin/env bash
# The roofline-share model (src/costmodel/roofline_share.h, issue 36) against the learned model.
#   1. how its form was chosen: leave-one-GPU-out over the five training GPUs (the table fitted on
#      four, scored on the fifth's host-timed Latency), for the chosen form and the forms it beat;
#   2. zero-shot on GPUs outside the training data, once, with the shipped data/costmodel/shares.json:
#      our H100 and H200 runs (data/costmodel/measured-2026-11-23: Latency and Kernel Time) and
#      NeuSight's test rows of L4, H100 and A100 80GB (Latency only). Each line is the MAPE line of
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
data="$root/data/costmodel/measured-2026-11-23"
for spec in h100:H100-SXM5-80GB h100-rerun:H100-SXM5-80GB h200:H200-SXM-141GB h200-rerun:H200-SXM-141GB; do
  run="${spec%%:*}" gpu="${spec#*:}"
  python3 "$root/tools/gpu/merge_ops.py" "$data/$run" "$work/$run.csv"
  lines "$run, learned" predict --device "$gpu" "$work/$run.csv"
  lines "$run, roofline-share" predict --pricer roofline-share --device "$gpu" "$work/$run.csv"
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
  lines "NeuSight $gpu, roofline-share" predict --pricer roofline-share --device "$gpu" "$file"
done
