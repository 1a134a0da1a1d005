#!/usr/bin/env python3
"""What each GPU of the measured data sustains against its datasheet, and how well the other
GPUs' mean would predict it: the part of an unseen GPU's latency that no spec carries.

    python3 tools/costmodel/sustained.py [DATA_DIR]      (default ../shared/data/neusight/train)

Per GPU: the fraction of datasheet memory bandwidth the largest adds reach (bytes = 3 x B x H x
4, rows taking >= 0.3 ms), the fraction of fp32 peak the largest linears reach (2 x B x M x N x K
FLOPs, rows taking >= 5 ms), the floor (median latency of the fastest 10 % of adds); then, for
each, the error of predicting it by the mean of the other GPUs (what a model can at best do for
a held-out GPU when the quantity is not a function of the specs). Prints a Markdown table.

Then the host's share of the zero-shot error: each row's latency is max(floor, overhead +
kernel time), the floor (per GPU and op family, its fastest row) and the overhead (kernel_time.h:
the intercept of latency against bytes on the elementwise rows of >= 40 MB, the median over
families) belonging to the machine that measured it. With every held-out GPU's kernel times
known exactly (its latency less its own overhead) and only its floor and overhead taken from the
other GPUs (their median), the MAPE that remains is what no model of the GPU can remove
without a measurement of the host. A second Markdown table, per GPU: all rows, elementwise rows.
Then the power limit (a third Markdown table): the fp32 share of the largest linears (as in the
first table, of the one-datapath sustained peak where a spec gives one) beside each card's
power_limit_w, for the GPUs of DATA_DIR and those of data/costmodel/neusight-test (NeuSight's
test rows: L4, H100, A100 80GB) that DATA_DIR lacks.
Standard library only; device specs from configs/devices/*.json (matched by alias).
"""
import csv
import glob
import gzip
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_specs():
    specs = {}
    for path in glob.glob(os.path.join(ROOT, "configs", "devices", "*.json")):
        with open(path) as f:
            spec = json.load(f)
        for name in [spec["name"]] + spec.get("aliases", []):
            specs[name.lower()] = spec
    return specs


def rows_of(data, family):
    return rows_of_files(sorted(glob.glob(os.path.join(data, family, "*.csv*"))))


def rows_of_files(paths):
    for path in paths:
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
    bw, adds = {}, {}
    gemm = large_linear_tflops(rows_of(data, "linear"))
    for row in rows_of(data, "add"):
        device, ms = row["Device"], float(row["Latency"])
        adds.setdefault(device, []).append(ms)
        if ms >= 0.3:
            bytes_ = 3 * float(row["B"]) * float(row["H"]) * 4
            bw.setdefault(device, []).append(bytes_ / (ms * 1e-3) / 1e9)
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
    print()
    host_bound(data)
    print()
    power_table(gemm, specs)
    return 0


def large_linear_tflops(rows):
    """Device -> [TFLOP/s of each linear that took >= 5 ms] (the first table's large linears)."""
    out = {}
    for row in rows:
        ms = float(row["Latency"])
        if row.get("OPName", "linear") == "linear" and ms >= 5:
            flops = 2 * float(row["B"]) * float(row["M"]) * float(row["N"]) * float(row["K"])
            out.setdefault(row["Device"], []).append(flops / (ms * 1e-3) / 1e12)
    return out


def power_table(gemm, specs):
    """The third table (see the module doc): `gemm` is DATA_DIR's large_linear_tflops."""
    tflops = dict(gemm)
    test = sorted(glob.glob(os.path.join(ROOT, "data", "costmodel", "neusight-test", "*.csv*")))
    for device, values in large_linear_tflops(rows_of_files(test)).items():
        tflops.setdefault(device, values)
    print("| GPU | power limit | fp32 peak (sustained) | large linears | share of the sustained peak | rows |")
    print("|---|---:|---:|---:|---:|---:|")
    for g in sorted(tflops, key=lambda d: statistics.median(tflops[d]) / sustained_of(specs[d.lower()])):
        spec, median = specs[g.lower()], statistics.median(tflops[g])
        power = f"{spec['power_limit_w']:.0f} W" if "power_limit_w" in spec else "-"
        peak = f"{spec['peak_tflops']['fp32']:g}" + (f" ({spec['sustained_fp32_tflops']:g})" if "sustained_fp32_tflops" in spec else "")
        print(f"| {g} | {power} | {peak} | {median:.2f} TFLOP/s | {median / sustained_of(spec):.3f} | {len(tflops[g])} |")


def sustained_of(spec):
    return spec.get("sustained_fp32_tflops", spec["peak_tflops"]["fp32"])


ELEMENTWISE = ["add", "addu", "div", "divu", "mul", "mulu", "pow", "powu", "gelu", "relu", "tanh"]
BINARY = {"add", "div", "mul", "pow"}  # two inputs; the others (u = with a scalar, unary) one


def intercept(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return my - sxy / sxx * mx if sxx > 0 else my


def host_bound(data):
    """The second table (see the module doc)."""
    gpu_of = lambda device: device.replace("NVIDIA ", "").replace("Tesla ", "").split("-")[0].split("_")[0]
    rows = {}  # GPU -> [(family, latency ms)]
    floor = {}  # GPU -> family -> fastest ms
    large = {}  # GPU -> family -> [(bytes, ms)]
    for family in sorted(os.listdir(data)):
        for row in rows_of(data, family):
            g, ms = gpu_of(row["Device"]), float(row["Latency"])
            rows.setdefault(g, []).append((family, ms))
            floor.setdefault(g, {})[family] = min(floor.get(g, {}).get(family, ms), ms)
            if family in ELEMENTWISE:
                nbytes = (3 if family in BINARY else 2) * float(row["B"]) * float(row["H"]) * 4
                if nbytes >= 40e6:
                    large.setdefault(g, {}).setdefault(family, []).append((nbytes, ms))
    overhead = {g: statistics.median(max(0.0, intercept(p)) for p in fam.values() if len(p) >= 8)
                for g, fam in large.items()}
    gpus = sorted(g for g in rows if g in overhead)
    print("| GPU | its overhead | its floor (add) | others' overhead | MAPE, all rows | MAPE, elementwise rows |")
    print("|---|---:|---:|---:|---:|---:|")
    means = [[], []]
    for g in gpus:
        others = [h for h in gpus if h != g]
        c = statistics.median(overhead[h] for h in others)
        ape_all, ape_ew = [], []
        for family, ms in rows[g]:
            fl = statistics.median(floor[h][family] for h in others if family in floor[h])
            predicted = max(fl, c + max(0.0, ms - overhead[g]))
            ape_all.append(abs(predicted - ms) / ms)
            if family in ELEMENTWISE:
                ape_ew.append(abs(predicted - ms) / ms)
        a, e = 100 * statistics.mean(ape_all), 100 * statistics.mean(ape_ew)
        means[0].append(a)
        means[1].append(e)
        print(f"| {g} | {overhead[g] * 1e3:.1f} us | {floor[g]['add'] * 1e3:.1f} us | {c * 1e3:.1f} us "
              f"| {a:.1f} % | {e:.1f} % |")
    print(f"| **mean** | | | | **{statistics.mean(means[0]):.1f} %** | **{statistics.mean(means[1]):.1f} %** |")


if __name__ == "__main__":
    sys.exit(main())
