#!/usr/bin/env python3
"""Per-op-type kernel time, H100 <-> H200, on the four jobs recorded on both (the whole-model view
of docs/costmodel.md, "Per op type"). For each job and direction, and each pricer (the default and
roofline-share):

  dpro-replay replay -q traces/ORIGIN/JOB-emit-nvtx-step --device TARGET [--pricer roofline-share] --timeline P.json
  dpro-replay convert -q traces/TARGET/JOB-emit-nvtx-step/*.dpro.gz -o M.json.gz
  python3 tools/gpu/cross_device_check.py P.json M.json.gz --job JOB --by-type

and prints one Markdown table: per job, direction and op type (dpro's op_type of each kernel) with
at least --min-share % of the target's summed kernel time, that share and the summed-time error of
each pricer and of keeping the origin's times; then per job and direction the share of the
target's kernel time in kernels it alone ran ("unpaired": no type, no prediction), and the cells
within 5 %. Then a JSON line per run. Runs in about a minute.

With --device-samples TARGET=F.csv (per target, TARGET h100 or h200, repeatable) a third pricer,
"roofline-share + samples", is run as well: roofline-share with `--device-samples F.csv`, the
target's share scalars fitted on F's ops (ops measured on the target; the runs of a target without
a file are skipped for it) and applied to the target's side of the ratio; its column comes after
roofline-share's. With both files a fourth, "+ origin samples": the same with `--origin-samples` of
the origin's file as well (both sides of the ratio fitted, each on its own GPU's samples).

Usage: tools/dev/cross_device_types.py [--bin build/tools/dpro-replay/dpro-replay] [--min-share 1]
                                       [--device-samples h200=F.csv --device-samples h100=G.csv]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOBS = ["gpt2", "resnet50", "resnet50-bf16", "bert-ddp"]
PAIRS = [("h100", "h200"), ("h200", "h100")]
PRICERS = [("default", []), ("roofline-share", ["--pricer", "roofline-share"])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "build/tools/dpro-replay/dpro-replay"))
    ap.add_argument("--min-share", type=float, default=1.0)
    ap.add_argument("--device-samples", action="append", default=[], metavar="TARGET=F.csv",
                    help="ops measured on TARGET (h100 or h200): adds the pricer 'roofline-share + samples'")
    a = ap.parse_args()
    samples = {}
    for spec in a.device_samples:
        target, sep, path = spec.partition("=")
        if not sep or target not in {t for _, t in PAIRS} or not Path(path).is_file():
            sys.exit(f"cross_device_types.py: --device-samples {spec}: expected h100=FILE or h200=FILE of an existing file")
        samples[target] = str(Path(path).resolve())
    pricers = list(PRICERS)
    if samples:
        pricers.append(("roofline-share + samples", ["--pricer", "roofline-share"]))
    if len(samples) == 2:
        pricers.append(("+ origin samples", ["--pricer", "roofline-share"]))
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for job in JOBS:
            for origin, target in PAIRS:
                measured = Path(tmp) / "m.json.gz"
                captures = sorted((ROOT / "traces" / target / f"{job}-emit-nvtx-step").glob("*.dpro.gz"))
                subprocess.run([a.bin, "convert", "-q", *map(str, captures), "-o", str(measured), "--force"], check=True)
                for pricer, flags in pricers:
                    if pricer == "roofline-share + samples":
                        if target not in samples:
                            continue
                        flags = flags + ["--device-samples", samples[target]]
                    if pricer == "+ origin samples":
                        flags = flags + ["--device-samples", samples[target], "--origin-samples", samples[origin]]
                    predicted = Path(tmp) / "p.json"
                    subprocess.run([a.bin, "replay", "-q", str(ROOT / "traces" / origin / f"{job}-emit-nvtx-step"),
                                    "--device", target, *flags, "--timeline", str(predicted), "--force"], check=True)
                    out = subprocess.run([sys.executable, str(ROOT / "tools/gpu/cross_device_check.py"), str(predicted),
                                          str(measured), "--job", job, "--by-type"],
                                         check=True, capture_output=True, text=True).stdout
                    runs.append({"origin": origin, "target": target, "pricer": pricer, **json.loads(out)})
    sampled_pricers = [p for p, _ in pricers[len(PRICERS):]]
    print("| job | origin -> target | op type | share of target kernel time | summed time error: default "
          "| roofline-share |" + "".join(f" {p} |" for p in sampled_pricers) + " keep origin |")
    print("|---|---|---|---:|---:|---:|" + "---:|" * len(sampled_pricers) + "---:|")
    for job in JOBS:
        for origin, target in PAIRS:
            by = {r["pricer"]: r for r in runs if r["job"] == job and r["origin"] == origin}
            d, s = by["default"], by["roofline-share"]
            for t, v in d["by_type"].items():
                if v["share_of_target_pct"] < a.min_share or t == "unpaired":
                    continue
                sv = s["by_type"][t]

                def cell(x):
                    return "n/a" if x is None else f"{x:+.1f} %"

                sampled = ""
                for p in sampled_pricers:
                    w = by.get(p)
                    sampled += f" {cell(w['by_type'][t]['sum_error_pct']) if w else 'n/a'} |"
                print(f"| {job} | {origin} -> {target} | {t} | {v['share_of_target_pct']:.1f} % | "
                      f"{cell(v['sum_error_pct'])} | {cell(sv['sum_error_pct'])} |{sampled} "
                      f"{cell(v['no_change_sum_error_pct'])} |")
    print()
    for job in JOBS:
        for origin, target in PAIRS:
            d = next(r for r in runs if r["job"] == job and r["origin"] == origin and r["pricer"] == "default")
            u = d["by_type"].get("unpaired", {}).get("share_of_target_pct", 0.0)
            print(f"{job} {origin} -> {target}: unpaired {u:.1f} % of the target's kernel time")
    for pricer, _ in pricers + [("keep origin", [])]:
        key = "no_change_sum_error_pct" if pricer == "keep origin" else "sum_error_pct"
        cells = [(v[key], v["target_measured_ms"]) for r in runs
                 if r["pricer"] == (pricer if pricer != "keep origin" else "default")
                 for t, v in r["by_type"].items() if t != "unpaired" and v["share_of_target_pct"] >= a.min_share]
        within = sum(ms for e, ms in cells if abs(e) <= 5) / sum(ms for _, ms in cells)
        print(f"{pricer}: {sum(abs(e) <= 5 for e, _ in cells)} of {len(cells)} cells within 5 % "
              f"({100 * within:.1f} % of the cells' target kernel time)")
    for r in runs:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
