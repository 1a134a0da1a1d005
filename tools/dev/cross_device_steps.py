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

With --pricer NAME, each prediction with --device also gets `--pricer NAME` (what prices the
described kernels: learned, the default, or roofline-share; docs/costmodel.md).

With --profiler-cost SPEC, each prediction also gets `--profiler-cost SPEC` (what each profiler
record cost the traced host: the profiler's cost is taken out of the origin's CPU side).

With --unprofiled (needs --profiler-cost), the measured side is the job run *without* the profiler
(the unprofiled runs' medians in docs/data/h100-2026-11-23; where one run ran it twice, their mean),
and each prediction is made twice, as recorded and with the profiler's cost taken out. Two sets:
each capture against its own run's unprofiled job (no --device), and another GPU (H100 <-> H200).
Captures whose run kept no unprofiled time are left out (run F's).

Usage: tools/dev/cross_device_steps.py [--bin build/tools/dpro-replay/dpro-replay] [--host-speed]
       [--pricer NAME] [--profiler-cost SPEC [--unprofiled]]
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
DATA = ROOT / "docs/data/h100-2026-11-23"
# The run each capture was recorded in (traces/SOURCES.md, docs/gpu-validation.md), and the file of
# docs/data that holds that run's unprofiled ("plain") step times: (file, run label or None).
CAPTURE_RUNS = {
    **{f"h100/{job}": ("run2-attribution-and-captures.jsonl", None) for job in JOBS},
    "h100/resnet50-emit-nvtx-step": ("run5-overhead-window-emit-nvtx.jsonl", "I"),
    "h100/bert-ddp-emit-nvtx-step": ("run5-overhead-window-emit-nvtx.jsonl", "I"),
    "h200/gpt2-emit-nvtx-step": ("run5-overhead-window-emit-nvtx.jsonl", "G"),
    "h200/resnet50-bf16-emit-nvtx-step": ("run5-overhead-window-emit-nvtx.jsonl", "G"),
    "h200/resnet50-emit-nvtx-step": ("run5-overhead-window-emit-nvtx.jsonl", "H"),
    "h200/bert-ddp-emit-nvtx-step": ("run5-overhead-window-emit-nvtx.jsonl", "H"),
}


def unprofiled_ms(capture, job):
    """Mean of the medians of the unprofiled runs of `job` in the run that recorded `capture`."""
    if capture not in CAPTURE_RUNS:
        return None
    name, run = CAPTURE_RUNS[capture]
    medians = []
    for line in open(DATA / name):
        r = json.loads(line)
        if r["job"] == job and r["mode"] == "plain" and r.get("run") == run and r.get("rank", 0) == 0:
            medians.append(r["median_ms"])
    return statistics.mean(medians) if medians else None


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


def timed_steps(iterations, key, skip):
    """Steps 10 on (the timed iterations of every capture), less the like-step lenders."""
    return [it["job"][key] for it in iterations
            if not it["whole_trace"] and it["number"] >= 10 and it["name"] not in skip]


def unprofiled_pairs():
    for job in JOBS:
        for capture in (f"h100/{job}", f"h100/{job}-emit-nvtx-step", f"h200/{job}-emit-nvtx-step"):
            yield "the capture's own run", job, capture, capture, None
    for job in JOBS:
        for o, t in (("h100", "h200"), ("h200", "h100")):
            yield "another GPU", job, f"{o}/{job}-emit-nvtx-step", f"{t}/{job}-emit-nvtx-step", GPUS[t]


def unprofiled_main(args):
    rows = []
    for kind, job, origin, target, device in unprofiled_pairs():
        measured = unprofiled_ms(target, job)
        if measured is None:
            continue
        o_trace, t_trace = ROOT / "traces" / origin, ROOT / "traces" / target
        speed = 1.0
        if args.host_speed and origin != target:
            speed = run_json(args.bin, ["host-speed", "-q", "--json", "-", str(o_trace), str(t_trace)])["cpu_speed"]
        base = ["replay", "-q", "--json", "-", str(o_trace), "--device", device or GPUS[origin.split("/")[0]],
                "--set", f"host.cpu_speed={speed:.4f}"] + (["--pricer", args.pricer] if args.pricer else [])
        kept = run_json(args.bin, base)
        taken = run_json(args.bin, base + ["--profiler-cost", args.profiler_cost])
        skip = lenders(kept)
        p_kept = statistics.median(timed_steps(kept["whatif"]["iterations"], "predicted_ns", skip)) / 1e6
        p_taken = statistics.median(timed_steps(taken["whatif"]["iterations"], "predicted_ns", skip)) / 1e6
        captured = statistics.median(timed_steps(kept["iterations"], "measured_ns", skip)) / 1e6
        rows.append({"set": kind, "job": job, "origin": origin, "target": target, "cpu_speed": speed,
                     "left_out": sorted(skip), "unprofiled_ms": measured, "captured_ms": captured,
                     "predicted_as_recorded_ms": p_kept, "error_as_recorded": p_kept / measured - 1,
                     "predicted_cost_out_ms": p_taken, "error_cost_out": p_taken / measured - 1,
                     "removed_per_step_ms": taken["profiler_cost"]["removed_per_step_ns"] / 1e6})
    for kind in ("the capture's own run", "another GPU"):
        sel = [r for r in rows if r["set"] == kind]
        print(f"\n{kind} (profiler cost {args.profiler_cost}):\n")
        print("| origin -> target | host.cpu_speed | unprofiled, measured (ms) | capture's step (ms) | predicted, as recorded (ms) | error | "
              "cost taken out (ms per step) | predicted, cost out (ms) | error |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in sel:
            print(f"| {r['origin']} -> {r['target']} | {r['cpu_speed']:.3f} | {r['unprofiled_ms']:.2f} | {r['captured_ms']:.2f} | "
                  f"{r['predicted_as_recorded_ms']:.2f} | {100 * r['error_as_recorded']:+.1f}% | {r['removed_per_step_ms']:.2f} | "
                  f"{r['predicted_cost_out_ms']:.2f} | {100 * r['error_cost_out']:+.1f}% |")
        for key, label in (("error_as_recorded", "as recorded"), ("error_cost_out", "cost out")):
            errs = [abs(r[key]) for r in sel]
            print(f"\n{label}: mean |error| {100 * statistics.mean(errs):.1f}% (worst {100 * max(errs):.1f}%)", end="")
        print()
    for r in rows:
        print(json.dumps(r))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "build/tools/dpro-replay/dpro-replay"))
    ap.add_argument("--host-speed", action="store_true", help="give each prediction the measured host speed")
    ap.add_argument("--pricer", help="passed to each prediction with --device (learned, roofline-share)")
    ap.add_argument("--profiler-cost", help="what each profiler record cost the traced host, e.g. runtime=2.2us,kernel=2us")
    ap.add_argument("--unprofiled", action="store_true", help="measured side: the jobs run without the profiler (docs/data)")
    args = ap.parse_args()
    if args.unprofiled:
        if not args.profiler_cost:
            ap.error("--unprofiled compares with and without the profiler's cost: give --profiler-cost")
        return unprofiled_main(args)
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
        if device and args.pricer:
            extra += ["--pricer", args.pricer]
        if args.profiler_cost:
            extra += ["--profiler-cost", args.profiler_cost]
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
