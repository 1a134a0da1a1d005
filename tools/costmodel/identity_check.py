#!/usr/bin/env python3
"""Does a GPU's identity, learned from some op families only, help price its other families?

The shared data measure conv on an A100 80 GB PCIe and every other family on an A100 40 GB
PCIe, so the learned model knows the 80 GB card from conv alone, and prices its bmm, linear,
elementwise ... ops with its identity features open (the main network), not as an unseen GPU
(the unseen-GPU network). This checks that choice on V100, whose every family was measured:

  A: train on everything except V100's non-conv rows; price V100's non-conv rows
  B: train on everything except V100's conv rows; price V100's conv rows

each with V100's identity (the model knows V100 by name) and without it (V100-CLONE: V100's
figures under another name with one SM more, so that the model prices it neither as V100's
twin nor as its sibling (the same SM count and cores per SM): the unseen-GPU network prices it). Prints one JSON line per setup and pricing
with MAPE per family. Trains two models side by side (about 4 minutes on 2 cores).
Usage: tools/costmodel/identity_check.py [DATA] [BUILD_DIR] [WORK_DIR]
"""
import collections
import csv
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent.parent
data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else root / "../shared/data/neusight/train").resolve()
build = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else root / "build")
work = pathlib.Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/dpro-identity-check")
cli = str(build / "tools/dpro-replay/dpro-replay")
if not data.is_dir():
    sys.exit(f"{data}: no such data directory (the shared NeuSight data)")
work.mkdir(parents=True, exist_ok=True)

# Device files: the catalog plus a V100 under another name.
devices = work / "devices"
shutil.rmtree(devices, ignore_errors=True)
shutil.copytree(root / "configs/devices", devices)
v100 = json.loads((devices / "V100-PCIE-32GB.json").read_text())
v100.update(name="V100-CLONE", aliases=["V100 clone"], sms=v100["sms"] + 1)
(devices / "V100-CLONE.json").write_text(json.dumps(v100))
env = dict(os.environ, DPRO_DEVICE_DIR=str(devices))

def is_v100(path):
    return path.name.startswith("Tesla_V100")

# Training directories (symlinks) and the V100 rows to price (Device emptied: no kernel features).
setups = {"A": lambda family: family != "conv", "B": lambda family: family == "conv"}
jobs = {}
for name, held in setups.items():
    d = work / f"data{name}"
    shutil.rmtree(d, ignore_errors=True)
    rows, columns = [], set()
    for family_dir in sorted(p for p in data.iterdir() if p.is_dir()):
        (d / family_dir.name).mkdir(parents=True)
        for f in family_dir.iterdir():
            if is_v100(f) and held(family_dir.name):
                with gzip.open(f, "rt") as g:
                    for r in csv.DictReader(g):
                        r["Device"] = ""
                        r["family"] = family_dir.name
                        rows.append(r)
                        columns |= set(r)
            else:
                (d / family_dir.name / f.name).symlink_to(f)
    with open(work / f"v100_{name}.csv", "w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=sorted(columns))
        w.writeheader()
        w.writerows(rows)
    model = work / f"model{name}.dpcm"
    print(f"{name}: training on {d} (V100 rows held out: {len(rows)}) -> {model}", file=sys.stderr)
    jobs[name] = subprocess.Popen([cli, "costmodel", "train", "--all-rows", "--data", str(d), "-o", str(model)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
for name, job in jobs.items():
    _, err = job.communicate()
    if job.returncode != 0:
        sys.exit(f"training {name} failed: {err}")

for name in setups:
    for device, label in (("V100-PCIE-32GB", "with V100's identity"), ("V100-CLONE", "as an unseen GPU")):
        out = work / f"pred_{name}_{device}.csv"
        subprocess.run([cli, "costmodel", "--model", str(work / f"model{name}.dpcm"), "predict", "--device", device,
                        str(work / f"v100_{name}.csv"), "-o", str(out)], env=env, check=True,
                       stderr=subprocess.DEVNULL)
        per = collections.defaultdict(list)
        with open(out) as f:
            for r in csv.DictReader(f):
                m, p = float(r["Latency"]), float(r["predicted_ms"])
                per[r["family"]].append(abs(p - m) / m)
        every = [e for v in per.values() for e in v]
        print(json.dumps({"setup": name, "priced": label, "rows": len(every),
                          "mape_pct": round(100 * sum(every) / len(every), 1),
                          "per_family": {k: round(100 * sum(v) / len(v), 1) for k, v in sorted(per.items())}}))
