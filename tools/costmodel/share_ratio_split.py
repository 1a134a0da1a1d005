#!/usr/bin/env python3
"""Where `--pricer roofline-share` misses fp32 bmm between an H100 and an H200 (docs/costmodel.md,
"`--pricer roofline-share`"): the ratio kernel_ms(target) / kernel_ms(origin) of the shipped share
table, recomputed here for bmm (roofline_share.cpp's kernel_ms: roofline over the share of the
nearest intensity curve, kernel floor; no GEMM waves, no device scalars, as shipped), and its MAPE
against the measured kernel times of data/costmodel/measured-2026-11-23 split by whether the op's
intensity bucket (log10 intensity over the GPU's ridge point, rounded to the table's width) is the
same on both GPUs, and within those by memory- or compute-bound on the origin. Its overall MAPE
must equal `costmodel retime --pricer roofline-share`'s bmm row (8.5 and 10.2): that checks this
copy of the formula.

Usage: tools/costmodel/share_ratio_split.py   (from the repository root; seconds)
"""
import csv
import gzip
import json
import math
import os
import statistics as st

TABLE = json.load(open("data/costmodel/shares.json"))
DATA = "data/costmodel/measured-2026-11-23"
# fp32 rate (TFLOP/s) and bandwidth (GB/s) of configs/devices/{H100-SXM5-80GB,H200-SXM-141GB}.json
DEVICES = {"h100": (67.0e12, 3350e9), "h200": (67.0e12, 4800e9)}


def bmm_kernel_ms(dims, device):
    """The share table's kernel time of an fp32 bmm (B, M, N, K), and its intensity bucket."""
    rate, bandwidth = DEVICES[device]
    b, m, n, k = dims
    flops = 2.0 * b * m * n * k
    moved = 4.0 * (b * m * k + b * k * n + b * m * n)
    roofline = max(flops / rate, moved / bandwidth) * 1e3
    relative = max(-2.0, min(2.0, math.log10((flops / moved) / (rate / bandwidth))))
    width = TABLE["intensity_width_decades"]
    key = round(relative / width)
    curves = {int(round(c["intensity_log10"] / width)): c for c in TABLE["families"]["bmm"]["curves"]}
    bucket = min(curves, key=lambda c: (abs(c - key), c))  # the nearest, the lower on a tie
    curve = curves[bucket]
    x = math.log10(roofline * 1e3) / TABLE["bucket_width_decades"] - curve["first_bucket_log10_us"] / TABLE["bucket_width_decades"]
    logs = [math.log10(s) for s in curve["share"]]
    if not x > 0:
        y = logs[0]
    elif x >= len(logs) - 1:
        y = logs[-1]
    else:
        i = int(x)
        y = logs[i] * (1 - (x - i)) + logs[i + 1] * (x - i)
    return max(TABLE["families"]["bmm"]["kernel_floor_ms"], roofline / min(1.0, 10 ** y)), bucket, relative


def kernel_times(run):
    out = {}
    folder = f"{DATA}/{run}/bmm/"
    for name in os.listdir(folder):
        for r in csv.DictReader(gzip.open(folder + name, "rt")):
            if r["Kernel Time"]:
                out[tuple(int(r[c]) for c in "BMNK")] = float(r["Kernel Time"])
    return out


def main():
    runs = {"h100": kernel_times("h100-rerun"), "h200": kernel_times("h200-rerun")}
    for origin, target in (("h100", "h200"), ("h200", "h100")):
        parts = {"same bucket, memory-bound": [], "same bucket, compute-bound": [], "other bucket": []}
        for dims, measured_origin in runs[origin].items():
            if dims not in runs[target]:
                continue
            o, o_bucket, relative = bmm_kernel_ms(dims, origin)
            t, t_bucket, _ = bmm_kernel_ms(dims, target)
            error = abs(measured_origin * t / o - runs[target][dims]) / runs[target][dims]
            part = "other bucket" if o_bucket != t_bucket else (
                "same bucket, memory-bound" if relative < 0 else "same bucket, compute-bound")
            parts[part].append((error, t / o))
        every = [e for v in parts.values() for e, _ in v]
        print(f"{origin} -> {target}: bmm {len(every)} rows, MAPE {100 * st.mean(every):.1f} %")
        for name, v in parts.items():
            print(f"  {name}: {len(v)} rows, MAPE {100 * st.mean(e for e, _ in v):.1f} %, "
                  f"median ratio {st.median(r for _, r in v):.3f}")


if __name__ == "__main__":
    main()
