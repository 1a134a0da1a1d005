#!/usr/bin/env bash
# The learned cost model on operators we measured ourselves on two GPUs that appear nowhere in its
# training data: an H100 80GB HBM3 and an H200 (data/costmodel/measured-2026-11-23, recorded by
# tools/gpu/measure_ops.py on the shared data's own shapes; see data/costmodel/README.md).
#   1. the shipped model with nothing measured on the GPU: MAPE per op family;
#   2. with 200 of the GPU's rows measured (`costmodel pick`, k-means): residual correction,
#      fine-tuned model (`costmodel adapt`), both; MAPE on the other rows;
#   3. the measurements themselves: the same rows timed again on another machine of each GPU
#      (h100-rerun, h200-rerun), and how much of a row's Latency its kernels take (GPU time alone);
#   4. the same rows on the H200 against the H100 (h200-rerun / h100-rerun): GPU time alone and
#      the host-timed Latency;
#   5. replay --device's kernel re-timing scored on them, H100 -> H200 and back (`costmodel retime`).
#
#   tools/costmodel/measured_eval.sh [BUILD_DIR]      (default: build; a few minutes)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
data="$root/data/costmodel/measured-2026-11-23"
# shellcheck source=tools/costmodel/eval_common.sh
source "$root/tools/costmodel/eval_common.sh"
merge() { python3 "$root/tools/gpu/merge_ops.py" "$1" "$2"; }  # every family of a run in one CSV

runs="h100:H100-SXM5-80GB h200:H200-SXM-141GB"
echo "## Nothing measured on the GPU (the shipped model)"
for spec in $runs; do
  merge "$data/${spec%%:*}" "$work/${spec%%:*}.csv"
  mape "${spec#*:}" predict --device "${spec#*:}" "$work/${spec%%:*}.csv"
done

echo
echo "## 200 k-means samples measured on the GPU (MAPE on the other rows)"
for spec in $runs; do
  few_shot "${spec#*:}" "$work/${spec%%:*}.csv"
done

echo
python3 - "$data" <<'PYEOF'
import csv, glob, gzip, statistics as st, sys
data = sys.argv[1]
DIMS = ["B", "M", "N", "K", "H", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"]


def load(f):  # the rows of one family of one run, by their dimensions
    with gzip.open(f, "rt", newline="") as g:
        return {tuple(r.get(c, "") for c in DIMS): r for r in csv.DictReader(g)}


def run(gpu, op):
    return load(glob.glob(f"{data}/{gpu}/{op}/*.csv.gz")[0])


ops = sorted(f.split("/")[-2] for f in glob.glob(data + "/h100-rerun/*/*.csv.gz"))
print("## The measurements: the same rows on another machine of the same GPU; kernel time in the Latency")
print("| family | H100: rows in both runs | run-to-run median / mean abs. difference % | kernel time / Latency (median) "
      "| H200: rows in both runs | run-to-run median / mean abs. difference % | kernel time / Latency (median) |")
print("|---|---:|---|---:|---:|---|---:|")
for op in ops:
    cells = []
    for gpu in ("h100", "h200"):
        first, second = run(gpu, op), run(gpu + "-rerun", op)
        d = [abs(float(r["Latency"]) - float(first[k]["Latency"])) / float(first[k]["Latency"])
             for k, r in second.items() if k in first]
        share = [float(r["Kernel Time"]) / float(r["Latency"]) for r in second.values()]
        cells.append(f"{len(d)} | {100 * st.median(d):.1f} / {100 * st.mean(d):.1f} | {st.median(share):.2f}")
    print(f"| {op} | " + " | ".join(cells) + " |")

print()
print("## H200 against H100 on the same rows: GPU time alone (Kernel Time) and host-timed Latency")
print("| family | rows on both | H200 / H100 kernel time (median, p10-p90) | same main kernel "
      "| H200 / H100 Latency (median) | rows with H100 kernel time >= 50 us: kernel-time ratio |")
print("|---|---:|---|---:|---:|---|")
for op in ops:
    a, b = run("h100-rerun", op), run("h200-rerun", op)
    ks = [k for k in a if k in b]
    kr = sorted(float(b[k]["Kernel Time"]) / float(a[k]["Kernel Time"]) for k in ks)
    same = sum(a[k]["Kernel Name"] == b[k]["Kernel Name"] for k in ks) / len(ks)
    lr = st.median(float(b[k]["Latency"]) / float(a[k]["Latency"]) for k in ks)
    big = [float(b[k]["Kernel Time"]) / float(a[k]["Kernel Time"]) for k in ks if float(a[k]["Kernel Time"]) >= 0.05]
    bigs = f"{st.median(big):.2f} (n={len(big)})" if big else "-"
    print(f"| {op} | {len(ks)} | {st.median(kr):.2f} ({kr[len(kr) // 10]:.2f}-{kr[9 * len(kr) // 10]:.2f}) | "
          f"{same:.2f} | {lr:.2f} | {bigs} |")
PYEOF

echo
echo "## replay --device's kernel re-timing on these rows, both ways (costmodel retime)"
"$cli" costmodel retime "$data/h100-rerun" "$data/h200-rerun"
"$cli" costmodel retime "$data/h200-rerun" "$data/h100-rerun"
