#!/usr/bin/env python3
"""What each GPU of the measured data sustains against its datasheet, and how well the other
GPUs' mean would predict it: the part of an unseen GPU's latency that no spec carries.

    python3 tools/costmodel_sustained.py [DATA_DIR]      (default ../shared/data/neusight/train)

Per GPU: the fraction of datasheet memory bandwidth the largest adds reach (bytes = 3 x B x H x
4, rows taking >= 0.3 ms), the fraction of fp32 peak the largest linears reach (2 x B x M x N x K
FLOPs, rows taking >= 5 ms), the floor (median latency of the fastest 10 % of adds); then, for
each, the error of predicting it by the mean of the other GPUs (what a model can at best do for
a held-out GPU when the quantity is not a function of the specs). Prints a Markdown table.
Standard library only; device specs from configs/devices/*.json (matched by alias).
"""
import csv
import glob
import gzip
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_specs():
    specs = {}
    for path in glob.glob(os.path.join(ROOT, "configs", "devices", "*.json")):
        with open(path) as f:
            spec = json.load(f)
        for name in [spec["name"]] + spec.get("aliases", []):
            specs[name.lower()] = spec
    return specs


def rows_of(data, family):
    for path in sorted(glob.glob(os.path.join(data, family, "*.csv*"))):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", newline="") as f:
            for row in csv.DictReader(f):
                yield row


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "data", "neusight", "train")
    if not os.path.isdir(data):
        sys.stderr.write(f"costmodel_sustained: {data}: not a directory of measured op latencies\n")
        return 2
    specs = load_specs()
    bw, gemm, adds = {}, {}, {}
    for row in rows_of(data, "add"):
        device, ms = row["Device"], float(row["Latency"])
        adds.setdefault(device, []).append(ms)
        if ms >= 0.3:
            bytes_ = 3 * float(row["B"]) * float(row["H"]) * 4
            bw.setdefault(device, []).append(bytes_ / (ms * 1e-3) / 1e9)
    for row in rows_of(data, "linear"):
        ms = float(row["Latency"])
        if ms >= 5:
            flops = 2 * float(row["B"]) * float(row["M"]) * float(row["N"]) * float(row["K"])
            gemm.setdefault(row["Device"], []).append(flops / (ms * 1e-3) / 1e12)
    gpus = sorted(set(bw) & set(gemm) & set(adds))
    if len(gpus) < 2:
        sys.stderr.write(f"costmodel_sustained: {data}: needs add and linear rows of at least two GPUs\n")
        return 2
    missing = [g for g in gpus if g.lower() not in specs]
    if missing:
        sys.stderr.write(f"costmodel_sustained: no device spec for {', '.join(missing)} in configs/devices\n")
        return 2
    bw_frac = {g: statistics.median(bw[g]) / specs[g.lower()]["memory_bandwidth_gbs"] for g in gpus}
    gemm_frac = {g: statistics.median(gemm[g]) / specs[g.lower()]["peak_tflops"]["fp32"] for g in gpus}
    floor = {}
    for g in gpus:
        fastest = sorted(adds[g])[: max(1, len(adds[g]) // 10)]
        floor[g] = statistics.median(fastest) * 1000

    def off(values, g):
        others = statistics.mean(v for k, v in values.items() if k != g)
        return 100 * abs(others / values[g] - 1)

    print("| GPU | bandwidth reached (large adds) | off if the others' mean | fp32 peak reached (large linears) "
          "| off if the others' mean | floor (fastest adds) | off if the others' mean |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for g in gpus:
        print(f"| {g} | {bw_frac[g]:.3f} | {off(bw_frac, g):.1f} % | {gemm_frac[g]:.3f} | {off(gemm_frac, g):.1f} % "
              f"| {floor[g]:.1f} us | {off(floor, g):.1f} % |")
    mean = lambda values: statistics.mean(off(values, g) for g in gpus)
    print(f"| **mean** | | **{mean(bw_frac):.1f} %** | | **{mean(gemm_frac):.1f} %** | | **{mean(floor):.1f} %** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
