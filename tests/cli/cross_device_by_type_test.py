#!/usr/bin/env python3
"""tools/gpu/cross_device_check.py --by-type on two small hand-written timelines: per-type sums,
a unit of differing kernels whose types differ split by the origin's time, target-only kernels
counted as "unpaired", and a timeline without op_type args refused with exit code 2."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "gpu", "cross_device_check.py")


def kernel(name, ts, dur, measured=None, op_type=None):
    args = {}
    if measured is not None:
        args["measured_dur_us"] = measured
    if op_type is not None:
        args["op_type"] = op_type
    return {"ph": "X", "pid": 0, "tid": 1, "ts": ts, "dur": dur, "name": name, "cat": "kernel", "args": args}


def run(tmp, pred, meas, *extra):
    p, m = os.path.join(tmp, "p.json"), os.path.join(tmp, "m.json")
    json.dump({"traceEvents": pred}, open(p, "w"))
    json.dump({"traceEvents": meas}, open(m, "w"))
    return subprocess.run([sys.executable, SCRIPT, p, m, *extra], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # Predicted (origin measured in args): gemm A, then a run the target replaced (gemm B 30 us
        # and add C 10 us at origin), then add D. The target ran A, E (for B, C: 60 us), D, and F.
        pred = [kernel("A", 0, 90, 100, "gemm"), kernel("B", 100, 25, 30, "gemm"), kernel("C", 200, 8, 10, "elementwise"),
                kernel("D", 300, 18, 20, "elementwise")]
        meas = [kernel("A", 0, 80), kernel("E", 100, 60), kernel("D", 300, 16), kernel("F", 400, 4)]
        r = run(tmp, pred, meas, "--by-type", "--job", "t")
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        t = d["by_type"]
        assert d["mixed_units"] == 1 and d["mixed_target_ms"] == 0.06, d
        # gemm: origin 100 + 30, predicted 90 + 25, target 80 + 60 x 30/40 = 125.
        assert t["gemm"]["kernels"] == 2 and t["gemm"]["origin_measured_ms"] == 0.13, t
        assert t["gemm"]["predicted_ms"] == 0.115 and t["gemm"]["target_measured_ms"] == 0.125, t
        assert t["gemm"]["sum_error_pct"] == -8.0 and t["gemm"]["no_change_sum_error_pct"] == 4.0, t
        # elementwise: origin 10 + 20, predicted 8 + 18, target 60 x 10/40 + 16 = 31.
        assert t["elementwise"]["target_measured_ms"] == 0.031 and t["elementwise"]["predicted_ms"] == 0.026, t
        # F ran on the target only: no type to give it.
        assert t["unpaired"]["kernels"] == 0 and t["unpaired"]["target_measured_ms"] == 0.004, t
        assert t["unpaired"]["sum_error_pct"] is None, t  # nothing predicted for it: no error to give
        assert abs(sum(v["target_measured_ms"] for v in t.values()) - d["target_measured_ms"]) < 1e-9, d
        # Without --by-type: no by_type key (the output the docs' earlier tables came from).
        r = run(tmp, pred, meas)
        assert r.returncode == 0 and "by_type" not in json.loads(r.stdout), r.stdout
        # A timeline from a dpro-replay that wrote no op_type: one line, exit 2.
        untyped = [dict(k, args={"measured_dur_us": k["args"]["measured_dur_us"]}) for k in pred]
        r = run(tmp, untyped, meas, "--by-type")
        assert r.returncode == 2 and "op_type" in r.stderr and r.stderr.count("\n") == 1, (r.returncode, r.stderr)
    print("cross_device_check --by-type: ok")


if __name__ == "__main__":
    main()
