#!/usr/bin/env python3
"""Step-time predictions checked against another measured run, on the project's own captures.

Two sets of pairs, each run in both directions:
  * another GPU: the same job recorded on an H100 (traces/h100/JOB-emit-nvtx-step) and on an H200
    (traces/h200/JOB-emit-nvtx-step); `dpro-replay replay --device OTHER` on one capture predicts
    the other's steps;
  * the same GPU, another run (held out): traces/h100/JOB-emit-nvtx-step vs traces/h100/JOB, two
    runs of the same job on H100 machines; the prediction is the origin's replay (no --device).
Each side's step time is the median over its steps, leaving out ProfilerStep#0 (warm-up) and the
emit_nvtx step of either capture (the like-step lender the device what-if names; its host time is
emit_nvtx's, not the job's). Beside it, the keep-the-origin baseline: the origin's own median step.

With --host-speed, each prediction also gets `--set host.cpu_speed=X`, X measured by
`dpro-replay host-speed ORIGIN TARGET` (the hosts of two runs differ).

Usage: tools/dev/cross_device_steps.py [--bin build/tools/dpro-replay/dpro-replay] [--host-speed]
Prints a Markdown table per set and a JSON line per row.
"""
import argparse
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOBS = ["bert-ddp", "gpt2", "resnet50", "resnet50-bf16"]
GPUS = {"h100": "H100-SXM5-80GB", "h200": "H200-SXM-141GB"}


def run_json(binary, args):
    return json.loads(subprocess.run([binary] + args, check=True, capture_output=True, text=True).stdout)


def steps(iterations, key, skip):
    return [it["job"][key] for it in iterations
            if not it["whole_trace"] and it["name"] != "ProfilerStep#0" and it["name"] not in skip]


def lenders(report):
    device = report.get("whatif", {}).get("changes", {}).get("device", {})
    return set(device.get("like_step", {}).get("lenders", []))


def pairs():
    for job in JOBS:
        for o, t in (("h100", "h200"), ("h200", "h100")):
            yield "another GPU", job, (o, f"{job}-emit-nvtx-step"), (t, f"{job}-emit-nvtx-step"), GPUS[t]
    for job in JOBS:
        for o, t in ((f"{job}-emit-nvtx-step", job), (job, f"{job}-emit-nvtx-step")):
            yield "same GPU, another run", job, ("h100", o), ("h100", t), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "build/tools/dpro-replay/dpro-replay"))
    ap.add_argument("--host-speed", action="store_true", help="give each prediction the measured host speed")
    args = ap.parse_args()
    rows = []
    for kind, job, (og, od), (tg, td), device in pairs():
        o_trace, t_trace = ROOT / "traces" / og / od, ROOT / "traces" / tg / td
        speed = 1.0
        if args.host_speed:
            speed = run_json(args.bin, ["host-speed", "-q", "--json", "-", str(o_trace), str(t_trace)])["cpu_speed"]
        # The device what-if names the emit_nvtx step (the lender); on the same GPU too.
        origin = run_json(args.bin, ["replay", "-q", "--json", "-", str(o_trace), "--device", GPUS[og]])
        target = run_json(args.bin, ["replay", "-q", "--json", "-", str(t_trace), "--device", GPUS[tg]])
        skip = lenders(origin) | lenders(target)
        extra = (["--device", device] if device else []) + ["--set", f"host.cpu_speed={speed:.4f}"]
        pred = run_json(args.bin, ["replay", "-q", "--json", "-", str(o_trace)] + extra)
        m = statistics.median(steps(target["iterations"], "measured_ns", skip)) / 1e6
        p = statistics.median(steps(pred["whatif"]["iterations"], "predicted_ns", skip)) / 1e6
        k = statistics.median(steps(origin["iterations"], "measured_ns", skip)) / 1e6
        rows.append({"set": kind, "job": job, "origin": f"{og}/{od}", "target": f"{tg}/{td}", "cpu_speed": speed,
                     "left_out": sorted(skip), "measured_ms": m, "predicted_ms": p, "error": p / m - 1,
                     "keep_origin_ms": k, "keep_origin_error": k / m - 1})
    for kind in ("another GPU", "same GPU, another run"):
        sel = [r for r in rows if r["set"] == kind]
        print(f"\n{kind}:\n")
        print("| origin -> target | host.cpu_speed | measured (ms) | predicted (ms) | error | keep origin (ms) | keep-origin error |")
        print("|---|---|---|---|---|---|---|")
        for r in sel:
            print(f"| {r['origin']} -> {r['target']} | {r['cpu_speed']:.3f} | {r['measured_ms']:.2f} | "
                  f"{r['predicted_ms']:.2f} | {100 * r['error']:+.1f}% | {r['keep_origin_ms']:.2f} | "
                  f"{100 * r['keep_origin_error']:+.1f}% |")
        mean = statistics.mean(abs(r["error"]) for r in sel)
        worst = max(abs(r["error"]) for r in sel)
        keep = statistics.mean(abs(r["keep_origin_error"]) for r in sel)
        print(f"\nmean |error| {100 * mean:.1f}% (worst {100 * worst:.1f}%); keep-the-origin {100 * keep:.1f}%")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
