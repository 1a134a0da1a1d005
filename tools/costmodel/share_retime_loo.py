#!/usr/bin/env python3
"""Table (d) of docs/costmodel.md ("a trace kernel re-timed from another GPU to the held-out GPU,
0 samples") for the roofline-share model: each of NeuSight's five training GPUs held out in turn,
the share table fitted on the other four (and any extra --data paths given), every row of the
held-out GPU predicted from each other GPU's measurement of the same op as `replay --device
--pricer roofline-share` does (origin kernel x kernel_ms(target) / kernel_ms(origin)). Kernel time
= latency less the GPU's measurement overhead (kernel_time.h, the same reference as table (d));
pairs with 15 us of kernel or more on both sides. Prints one Markdown row per held-out GPU: pairs,
MAPE %, per family.

  tools/costmodel/share_retime_loo.py TRAIN_DIR DPRO_REPLAY WORK_DIR [EXTRA_DATA...]
  e.g. python3 tools/costmodel/share_retime_loo.py ../shared/data/neusight/train \
           build/tools/dpro-replay/dpro-replay /tmp/loo    (about a minute)"""
import collections
import csv
import glob
import gzip
import json
import os
import subprocess
import sys

if len(sys.argv) < 4:
    sys.exit(__doc__)
train, cli, work = sys.argv[1], sys.argv[2], sys.argv[3]
extra = sys.argv[4:]  # more --data paths for the fold tables (e.g. our H100/H200 runs)
GPUS = {"NVIDIA_A100-PCIE-40GB": "A100-PCIE-40GB", "Tesla_P100-PCIE-16GB": "P100-PCIE-16GB", "Tesla_P4": "P4",
        "Tesla_T4": "T4", "Tesla_V100-PCIE-32GB": "V100-PCIE-32GB"}
DIMS = ["B", "H", "M", "N", "K", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"]
os.makedirs(work, exist_ok=True)
rows = collections.defaultdict(list)
for fam in sorted(os.listdir(train)):
    for path in glob.glob(f"{train}/{fam}/*.csv.gz"):
        g = os.path.basename(path).removesuffix(".csv.gz")
        if g not in GPUS: continue
        for r in csv.DictReader(gzip.open(path, "rt")):
            rows[g].append(r)
keys = ["OPName", "Latency", "Device", "Kernel Name", "Grid x", "Grid y", "Grid z"] + DIMS
for g, rs in rows.items():
    with open(f"{work}/{g}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore"); w.writeheader(); w.writerows(rs)
full = f"{work}/all.json"
subprocess.run([cli, "costmodel", "fit-shares", "--data", train, "-o", full, "--force"], check=True, stderr=subprocess.DEVNULL)
ovh = {k: v["host_overhead_ms"] for k, v in json.load(open(full))["training_gpus"].items()}
def predict(table, g, dev):
    out = f"{work}/pred-{os.path.basename(table)}-{g}-{dev}.csv"
    subprocess.run([cli, "costmodel", "predict", "--pricer", "roofline-share", "--kernel-column", "--shares", table,
                    "--device", dev, f"{work}/{g}.csv", "-o", out, "--force"], check=True, stderr=subprocess.DEVNULL)
    return {tuple(r[k] for k in ["OPName"] + DIMS): float(r["predicted_kernel_ms"]) if r["predicted_kernel_ms"] else None
            for r in csv.DictReader(open(out))}
def key(r): return tuple(r.get(k, "") or "" for k in ["OPName"] + DIMS)
means = []
print("| held-out GPU | pairs | MAPE % | per family |\n|---|---:|---:|---|")
for held, dev in GPUS.items():
    table = f"{work}/without-{held}.json"
    for fam in sorted(os.listdir(train)):
        os.makedirs(f"{work}/fold-{held}/{fam}", exist_ok=True)
        for path in glob.glob(f"{train}/{fam}/*.csv.gz"):
            g = os.path.basename(path).removesuffix(".csv.gz")
            link = f"{work}/fold-{held}/{fam}/{g}.csv.gz"
            if g != held and not os.path.exists(link): os.symlink(os.path.abspath(path), link)
    cmd = [cli, "costmodel", "fit-shares", "--data", f"{work}/fold-{held}", "-o", table, "--force"]
    for e in extra: cmd += ["--data", e]
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    target = {key(r): float(r["Latency"]) - ovh[dev] for r in rows[held]}
    on_target = predict(table, held, dev)
    apes = []
    fams = collections.defaultdict(list)
    for og, odev in GPUS.items():
        if og == held: continue
        on_origin_target = predict(table, og, dev)   # the origin's ops priced on the held-out GPU
        on_origin = predict(table, og, odev)
        for r in rows[og]:
            k = key(r)
            if k not in target: continue
            kt, ko = target[k], float(r["Latency"]) - ovh[odev]
            if kt < 0.015 or ko < 0.015: continue
            t, o = on_origin_target.get(k), on_origin.get(k)
            if not t or not o: continue
            p = ko * t / o
            apes.append(abs(p - kt) / kt); fams[r["OPName"]].append(abs(p - kt) / kt)
    means.append(sum(apes) / len(apes))
    print(f"| {dev} | {len(apes)} | {100 * sum(apes) / len(apes):.1f} | " +
          ", ".join(f"{f} {100 * sum(v) / len(v):.0f}" for f, v in sorted(fams.items())) + " |", flush=True)
print(f"mean of the GPUs: {100 * sum(means) / len(means):.1f} %")
