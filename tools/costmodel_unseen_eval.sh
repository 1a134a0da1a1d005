#!/usr/bin/env bash
# The learned cost model on measurements it was never trained or tuned on: NeuSight's test split
# (data/costmodel/neusight-test, see data/costmodel/README.md), GPUs outside the training data
# (L4, H100) and new shapes on GPUs of it. For each GPU: the model with nothing measured on it;
# for the GPUs outside the data also with 200 of its rows as few-shot samples (chosen by
# `costmodel pick`, k-means), priced on the other rows by the residual correction
# (`predict --samples`) and by a model fine-tuned on them (`costmodel adapt`) plus the correction.
# Each figure is the MAPE line `costmodel predict` prints for rows with a measured Latency.
#
#   tools/costmodel_unseen_eval.sh [BUILD_DIR]      (default: build; about a minute)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
cli="$build/tools/dpro-replay/dpro-replay"
data="$root/data/costmodel/neusight-test"
[ -x "$cli" ] || { echo "error: $cli not built (bash tools/build.sh)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mape() {  # mape LABEL ARGS...: the MAPE line of `costmodel ARGS...`, prefixed by LABEL
  local label="$1"; shift
  local line
  line="$("$cli" costmodel "$@" 2>&1 >/dev/null | grep '^against the Latency column' || true)"
  echo "$label: ${line#against the Latency column }"
}

echo "## Nothing measured on the GPU (the shipped model)"
for spec in NVIDIA_H100_80GB_HBM3:H100-SXM5-80GB NVIDIA_L4:L4 NVIDIA_A100_80GB_PCIe:A100-PCIE-80GB \
            NVIDIA_A100-PCIE-40GB:A100-PCIE-40GB Tesla_P100-PCIE-16GB:P100-PCIE-16GB Tesla_P4:P4 \
            Tesla_T4:T4 Tesla_V100-PCIE-32GB:V100-PCIE-32GB; do
  mape "${spec#*:}" predict --device "${spec#*:}" "$data/${spec%%:*}.csv.gz"
done

echo
echo "## GPUs outside the data, 200 k-means samples measured on them (MAPE on the other rows)"
for spec in NVIDIA_H100_80GB_HBM3:H100-SXM5-80GB NVIDIA_L4:L4; do
  gpu="${spec#*:}"
  all="$work/$gpu-all.csv" samples="$work/$gpu-samples.csv" rest="$work/$gpu-rest.csv"
  gzip -dc "$data/${spec%%:*}.csv.gz" > "$all"
  "$cli" costmodel pick -n 200 "$all" -o "$samples" 2>/dev/null
  { head -n 1 "$all"; grep -vxFf <(tail -n +2 "$samples") <(tail -n +2 "$all"); } > "$rest"
  mape "$gpu, 0 samples (the same rows)" predict --device "$gpu" "$rest"
  mape "$gpu, correction" predict --device "$gpu" --samples "$samples" "$rest"
  "$cli" costmodel -q adapt --device "$gpu" --samples "$samples" -o "$work/$gpu.dpcm" > /dev/null
  mape "$gpu, fine-tuned" --model "$work/$gpu.dpcm" predict --device "$gpu" "$rest"
  mape "$gpu, fine-tuned + correction" --model "$work/$gpu.dpcm" predict --device "$gpu" --samples "$samples" "$rest"
done
