#!/usr/bin/env bash
# The roofline-share model's device scalars from a device profile (`--device-profile`;
# src/costmodel/share_profile.h), scored on our H100 runs (data/costmodel/measured-2026-11-23).
# No `dpro-exec calibrate` output of a real GPU is in the repository, so the profile is SIMULATED
# from the h100-rerun rows' Kernel Time (tools/costmodel/simulated_profile.py says exactly how);
# the rows it used are left out of both files scored. Per file: the few-shot table's command
# (`costmodel few-shot-shares`, the MAPE of the rows not drawn) with the profile alone (-n 0),
# with 50 drawn samples alone and with both (5 seeds); then `predict` without and with the profile,
# scored against the Latency and the Kernel Time columns.
#
#   tools/costmodel/share_profile_eval.sh [BUILD_DIR]      (default: build; about 3 minutes on 2 cores)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
cli="${cli:-$build/tools/dpro-replay/dpro-replay}"
[ -x "$cli" ] || cli="$build/tests/costmodel/dpro-costmodel"
[ -x "$cli" ] || { echo "error: neither dpro-replay nor dpro-costmodel is built in $build" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

data="$root/data/costmodel/measured-2026-11-23"
for run in h100 h100-rerun; do python3 "$root/tools/gpu/merge_ops.py" "$data/$run" "$work/$run.csv"; done
python3 "$root/tools/costmodel/simulated_profile.py" "$work/h100-rerun.csv" "$work/profile.json" \
  "$work/h100-rerun-rest.csv" "$work/h100.csv" "$work/h100-rest.csv" 2>&1 | sed "s|$work/||g"
gpu=H100-SXM5-80GB
for f in h100-rerun-rest h100-rest; do
  echo "## $f"
  "$cli" costmodel few-shot-shares --device $gpu -n 0 --seeds 1 --device-profile "$work/profile.json" "$work/$f.csv" \
    2>/dev/null | grep -E '^few-shot|^[0-9]+ rows' | sed "s|$work/||g; s/^/profile alone: /"
  "$cli" costmodel few-shot-shares --device $gpu -n 50 "$work/$f.csv" 2>/dev/null | grep '^few-shot' | sed 's/^/50 samples: /'
  "$cli" costmodel few-shot-shares --device $gpu -n 50 --device-profile "$work/profile.json" "$work/$f.csv" 2>/dev/null |
    grep '^few-shot' | sed 's/^/50 samples + profile: /'
  for with in "" "--device-profile $work/profile.json"; do
    if [ -n "$with" ]; then echo "predict with the profile:"; else echo "predict without a profile:"; fi
    # shellcheck disable=SC2086
    "$cli" costmodel predict --pricer roofline-share --device $gpu $with "$work/$f.csv" -o "$work/out.csv" --force 2>&1 |
      grep -E '^against|profile.json: (host|GEMM|elementwise|linear|bmm|relu|kernel floors)' | sed "s|$work/||g"
  done
  echo
done
