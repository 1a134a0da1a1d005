#!/usr/bin/env bash
# Few-shot for the roofline-share model (issue 36, deliverable 3; src/costmodel/share_device_fit.h):
# on each GPU outside the training data, per seed N of its measured rows drawn as `costmodel pick
# --pricer roofline-share` draws them (5 seeds), the device's scalars (host overhead and floor,
# kernel-floor scale, share multipliers per family group and family) fitted on them, and the MAPE
# of the OTHER rows only (`costmodel few-shot-shares`). N = 20 and 50. Rows: NeuSight's test rows
# of L4, H100 and A100 80GB (data/costmodel/neusight-test) and our H100/H200 runs
# (data/costmodel/measured-2026-11-23). Then one pick -> predict --device-samples round trip,
# which must give the same MAPE as the few-shot table's seed-1 row of that GPU (same draw, same fit).
#
#   tools/costmodel/share_few_shot_eval.sh [BUILD_DIR]      (default: build; 3-4 minutes on 2 cores)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
# shellcheck source=tools/costmodel/eval_common.sh
source "$root/tools/costmodel/eval_common.sh"

data="$root/data/costmodel/measured-2026-11-23"
for run in h100 h100-rerun h200 h200-rerun; do python3 "$root/tools/gpu/merge_ops.py" "$data/$run" "$work/$run.csv"; done
# The shipped table (data/costmodel/shares.json) holds our H100 and H200 runs since 2026-11-27, so
# the prior of an H100 (ours or NeuSight's) is the table fitted without the H100, on NeuSight's five
# GPUs and our H200 runs, and the H200's likewise; without the shared data, the shipped table.
shared="$root/../shared/data/neusight/train"
prior() { :; }
if [ -d "$shared" ]; then
  "$cli" costmodel fit-shares --data "$shared" --data "$data/h200" --data "$data/h200-rerun" -o "$work/without-h100.json" 2>/dev/null
  "$cli" costmodel fit-shares --data "$shared" --data "$data/h100" --data "$data/h100-rerun" -o "$work/without-h200.json" 2>/dev/null
  prior() {  # prior GPU: the --shares option of a GPU in the shipped table
    case "$1" in
      H100-SXM5-80GB) echo "--shares $work/without-h100.json" ;;
      H200-SXM-141GB) echo "--shares $work/without-h200.json" ;;
    esac
  }
else
  echo "(no ../shared/data/neusight/train: H100 and H200 are scored with the shipped table, which holds them)"
fi
for n in 20 50; do
  echo "## $n samples"
  for spec in "$root/data/costmodel/neusight-test/NVIDIA_L4.csv.gz:L4" \
              "$root/data/costmodel/neusight-test/NVIDIA_H100_80GB_HBM3.csv.gz:H100-SXM5-80GB" \
              "$root/data/costmodel/neusight-test/NVIDIA_A100_80GB_PCIe.csv.gz:A100-PCIE-80GB" \
              "$work/h100.csv:H100-SXM5-80GB" "$work/h100-rerun.csv:H100-SXM5-80GB" \
              "$work/h200.csv:H200-SXM-141GB" "$work/h200-rerun.csv:H200-SXM-141GB"; do
    echo "### ${spec%%:*} (${spec##*/})" | sed "s|$work/||; s|$root/||"
    "$cli" costmodel few-shot-shares $(prior "${spec##*:}") --device "${spec##*:}" -n "$n" "${spec%:*}" 2>&1 | sed "s|$work/||; s|$root/||"
    echo
  done
done

echo "## 50 samples, simpler forms (one multiplier per group, with and without a slope): what each part gives"
for spec in "$root/data/costmodel/neusight-test/NVIDIA_L4.csv.gz:L4" \
            "$root/data/costmodel/neusight-test/NVIDIA_H100_80GB_HBM3.csv.gz:H100-SXM5-80GB" \
            "$root/data/costmodel/neusight-test/NVIDIA_A100_80GB_PCIe.csv.gz:A100-PCIE-80GB" \
            "$work/h100.csv:H100-SXM5-80GB" "$work/h100-rerun.csv:H100-SXM5-80GB" \
            "$work/h200.csv:H200-SXM-141GB" "$work/h200-rerun.csv:H200-SXM-141GB"; do
  for form in "--min-family-rows 1000 --min-slope-rows 1000" "--min-family-rows 1000"; do
    # shellcheck disable=SC2086
    echo "$(basename "${spec%:*}") $form: $("$cli" costmodel few-shot-shares $(prior "${spec##*:}") --device "${spec##*:}" -n 50 $form "${spec%:*}" 2>/dev/null | grep '^few-shot' | grep -v 'Kernel Time' | sed 's/.*MAPE of the other rows //')"
  done
done
echo

echo "## GEMM kernel classes (--min-kernel-class-rows 1 --kernel-class-shrink 2, chosen on the A100 80GB's"
echo "## rows only): a multiplier per cuBLAS/CUTLASS kernel on top of its family's; before and after"
for n in 50 20; do
  for spec in "$root/data/costmodel/neusight-test/NVIDIA_A100_80GB_PCIe.csv.gz:A100-PCIE-80GB" \
              "$root/data/costmodel/neusight-test/NVIDIA_L4.csv.gz:L4" \
              "$root/data/costmodel/neusight-test/NVIDIA_H100_80GB_HBM3.csv.gz:H100-SXM5-80GB" \
              "$work/h100.csv:H100-SXM5-80GB" "$work/h100-rerun.csv:H100-SXM5-80GB" \
              "$work/h200.csv:H200-SXM-141GB" "$work/h200-rerun.csv:H200-SXM-141GB"; do
    for form in "" "--min-kernel-class-rows 1 --kernel-class-shrink 2"; do
      # shellcheck disable=SC2086
      echo "$n $(basename "${spec%:*}") [${form:-family multipliers only}]: $("$cli" costmodel few-shot-shares $(prior "${spec##*:}") --device "${spec##*:}" -n "$n" $form "${spec%:*}" 2>/dev/null | grep '^few-shot' | grep -v 'Kernel Time' | sed 's/.*MAPE of the other rows //')"
    done
  done
done
echo

echo "## Our reruns record Kernel Time: the fit reading it (the default) against --latency-only (the fit"
echo "## before it read kernel times); MAPE of the other rows on Latency and on Kernel Time"
for n in 50 20; do
  for spec in "$work/h100-rerun.csv:H100-SXM5-80GB" "$work/h200-rerun.csv:H200-SXM-141GB"; do
    for form in "" "--latency-only"; do
      # shellcheck disable=SC2086
      "$cli" costmodel few-shot-shares $(prior "${spec##*:}") --device "${spec##*:}" -n "$n" $form "${spec%:*}" 2>/dev/null | grep '^few-shot' |
        sed "s|^few-shot|$(basename "${spec%:*}") [${form:-reading Kernel Time}]:|"
    done
  done
done
echo

echo "## pick -> predict --device-samples (L4, 50 rows, seed 1): the rows not drawn"
all="$root/data/costmodel/neusight-test/NVIDIA_L4.csv.gz"
zcat "$all" > "$work/l4.csv"
"$cli" costmodel pick --pricer roofline-share --device L4 -n 50 --seed 1 "$work/l4.csv" -o "$work/l4-samples.csv" 2>/dev/null
{ head -n 1 "$work/l4.csv"; grep -vxFf <(tail -n +2 "$work/l4-samples.csv") <(tail -n +2 "$work/l4.csv"); } > "$work/l4-rest.csv"
mape "L4, 50 samples, the other rows" predict --pricer roofline-share --device L4 --device-samples "$work/l4-samples.csv" "$work/l4-rest.csv"

echo
echo "## A reference for what scalars can reach: a multiplier per (family, half decade of the predicted"
echo "## latency) fitted on ALL of a GPU's rows (the median log ratio of each cell), scored on the same rows"
for spec in "$root/data/costmodel/neusight-test/NVIDIA_L4.csv.gz:L4" \
            "$root/data/costmodel/neusight-test/NVIDIA_H100_80GB_HBM3.csv.gz:H100-SXM5-80GB" \
            "$root/data/costmodel/neusight-test/NVIDIA_A100_80GB_PCIe.csv.gz:A100-PCIE-80GB" \
            "$work/h100.csv:H100-SXM5-80GB" "$work/h200.csv:H200-SXM-141GB"; do
  "$cli" costmodel predict --pricer roofline-share --device "${spec##*:}" "${spec%:*}" -o "$work/priced.csv" --force 2>/dev/null
  python3 - "$work/priced.csv" "$(basename "${spec%:*}")" <<'PYEOF'
import collections, csv, math, statistics as st, sys
cells, groups = collections.defaultdict(list), {"bmm": "GEMM", "linear": "GEMM", "conv": "conv", "ln": "ln/softmax", "softmax": "ln/softmax"}
for r in csv.DictReader(open(sys.argv[1])):
    if r["predicted_ms"] and r["Latency"]:
        p, m = float(r["predicted_ms"]), float(r["Latency"])
        cells[(r["OPName"], math.floor(math.log10(p * 1e3) * 2))].append(math.log(p / m))
by_group, every = collections.defaultdict(list), []
for (op, _), v in cells.items():
    med = st.median(v)
    for x in v:
        e = abs(math.exp(x - med) - 1) * 100  # the prediction over the median ratio, against the measurement
        by_group[groups.get(op, "elementwise")].append(e)
        every.append(e)
print(f"{sys.argv[2]}: {st.mean(every):.1f} % (" + ", ".join(f"{g} {st.mean(v):.1f}" for g, v in sorted(by_group.items())) + ")")
PYEOF
done
