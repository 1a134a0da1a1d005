#!/usr/bin/env bash
# How much of the learned model's error on GPUs outside the training data (NeuSight's test rows
# of L4 and H100, data/costmodel/neusight-test) is the draw of one training, and whether a sixth
# GPU in the training data helps the other one. For seeds 1-3, trains the unseen-GPU network
# (the one that prices both GPUs; the main network gets 1 epoch, it does not price them) on
#   base      the shared training data (five GPUs)
#   +h100     base plus H100's test rows        +h100x10  base plus ten copies of them
#   +l4       base plus L4's test rows          +l4x10    base plus ten copies of them
# and prints the MAPE line of `costmodel predict` on L4's and H100's rows for each model, then
# the geometric mean of the three base models' predictions. Figures: docs/costmodel.md,
# "GPUs outside the data, measured". Needs ../shared/data/neusight/train (or DATA).
#
#   tools/costmodel/outside_seeds.sh [DATA] [BUILD_DIR]     (about 12 minutes on 2 cores)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${1:-$root/../shared/data/neusight/train}"
build="${2:-$root/build}"
cli="$build/tools/dpro-replay/dpro-replay"
test_rows="$root/data/costmodel/neusight-test"
[ -x "$cli" ] || { echo "error: $cli not built (bash tools/build.sh)" >&2; exit 2; }
[ -d "$data" ] || { echo "error: $data: no such directory (the shared NeuSight training data)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A training directory: every CSV of $data (linked) plus N copies of the named test file.
make_dir() {  # make_dir NAME [TEST_FILE COPIES]
  local dir="$work/$1"
  mkdir -p "$dir"
  (cd "$data" && find . -name '*.csv*' -type f) | while read -r f; do
    mkdir -p "$dir/$(dirname "$f")"
    ln -s "$data/$f" "$dir/$f"
  done
  if [ $# -eq 3 ]; then
    for i in $(seq "$3"); do cp "$test_rows/$2.csv.gz" "$dir/extra_$i.csv.gz"; done
  fi
}
make_dir base
make_dir h100 NVIDIA_H100_80GB_HBM3 1
make_dir h100x10 NVIDIA_H100_80GB_HBM3 10
make_dir l4 NVIDIA_L4 1
make_dir l4x10 NVIDIA_L4 10

for seed in 1 2 3; do
  for variant in base h100 h100x10 l4 l4x10; do
    model="$work/$variant.s$seed.dpcm"
    "$cli" costmodel train --all-rows --data "$work/$variant" --epochs 1 --unseen-epochs 10 --threads 2 \
      --seed "$seed" -o "$model" --force >/dev/null 2>&1
    for spec in NVIDIA_L4:L4 NVIDIA_H100_80GB_HBM3:H100-SXM5-80GB; do
      gpu="${spec#*:}"
      out="$work/$variant.s$seed.$gpu.csv"
      line="$("$cli" costmodel --model "$model" predict --device "$gpu" "$test_rows/${spec%%:*}.csv.gz" -o "$out" \
              --force 2>&1 | grep '^against the Latency column' || true)"
      echo "seed $seed $variant on $gpu: ${line#against the Latency column }"
    done
  done
done

echo
echo "## geometric mean of the three base models' predictions"
python3 - "$work" <<'EOF'
import csv, math, sys
work = sys.argv[1]
for gpu in ("L4", "H100-SXM5-80GB"):
    runs = [list(csv.DictReader(open(f"{work}/base.s{s}.{gpu}.csv"))) for s in (1, 2, 3)]
    errs = []
    for rows in zip(*runs):
        ens = math.exp(sum(math.log(float(r["predicted_ms"])) for r in rows) / 3)
        meas = float(rows[0]["Latency"])
        errs.append(abs(ens - meas) / meas)
    print(f"{gpu}: MAPE {100 * sum(errs) / len(errs):.1f} % ({len(errs)} rows)")
EOF
