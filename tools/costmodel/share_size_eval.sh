#!/usr/bin/env bash
# Size extrapolation of the roofline-share model on the training GPUs' own rows (issue 36): how
# the fit prices ops larger than any it saw. The shared NeuSight rows of each op family are split
# at the family's 80th percentile of op size (FLOP count of a GEMM or conv, element count of the
# others; the same threshold on every GPU); the table is fitted on the smaller four fifths of the
# five GPUs and scored on each GPU's larger fifth, with fit-shares' default form and with
# --no-hold-large (only GPUs with rows in a bucket shape it; the form before 2026-11-27). The rule
# that a GPU counts at its largest bucket's share beyond it was chosen on these figures.
#
#   tools/costmodel/share_size_eval.sh [BUILD_DIR]   (default: build; about a minute; needs the
#   shared training data at ../shared/data/neusight/train)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
# shellcheck source=tools/costmodel/eval_common.sh
source "$root/tools/costmodel/eval_common.sh"
train="$root/../shared/data/neusight/train"
[ -d "$train" ] || { echo "error: $train not found (the shared NeuSight training rows)" >&2; exit 2; }

python3 - "$train" "$work" <<'PYEOF'
import csv, glob, gzip, os, sys
train, work = sys.argv[1], sys.argv[2]

def number(r, k):
    v = r.get(k)
    return float(v) if v not in (None, "") else 1.0

def size(family, r):
    if family in ("bmm", "linear"):
        return number(r, "B") * number(r, "M") * number(r, "N") * number(r, "K")
    if family == "conv":
        b, ci, co, ks, i, s, p = (number(r, k) for k in
                                  ("B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"))
        o = (i + 2 * p - ks) // s + 1
        return b * co * o * o * ci * ks * ks
    out = 1.0
    for k in ("B", "H", "M", "N", "K"):
        if r.get(k) not in (None, ""):
            out *= float(r[k])
    return out

large = {}  # GPU file name -> its larger rows, every family
for family in sorted(os.listdir(train)):
    files = {}
    for path in sorted(glob.glob(os.path.join(train, family, "*.csv.gz"))):
        reader = csv.DictReader(gzip.open(path, "rt"))
        files[path] = (reader.fieldnames, list(reader))
    sizes = sorted(size(family, r) for _, rows in files.values() for r in rows)
    threshold = sizes[int(0.8 * len(sizes))]
    os.makedirs(os.path.join(work, "small", family), exist_ok=True)
    for path, (header, rows) in files.items():
        with gzip.open(os.path.join(work, "small", family, os.path.basename(path)), "wt", newline="") as out:
            w = csv.DictWriter(out, fieldnames=header)
            w.writeheader()
            w.writerows(r for r in rows if size(family, r) < threshold)
        large.setdefault(os.path.basename(path).removesuffix(".csv.gz"), []).extend(
            r for r in rows if size(family, r) >= threshold)
for gpu, rows in large.items():
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(work, f"large-{gpu}.csv"), "w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
PYEOF

"$cli" costmodel fit-shares --data "$work/small" -o "$work/hold.json" 2>/dev/null
"$cli" costmodel fit-shares --no-hold-large --data "$work/small" -o "$work/present.json" 2>/dev/null
echo "| GPU (its largest fifth of each family) | --no-hold-large (MAPE %) | default (MAPE %) |"
echo "|---|---:|---:|"
for spec in NVIDIA_A100-PCIE-40GB:A100-PCIE-40GB Tesla_P100-PCIE-16GB:P100-PCIE-16GB Tesla_P4:P4 Tesla_T4:T4 \
            Tesla_V100-PCIE-32GB:V100-PCIE-32GB; do
  IFS=: read -r file gpu <<< "$spec"
  [ -f "$work/large-$file.csv" ] || continue
  cells=()
  for table in present hold; do
    line="$("$cli" costmodel predict --pricer roofline-share --shares "$work/$table.json" --device "$gpu" \
              "$work/large-$file.csv" 2>&1 >/dev/null | grep '^against the Latency column' || true)"
    cells+=("$(sed -n 's/.*MAPE \([0-9.]*\) %.*/\1/p' <<< "$line")")
  done
  echo "| $gpu | ${cells[0]} | ${cells[1]} |"
done
