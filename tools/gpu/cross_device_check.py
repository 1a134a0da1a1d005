#!/usr/bin/env python3
"""Predicted against measured kernel times on another GPU.

  cross_device_check.py PREDICTED_TIMELINE MEASURED_TRACE [--job NAME] [--by-type]

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

--by-type: the same sums per op type, the type dpro gives each kernel of the prediction (its
"op_type" arg: costmodel::kernel_types, docs/costmodel.md "Per op type"); this script only
groups. A unit whose predicted kernels are of several types splits its target-measured time
among them in proportion to their origin-measured time (the "mixed" figures say how much).
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
    ap.add_argument("--by-type", action="store_true", help="sums and errors per op type (the timeline's op_type args)")
    a = ap.parse_args()
    pred, meas = kernels(load(a.predicted)), kernels(load(a.measured))
    if len(pred) != len(meas):
        print(f"cross_device_check: GPU streams differ: {len(pred)} in {a.predicted}, {len(meas)} in {a.measured}",
              file=sys.stderr)
        sys.exit(2)
    if a.by_type and not any("op_type" in e.get("args", {}) for s in pred for e in s):
        print(f"cross_device_check: {a.predicted}: no kernel has an op_type arg (--by-type needs a timeline "
              "written by a dpro-replay that writes them)", file=sys.stderr)
        sys.exit(2)
    rows = []  # units: (origin measured us, predicted us, target measured us)
    unit_kernels = []  # per unit: its predicted kernels
    paired = 0
    for ps, ms in zip(pred, meas):
        matcher = difflib.SequenceMatcher(None, [e["name"] for e in ps], [e["name"] for e in ms], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                rows += [(p["args"]["measured_dur_us"], p["dur"], m["dur"]) for p, m in zip(ps[i1:i2], ms[j1:j2])]
                unit_kernels += [[p] for p in ps[i1:i2]]
                paired += i2 - i1
            else:
                rows.append((sum(p["args"]["measured_dur_us"] for p in ps[i1:i2]), sum(p["dur"] for p in ps[i1:i2]),
                             sum(m["dur"] for m in ms[j1:j2])))
                unit_kernels.append(ps[i1:i2])
    origin = sum(r[0] for r in rows)
    predicted = sum(r[1] for r in rows)
    target = sum(r[2] for r in rows)

    def errors(col):
        errs = [abs(r[col] - r[2]) / r[2] if r[2] > 0 else 1.0 for r in rows]
        weighted = sum(abs(r[col] - r[2]) for r in rows) / target
        return round(100 * statistics.median(errs), 2), round(100 * weighted, 2)

    pm, pw = errors(1)
    nm, nw = errors(0)
    out = {
        "job": a.job, "kernels_predicted": sum(map(len, pred)), "kernels_measured": sum(map(len, meas)),
        "kernels_paired_by_name": paired, "units": len(rows),
        "origin_measured_ms": round(origin / 1e3, 3), "predicted_ms": round(predicted / 1e3, 3),
        "target_measured_ms": round(target / 1e3, 3),
        "sum_error_pct": round(100 * (predicted - target) / target, 2),
        "unit_median_abs_error_pct": pm, "unit_time_weighted_abs_error_pct": pw,
        "no_change_sum_error_pct": round(100 * (origin - target) / target, 2),
        "no_change_unit_median_abs_error_pct": nm, "no_change_unit_time_weighted_abs_error_pct": nw}
    if a.by_type:
        out["by_type"], out["mixed_units"], out["mixed_target_ms"] = by_type(rows, unit_kernels)
    print(json.dumps(out))


def by_type(rows, unit_kernels):
    """Per op type: kernels, summed origin / predicted / target-measured ms and the errors of the
    prediction and of keeping the origin's times. A unit's predicted kernels bring their own
    origin and predicted times to their types; its target-measured time goes to its types in
    proportion to their origin-measured time (all to the first type when that is zero)."""
    sums = {}
    mixed_units, mixed_target = 0, 0.0
    for (origin, _, target), ks in zip(rows, unit_kernels):
        origin_of = {}
        for k in ks:
            t = k.get("args", {}).get("op_type", "untyped")
            s = sums.setdefault(t, [0, 0.0, 0.0, 0.0])
            s[0] += 1
            s[1] += k["args"]["measured_dur_us"]
            s[2] += k["dur"]
            origin_of[t] = origin_of.get(t, 0.0) + k["args"]["measured_dur_us"]
        if not ks:  # kernels of the target only: no type to give them
            sums.setdefault("unpaired", [0, 0.0, 0.0, 0.0])[3] += target
            continue
        if len(origin_of) > 1:
            mixed_units += 1
            mixed_target += target
        for t, o in origin_of.items():
            share = o / origin if origin > 0 else (1.0 if t == next(iter(origin_of)) else 0.0)
            sums[t][3] += target * share

    def pct(x, ref):
        return round(100 * (x - ref) / ref, 2) if ref > 0 else None

    total = sum(s[3] for s in sums.values())
    table = {}
    for t, (n, o, p, m) in sorted(sums.items(), key=lambda kv: -kv[1][3]):
        table[t] = {"kernels": n, "origin_measured_ms": round(o / 1e3, 3), "predicted_ms": round(p / 1e3, 3),
                    "target_measured_ms": round(m / 1e3, 3),
                    "share_of_target_pct": round(100 * m / total, 2) if total > 0 else None,
                    "sum_error_pct": pct(p, m) if n else None, "no_change_sum_error_pct": pct(o, m) if n else None}
    return table, mixed_units, round(mixed_target / 1e3, 3)


if __name__ == "__main__":
    main()
