#!/usr/bin/env bash
# The learned cost model on measurements it was never trained or tuned on: NeuSight's test split
# (data/costmodel/neusight-test, see data/costmodel/README.md), GPUs outside the training data
# (L4, H100) and new shapes on GPUs of it. For each GPU: the model with nothing measured on it;
# for the GPUs outside the data also with 200 of its rows as few-shot samples (chosen by
# `costmodel pick`, k-means), priced on the other rows by the residual correction
# (`predict --samples`) and by a model fine-tuned on them (`costmodel adapt`) plus the correction.
# Each figure is the MAPE line `costmodel predict` prints for rows with a measured Latency.
#
#   tools/costmodel/unseen_eval.sh [BUILD_DIR]      (default: build; about a minute)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
data="$root/data/costmodel/neusight-test"
# shellcheck source=tools/costmodel/eval_common.sh
source "$root/tools/costmodel/eval_common.sh"

echo "## Nothing measured on the GPU (the shipped model)"
for spec in NVIDIA_H100_80GB_HBM3:H100-SXM5-80GB NVIDIA_L4:L4 NVIDIA_A100_80GB_PCIe:A100-PCIE-80GB \
            NVIDIA_A100-PCIE-40GB:A100-PCIE-40GB Tesla_P100-PCIE-16GB:P100-PCIE-16GB Tesla_P4:P4 \
            Tesla_T4:T4 Tesla_V100-PCIE-32GB:V100-PCIE-32GB; do
  mape "${spec#*:}" predict --device "${spec#*:}" "$data/${spec%%:*}.csv.gz"
done

echo
echo "## GPUs outside the data, 200 k-means samples measured on them (MAPE on the other rows)"
for spec in NVIDIA_H100_80GB_HBM3:H100-SXM5-80GB NVIDIA_L4:L4; do
  gpu="${spec#*:}" all="$work/${spec#*:}-all.csv"
  gzip -dc "$data/${spec%%:*}.csv.gz" > "$all"
  few_shot "$gpu" "$all"
done
