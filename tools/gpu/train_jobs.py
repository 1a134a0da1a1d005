#!/usr/bin/env python3
"""Training jobs for validating dpro-profile on a real GPU (issue 4).

Each job is a real model (randomly initialised, synthetic data: nothing is
downloaded) trained for WARMUP + ITERS iterations.  Every iteration is one
NVTX range named ProfilerStep#<n> that ends after torch.cuda.synchronize(),
so the range's duration is the step time the host measured.

  --mode plain   no profiler (the overhead baseline)
  --mode dpro    the same, meant to run under `dpro-profile --nvtx -- ...`
                 (with --emit-nvtx also one NVTX range per operator, with shapes)
  --mode kineto  torch.profiler records the ITERS iterations after the warm-up
                 (Kineto JSON, gzip) into --out

One JSON line per process goes to stdout (and is appended to --summary):
job, mode, iterations, per-iteration times (ms) and their median.
"""
import argparse
import contextlib
import gzip
import json
import os
import shutil
import statistics
import sys
import time

import torch

JOBS = ("resnet50", "resnet50-bf16", "gpt2", "bert-ddp", "resnet18-gloo2")


def build_job(name, device):
    """Returns (model, optimizer, make_batch, step_fn, autocast dtype or None)."""
    if name.startswith("resnet"):
        import torchvision
        arch = torchvision.models.resnet50 if name.startswith("resnet50") else torchvision.models.resnet18
        model = arch(weights=None).to(device)
        batch = 64 if name.startswith("resnet50") else 32
        x_cpu = torch.randn(batch, 3, 224, 224).pin_memory()
        y_cpu = torch.randint(0, 1000, (batch,)).pin_memory()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()

        def loss_of(m):
            x = x_cpu.to(device, non_blocking=True)
            y = y_cpu.to(device, non_blocking=True)
            return loss_fn(m(x), y)
        amp = torch.bfloat16 if name.endswith("bf16") else None
        return model, opt, loss_of, amp
    if name in ("gpt2", "bert-ddp"):
        # transformers models from their default configs: GPT-2 small (12 layers, 768 wide,
        # 124M parameters), BERT-base MLM (12 layers, 768 wide, under DDP).
        import transformers
        if name == "gpt2":
            cfg = transformers.GPT2Config()
            model = transformers.GPT2LMHeadModel(cfg).to(device)
            shape = (8, 512)
        else:
            cfg = transformers.BertConfig()
            model = transformers.BertForMaskedLM(cfg).to(device)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
            shape = (16, 256)
        ids_cpu = torch.randint(0, cfg.vocab_size, shape).pin_memory()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def loss_of(m):
            ids = ids_cpu.to(device, non_blocking=True)
            return m(input_ids=ids, labels=ids).loss
        return model, opt, loss_of, torch.bfloat16
    raise SystemExit(f"unknown job {name}")


def step_range(text):
    """'A:B' -> (A, B), 0 <= A <= B."""
    try:
        first, last = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not A:B (two step numbers)")
    if not 0 <= first <= last:
        raise argparse.ArgumentTypeError(f"'{text}': need 0 <= A <= B")
    return first, last


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", required=True, choices=JOBS)
    ap.add_argument("--mode", required=True, choices=("plain", "dpro", "kineto"))
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--out", default=".", help="where kineto traces go")
    ap.add_argument("--summary", help="append the JSON line to this file too")
    ap.add_argument("--variant", default="", help="a label copied into the JSON line (the profiler configuration)")
    ap.add_argument("--emit-nvtx", action="store_true",
                    help="run the steps inside torch.autograd.profiler.emit_nvtx(record_shapes=True): one NVTX "
                         "range per operator with its shapes (for `dpro-profile --nvtx`)")
    ap.add_argument("--emit-nvtx-steps", metavar="A:B", type=step_range,
                    help="with --emit-nvtx: only steps A..B (0-based, warm-up included) run inside emit_nvtx, "
                         "the others as usual")
    a = ap.parse_args()

    distributed = a.job in ("bert-ddp", "resnet18-gloo2")
    rank = 0
    if distributed:
        import torch.distributed as dist
        backend = "gloo" if a.job.endswith("gloo2") else "nccl"
        dist.init_process_group(backend=backend)
        rank = dist.get_rank()
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True

    model, opt, loss_of, amp = build_job(a.job, device)
    if a.job == "resnet18-gloo2":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])

    def one_step():
        opt.zero_grad(set_to_none=True)
        if amp is not None:
            with torch.autocast("cuda", dtype=amp):
                loss = loss_of(model)
        else:
            loss = loss_of(model)
        loss.backward()
        opt.step()

    prof = None
    if a.mode == "kineto":
        from torch.profiler import ProfilerActivity, profile, schedule
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, f"{a.job}.rank{rank}.pt.trace.json")

        def ready(p):
            p.export_chrome_trace(path)
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(skip_first=a.warmup - 2, wait=0, warmup=2, active=a.iters, repeat=1),
                       record_shapes=True, on_trace_ready=ready)
        prof.start()

    first, last = a.emit_nvtx_steps or (0, a.warmup + a.iters)

    def ranges(i):
        described = a.emit_nvtx and prof is None and first <= i <= last
        return torch.autograd.profiler.emit_nvtx(record_shapes=True) if described else contextlib.nullcontext()
    times = []
    for i in range(a.warmup + a.iters):
        if prof is None:
            torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
        t0 = time.perf_counter()
        with ranges(i):
            one_step()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        if prof is None:
            torch.cuda.nvtx.range_pop()
        else:
            prof.step()
        if i >= a.warmup:
            times.append((t1 - t0) * 1e3)
    if prof is not None:
        prof.stop()
        with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        os.remove(path)

    rec = {"job": a.job, "mode": a.mode, "variant": a.variant, "rank": rank, "warmup": a.warmup, "iters": a.iters,
           "median_ms": round(statistics.median(times), 4),
           "p10_ms": round(sorted(times)[len(times) // 10], 4),
           "p90_ms": round(sorted(times)[(len(times) * 9) // 10], 4),
           "times_ms": [round(t, 4) for t in times],
           "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())) if hasattr(torch.cuda, "nccl") else None}
    line = json.dumps(rec)
    print(line, flush=True)
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(line + "\n")
    if distributed:
        import torch.distributed as dist
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
