#!/usr/bin/env bash
# tools/gpu/cross_device_check.py on the committed GPT-2 captures of an H100 and an H200: the
# gpt2 row of docs/gpu-validation.md ("Another GPU") rebuilt from the repository. Fails when the
# H100 capture's --device H200-SXM-141GB prediction of the summed kernel time moves 5 % or more
# from what the H200 measured, when the per-unit median error is no better than keeping the
# H100's times, when most kernels no longer pair by name, or when the script takes a missing
# file for anything but exit code 2. Usage: cross_device_check.sh DPRO_REPLAY (repo root).
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" replay -q traces/h100/gpt2-emit-nvtx-step --device H200-SXM-141GB --timeline "$tmp/pred.json"
"$bin" convert -q traces/h200/gpt2-emit-nvtx-step/*.dpro.gz -o "$tmp/h200.json.gz"
out=$(python3 tools/gpu/cross_device_check.py "$tmp/pred.json" "$tmp/h200.json.gz" --job gpt2 --by-type)
echo "$out"
python3 - "$out" <<'PYEOF'
import json, sys
d = json.loads(sys.argv[1])
assert d["kernels_paired_by_name"] > 0.9 * d["kernels_measured"], "kernels no longer pair by name"
assert abs(d["sum_error_pct"]) < 5, f"summed kernel time off by {d['sum_error_pct']} %"
assert d["unit_median_abs_error_pct"] < d["no_change_unit_median_abs_error_pct"], "no better than unchanged times"
t = d["by_type"]  # every kernel typed by dpro (op_type), the types' sums the whole
assert "untyped" not in t and {"gemm", "elementwise", "norm", "softmax"} <= set(t), sorted(t)
assert abs(sum(v["target_measured_ms"] for v in t.values()) - d["target_measured_ms"]) < 0.01, t
PYEOF
rc=0
python3 tools/gpu/cross_device_check.py "$tmp/missing.json" "$tmp/h200.json.gz" 2> "$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "missing.json" "$tmp/err" || { echo "missing file: exit $rc, $(cat "$tmp/err")"; exit 1; }
echo "cross_device_check: ok"
