#!/usr/bin/env python3
"""A SIMULATED device profile (hw/device_profile.h) built from ops measured on one GPU, for scoring
`costmodel ... --device-profile` where no `dpro-exec calibrate` run of that GPU exists. Not a
calibrate run: each figure is the GPU time ("Kernel Time") of a measured row standing in for what
calibrate would have timed.

  gemms:   for each of calibrate's default shapes (executor/calibration.cpp default_gemm_shapes),
           the source's row nearest in log FLOPs (linear rows for batch-1 shapes, bmm rows for the
           batched one), written with that row's own shape (a linear B,M,N,K as m = B x M, n = N,
           k = K, batch 1: the same FLOPs and bytes; a bmm as batch = B) and its Kernel Time;
           fp32, math "default" (the rows ran fp32 with TF32 off);
  kernels: cast_fp32_bf16 from relu rows, cast_fp32_fp16 from mulu rows (unary fp32 streaming ops,
           8 bytes per element where a cast moves 6): for each of calibrate's kernel_elements
           (2^16, 2^20, 2^22, 2^24), the row nearest in bytes to 6 x elements, written as a cast of
           its bytes / 6 elements with its Kernel Time; each curve fitted as calibrate fits it
           (least squares; a negative intercept refitted through the origin);
  launch:  gpu_ns_per_launch = the smallest Kernel Time of the source's elementwise rows (an
           elementwise kernel of a few elements, the nearest the data has to an empty kernel);
           host_ns_per_launch 0 (not read by the roofline-share model).
Each row used is left out of the REST files written (the rows to score on), in the source and in
every other file given (by shape: OPName and dimension columns).

  simulated_profile.py SOURCE.csv PROFILE.json SOURCE_REST.csv [OTHER.csv OTHER_REST.csv]...
"""
import csv
import json
import math
import sys

DIMS = ["B", "H", "M", "N", "K", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"]
GEMM_SHAPES = [(1024, 1024, 1024, 1), (4096, 4096, 4096, 1), (8192, 8192, 8192, 1), (2304, 8192, 768, 1),
               (3072, 8192, 768, 1), (768, 8192, 3072, 1), (4096, 8192, 4096, 1), (11008, 8192, 4096, 1),
               (1024, 1024, 64, 96)]
KERNEL_ELEMENTS = [1 << 16, 1 << 20, 1 << 22, 1 << 24]
ELEMENTWISE = {"add", "mul", "div", "pow", "addu", "mulu", "divu", "powu", "gelu", "relu", "tanh"}


def key(r):
    return (r["OPName"],) + tuple(r.get(c, "") for c in DIMS)


def nearest(rows, value, target):
    return min(rows, key=lambda r: abs(math.log(value(r) / target)))


def fit_line(x, y):
    n = len(x)
    if len(set(x)) < 2:
        return sum(y) / n, 0.0
    mx, my = sum(x) / n, sum(y) / n
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    fixed = my - slope * mx
    if fixed < 0:
        fixed, slope = 0.0, sum(a * b for a, b in zip(x, y)) / sum(a * a for a in x)
    if slope < 0:
        fixed, slope = my, 0.0
    return fixed, slope


def main(argv):
    if len(argv) < 4 or len(argv) % 2:
        sys.exit(__doc__)
    source, profile_path, rest_path = argv[1:4]
    with open(source, newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    timed = [r for r in rows if r.get("Kernel Time")]
    if not timed:
        sys.exit(f"error: {source}: no row has a Kernel Time")
    used = {}
    gemms = []
    for m, n, k, batch in GEMM_SHAPES:
        family = "bmm" if batch > 1 else "linear"
        pool = [r for r in timed if r["OPName"] == family]
        flops = lambda r: 2.0 * int(r["B"]) * int(r["M"]) * int(r["N"]) * int(r["K"])
        r = nearest(pool, flops, 2.0 * m * n * k * batch)
        if key(r) in used:
            continue
        used[key(r)] = r
        b, rm, rn, rk = int(r["B"]), int(r["M"]), int(r["N"]), int(r["K"])
        ns = round(float(r["Kernel Time"]) * 1e6)
        shape = (b, rm, rn, rk) if family == "bmm" else (1, b * rm, rn, rk)
        gemms.append({"m": shape[1], "n": shape[2], "k": shape[3], "batch": shape[0], "dtype": "fp32",
                      "math": "default", "ns": ns, "tflops": 2.0 * shape[0] * shape[1] * shape[2] * shape[3] / ns / 1000})
    kernels = []
    for name, family in (("cast_fp32_bf16", "relu"), ("cast_fp32_fp16", "mulu")):
        pool = [r for r in timed if r["OPName"] == family]
        samples = []
        for e in KERNEL_ELEMENTS:
            r = nearest(pool, lambda r: 8.0 * int(r["B"]) * int(r["H"]), 6.0 * e)
            if key(r) in used:
                continue
            used[key(r)] = r
            samples.append({"elements": round(8 * int(r["B"]) * int(r["H"]) / 6),
                            "ns": round(float(r["Kernel Time"]) * 1e6)})
        fixed, slope = fit_line([s["elements"] for s in samples], [s["ns"] for s in samples])
        kernels.append({"kernel": name, "param": 0, "latency_ns": fixed, "ns_per_element": slope, "samples": samples})
    launch_ns = min(float(r["Kernel Time"]) for r in timed if r["OPName"] in ELEMENTWISE) * 1e6
    profile = {"format": "dpro-device-profile", "version": 1, "device": rows[0]["Device"],
               "date": "simulated from " + source.rsplit("/", 1)[-1] + ", not a calibrate run",
               "repetitions": 1, "warmup": 0,
               "launch": {"gpu_ns_per_launch": launch_ns, "host_ns_per_launch": 0, "launches": 1},
               "copies": [], "gemms": gemms, "kernels": kernels, "standin": []}
    with open(profile_path, "w") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")
    pairs = [(source, rest_path)] + [(argv[i], argv[i + 1]) for i in range(4, len(argv), 2)]
    for src, dst in pairs:
        with open(src, newline="") as f:
            reader = csv.DictReader(f)
            fields, all_rows = reader.fieldnames, list(reader)
        keep = [r for r in all_rows if key(r) not in used]
        with open(dst, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(keep)
        print(f"{dst}: {len(keep)} of {len(all_rows)} rows (the profile's {len(all_rows) - len(keep)} left out)",
              file=sys.stderr)
    print(f"{profile_path}: {len(gemms)} GEMMs, casts of {[len(k['samples']) for k in kernels]} points, "
          f"launch {launch_ns:.0f} ns (simulated from {source}'s Kernel Time)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
