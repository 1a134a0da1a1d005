#!/usr/bin/env python3
"""Predicted against measured kernel times on another GPU.

  cross_device_check.py PREDICTED_TIMELINE MEASURED_TRACE [--job NAME]

PREDICTED_TIMELINE: `dpro-replay replay CAPTURE --device GPU --timeline F` on a capture
recorded on one GPU (each kernel's predicted duration, and its measured one in
args.measured_dur_us). MEASURED_TRACE: a capture of the same job, same steps, recorded on GPU
and converted with `dpro-replay convert`. Kernels are paired in start order per stream, by
their names (difflib's longest matching blocks): where the libraries chose other kernels on the
target GPU (cuBLAS picks other GEMM tiles on an H200 than on an H100), the differing run of
kernels on each side is one unit, compared by its summed time. Prints one JSON line: kernels,
units, summed kernel time (origin measured, predicted, target measured) and the error of the
prediction, per-unit absolute error (median, and weighted by measured time), and the same for
"no change" (the origin's times taken as the target's), the baseline a what-if has to beat.
"""
import argparse
import difflib
import gzip
import json
import statistics
import sys


def load(path):
    try:
        with (gzip.open(path) if path.endswith(".gz") else open(path)) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cross_device_check: {path}: not a readable Chrome-trace JSON ({e})", file=sys.stderr)
        sys.exit(2)
    events = d.get("traceEvents") if isinstance(d, dict) else d
    if not isinstance(events, list):
        print(f"cross_device_check: {path}: no traceEvents list", file=sys.stderr)
        sys.exit(2)
    # dpro-replay's timeline of a what-if holds the baseline and the what-if side by side, view v's
    # processes at pid v x 2^21 + rank (src/replayer/timeline.h): the last view is the prediction.
    views = [e["pid"] >> 21 for e in events if isinstance(e, dict) and isinstance(e.get("pid"), int) and e["pid"] >= 0]
    if views and max(views) > 0:
        last = max(views)
        events = [e for e in events if isinstance(e, dict) and isinstance(e.get("pid"), int) and e["pid"] >> 21 == last]
    return events


def kernels(events):
    by_stream = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            by_stream.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    return [sorted(v, key=lambda e: e["ts"]) for _, v in sorted(by_stream.items(), key=lambda kv: -len(kv[1]))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("predicted")
    ap.add_argument("measured")
    ap.add_argument("--job", default="")
    a = ap.parse_args()
    pred, meas = kernels(load(a.predicted)), kernels(load(a.measured))
    if len(pred) != len(meas):
        print(f"cross_device_check: GPU streams differ: {len(pred)} in {a.predicted}, {len(meas)} in {a.measured}",
              file=sys.stderr)
        sys.exit(2)
    rows = []  # units: (origin measured us, predicted us, target measured us)
    paired = 0
    for ps, ms in zip(pred, meas):
        matcher = difflib.SequenceMatcher(None, [e["name"] for e in ps], [e["name"] for e in ms], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                rows += [(p["args"]["measured_dur_us"], p["dur"], m["dur"]) for p, m in zip(ps[i1:i2], ms[j1:j2])]
                paired += i2 - i1
            else:
                rows.append((sum(p["args"]["measured_dur_us"] for p in ps[i1:i2]), sum(p["dur"] for p in ps[i1:i2]),
                             sum(m["dur"] for m in ms[j1:j2])))
    origin = sum(r[0] for r in rows)
    predicted = sum(r[1] for r in rows)
    target = sum(r[2] for r in rows)

    def errors(col):
        errs = [abs(r[col] - r[2]) / r[2] if r[2] > 0 else 1.0 for r in rows]
        weighted = sum(abs(r[col] - r[2]) for r in rows) / target
        return round(100 * statistics.median(errs), 2), round(100 * weighted, 2)

    pm, pw = errors(1)
    nm, nw = errors(0)
    print(json.dumps({
        "job": a.job, "kernels_predicted": sum(map(len, pred)), "kernels_measured": sum(map(len, meas)),
        "kernels_paired_by_name": paired, "units": len(rows),
        "origin_measured_ms": round(origin / 1e3, 3), "predicted_ms": round(predicted / 1e3, 3),
        "target_measured_ms": round(target / 1e3, 3),
        "sum_error_pct": round(100 * (predicted - target) / target, 2),
        "unit_median_abs_error_pct": pm, "unit_time_weighted_abs_error_pct": pw,
        "no_change_sum_error_pct": round(100 * (origin - target) / target, 2),
        "no_change_unit_median_abs_error_pct": nm, "no_change_unit_time_weighted_abs_error_pct": nw}))


if __name__ == "__main__":
    main()
