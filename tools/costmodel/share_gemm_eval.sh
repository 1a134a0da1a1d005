#!/usr/bin/env bash
# GEMM kernel-choice features for the roofline-share model (issue 36, deliverable 2;
# `costmodel fit-shares --gemm-waves`, src/costmodel/roofline_share.h GemmWaves):
#   1. the form, chosen by leave-one-GPU-out over the training GPUs only (mean MAPE of the held-out
#      GPUs, and bmm / linear / conv pooled);
#   2. the chosen form's table and the first step's (fit-shares' defaults) fitted on all training
#      GPUs, then scored once on the GPUs outside the data, two ways:
#      (a) "recorded": each row's own kernel name and grid (what a trace recorded on the target gives);
#      (b) "likely": the same rows with Kernel Name, Kernels and Grid blanked (an op whose kernel is
#          not known: the likely tile, 128 a side or 64 under 128, split-K to at least one wave);
#      (c) "A100's": our H100/H200 rows (every GEMM shape of them is in the training data) with
#          the kernel name, kernel list and grid the same shape (family, B, M, N, K) ran with on the
#          training A100 (A100-PCIE-40GB; conv: A100 80GB PCIe); emptied where it has none;
#   3. few-shot, 50 samples, seeds 1-5 (`costmodel few-shot-shares --shares`), both tables, recorded.
#
#   tools/costmodel/share_gemm_eval.sh [BUILD_DIR]   (default: build; needs ../shared/data/neusight/train)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
# shellcheck source=tools/costmodel/eval_common.sh
source "$root/tools/costmodel/eval_common.sh"
train="${DPRO_SHARED_TRAIN:-$root/../shared/data/neusight/train}"
chosen="--gemm-waves tile+wave+conv --gemm-exponent 0.5 --gemm-likely-split-k"

logo() {  # logo ARGS...: one line, mean and bmm/linear/conv of fit-shares --logo ARGS
  "$cli" costmodel fit-shares --data "$train" --logo "$@" 2>&1 |
    grep -E 'mean of the GPUs|^\| (bmm|linear|conv) ' | tr -d '*' | awk -F'|' '{printf "%s %s; ", $2, $4}'
  echo
}

echo "## 1. Leave one GPU out over the training GPUs: mean of the held-out GPUs; families pooled"
for form in "--gemm-waves none" \
            "--gemm-waves tile" "--gemm-waves wave" "--gemm-waves tile+wave" \
            "--gemm-waves wave --gemm-blocks-per-sm 2" "--gemm-waves tile+wave --gemm-blocks-per-sm 2" \
            "--gemm-waves wave+conv" "--gemm-waves tile+wave+conv" \
            "--gemm-waves tile --gemm-exponent 0.25" "--gemm-waves tile --gemm-exponent 0.5" \
            "--gemm-waves tile --gemm-exponent 0.75" "--gemm-waves wave --gemm-exponent 0.5" \
            "--gemm-waves wave --gemm-exponent 2" "--gemm-waves tile+wave --gemm-exponent 0.25" \
            "--gemm-waves tile+wave --gemm-exponent 0.5" "--gemm-waves tile+wave+conv --gemm-exponent 0.25" \
            "--gemm-waves tile+wave+conv --gemm-exponent 0.5"; do
  # shellcheck disable=SC2086
  echo "$form: $(logo $form)"
done

echo
echo "### the likely kernel (held-out rows without kernel name and grid, --logo-blank-kernels)"
for form in "--gemm-waves none" "--gemm-waves tile+wave+conv --gemm-exponent 0.5" \
            "--gemm-waves tile+wave+conv --gemm-exponent 0.5 --gemm-likely-split-k"; do
  # shellcheck disable=SC2086
  echo "$form: $(logo --logo-blank-kernels $form)"
done

echo
echo "## 2. Zero-shot on GPUs outside the training data"
"$cli" costmodel fit-shares --data "$train" -o "$work/base.json" 2>/dev/null
# shellcheck disable=SC2086
"$cli" costmodel fit-shares --data "$train" $chosen -o "$work/gemm.json" 2>/dev/null
blank() {  # blank IN OUT: IN's rows with the kernel name, kernel list and grid emptied
  python3 - "$1" "$2" <<'PYEOF'
import csv, gzip, sys
src, dst = sys.argv[1], sys.argv[2]
with (gzip.open(src, "rt", newline="") if src.endswith(".gz") else open(src, newline="")) as f, \
     open(dst, "w", newline="") as out:
    r = csv.DictReader(f)
    w = csv.DictWriter(out, r.fieldnames)
    w.writeheader()
    for row in r:
        for c in ("Kernel Name", "Kernels", "Grid x", "Grid y", "Grid z"):
            if c in row:
                row[c] = ""
        w.writerow(row)
PYEOF
}
data="$root/data/costmodel/measured-2026-11-23"
specs=()
for spec in h100:H100-SXM5-80GB h100-rerun:H100-SXM5-80GB h200:H200-SXM-141GB h200-rerun:H200-SXM-141GB; do
  python3 "$root/tools/gpu/merge_ops.py" "$data/${spec%%:*}" "$work/${spec%%:*}.csv"
  specs+=("$work/${spec%%:*}.csv:${spec#*:}")
done
for spec in NVIDIA_L4:L4 NVIDIA_H100_80GB_HBM3:H100-SXM5-80GB NVIDIA_A100_80GB_PCIe:A100-PCIE-80GB; do
  specs+=("$root/data/costmodel/neusight-test/${spec%%:*}.csv.gz:${spec#*:}")
done
for spec in "${specs[@]}"; do
  file="${spec%:*}" gpu="${spec##*:}" name="$(basename "${spec%:*}")"
  blank "$file" "$work/blank.csv"
  for table in base gemm; do
    mape "$name $table recorded" predict --pricer roofline-share --shares "$work/$table.json" --device "$gpu" "$file"
    mape "$name $table likely" predict --pricer roofline-share --shares "$work/$table.json" --device "$gpu" "$work/blank.csv"
  done
done

python3 - "$train" "$work/a100.tsv" <<'PYEOF'
import csv, glob, gzip, sys
with open(sys.argv[2], "w") as out:
    for f in sorted(glob.glob(f"{sys.argv[1]}/*/NVIDIA_A100*.csv.gz")):
        with gzip.open(f, "rt", newline="") as g:
            for r in csv.DictReader(g):
                if r["OPName"] in ("bmm", "linear", "conv2d", "conv"):
                    dims = [r[c] for c in r if c not in ("OPName", "Latency", "Device", "Torch Version", "CUDNN Version",
                            "Kernel Name", "Warps per SM", "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x",
                            "Block y", "Block z", "CUDA Version", "Kernels", "Kernel Time")]
                    out.write("\t".join([r["OPName"], ",".join(dims), r["Kernel Name"], r["Kernels"],
                                         r["Grid x"], r["Grid y"], r["Grid z"]]) + "\n")
PYEOF
echo
echo "### (c) our runs with the A100's kernel of the same shape"
for spec in "${specs[@]:0:4}"; do
  python3 - "${spec%:*}" "$work/a100.tsv" "$work/a100k.csv" <<'PYEOF'
import csv, sys
known = {}
for line in open(sys.argv[2]):
    op, dims, name, kernels, gx, gy, gz = line.rstrip("\n").split("\t")
    known.setdefault((op, dims), (name, kernels, gx, gy, gz))
meta = {"OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "Kernel Name", "Warps per SM",
        "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x", "Block y", "Block z", "CUDA Version", "Kernels",
        "Kernel Time"}
with open(sys.argv[1], newline="") as f, open(sys.argv[3], "w", newline="") as out:
    r = csv.DictReader(f)
    w = csv.DictWriter(out, r.fieldnames)
    w.writeheader()
    found = total = 0
    for row in r:
        if row["OPName"] in ("bmm", "linear", "conv2d", "conv"):
            total += 1
            dims = ",".join(row[c] for c in r.fieldnames if c not in meta and row[c] != "")
            k = known.get((row["OPName"], dims))
            found += k is not None
            name, kernels, gx, gy, gz = k or ("", "", "", "", "")
            row.update({"Kernel Name": name, "Kernels": kernels, "Grid x": gx, "Grid y": gy, "Grid z": gz})
        w.writerow(row)
print(f"{sys.argv[1].split('/')[-1]}: {found} of {total} GEMM and conv rows have the A100's kernel", file=sys.stderr)
PYEOF
  mape "$(basename "${spec%:*}") gemm A100's" predict --pricer roofline-share --shares "$work/gemm.json" --device "${spec##*:}" "$work/a100k.csv"
done

echo
echo "## 3. Few-shot, 50 samples, recorded kernels: MAPE of the rows not drawn, mean over seeds 1-5"
for spec in "${specs[@]}"; do
  for table in base gemm; do
    echo "$(basename "${spec%:*}") $table: $("$cli" costmodel few-shot-shares --shares "$work/$table.json" \
      --device "${spec##*:}" -n 50 "${spec%:*}" 2>/dev/null | grep '^few-shot' | sed 's/.*MAPE of the other rows //')"
  done
done
