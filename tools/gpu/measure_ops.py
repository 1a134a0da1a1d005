#!/usr/bin/env python3
"""Measure operator latencies on this machine's GPU, in the schema of the cost model's data.

  measure_ops.py -o DIR INPUT [INPUT ...] [--budget-s S] [--limit N] [--skip N] [--seed S]

INPUT: CSV files (.csv or .csv.gz) or folders of them in the schema `dpro-replay costmodel
predict` reads (the shared NeuSight data's): an OPName column (bmm, linear, conv, ln, softmax,
add, addu, mul, mulu, div, divu, pow, powu, relu, gelu, tanh) and that op's dimension columns
(bmm/linear: B,M,N,K; conv: B,Input_Channel,Output_Channel,Kernel_Szie,Input_Size,Stride,
Padding; the others: B,H); other columns are ignored, a row repeated is measured once.

Each op runs in fp32 on the first CUDA device with PyTorch, as the shared data was recorded
(TF32 off for matmuls and convolutions, cuDNN autotuning on): bmm of (B,M,N) by (B,N,K);
Linear(N,K, bias) on (B,M,N); Conv2d(Input_Channel, Output_Channel, Kernel_Szie, Stride,
Padding, no bias) on (B,Input_Channel,Input_Size,Input_Size); LayerNorm(H), softmax over H, and
the elementwise ops on (B,H) (the `u` ops with a scalar). Latency: each call timed by CUDA
events around it and synchronised, 25 calls where one takes up to 0.4 ms, else as many as fill
about 10 ms (3 to 25); the mean of the fastest fifth, in milliseconds. One more call per row under torch.profiler gives its kernels: the
longest is `Kernel Name` (with its grid, block, warps and blocks per SM), all of them in launch
order `Kernels`, their summed durations `Kernel Time` (ms; GPU time alone, where Latency, timed
from the host as the shared data was, also holds the host's dispatch of a short op).

Rows are taken in a random order (--seed), so a run stopped by --budget-s or --limit has
measured a uniform sample; --skip N (same seed, another -o) goes on after the first N.
Output: DIR/<op>/<GPU name>.csv (one file per op, the shared data's layout, written as rows
are measured), DIR/skipped.csv (rows that did not run: out of memory,
no kernel seen) and DIR/run.json (GPU, versions, method, counts, seconds). A file that is there
already is not overwritten: the run stops with exit code 2 before measuring.
"""
import argparse
import csv
import gzip
import json
import os
import random
import sys
import tempfile
import time

DIMS = {
    "bmm": ["B", "M", "N", "K"],
    "linear": ["B", "M", "N", "K"],
    "conv": ["B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"],
}
VECTOR_OPS = ["ln", "softmax", "add", "addu", "mul", "mulu", "div", "divu", "pow", "powu", "relu", "gelu", "tanh"]
for _op in VECTOR_OPS:
    DIMS[_op] = ["B", "H"]
MAX_DIM = 1 << 40

HEAD = ["OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "Kernel Name", "Warps per SM",
        "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x", "Block y", "Block z", "CUDA Version", "Kernels", "Kernel Time"]
ROW_MARK = "dpro_row_"


class InputError(Exception):
    """Bad input: printed as one line, exit code 2."""


def input_files(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in names if n.endswith((".csv", ".csv.gz"))]
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    if not files:
        raise InputError(f"{', '.join(paths)}: no .csv or .csv.gz files")
    return sorted(files)


def read_rows(paths):
    """[(op, dims)] in file order, each (op, dims) once."""
    seen, rows = set(), []
    for path in input_files(paths):
        try:
            with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
                table = list(csv.reader(f))
        except (OSError, UnicodeDecodeError, EOFError, csv.Error) as e:
            raise InputError(f"{path}: not a readable CSV ({e})")
        if not table or "OPName" not in table[0]:
            raise InputError(f"{path}: no OPName column in its header")
        head = table[0]
        for i, row in enumerate(table[1:], start=2):
            if not row:
                continue
            rec = dict(zip(head, row))
            op = rec.get("OPName", "")
            if op not in DIMS:
                raise InputError(f"{path}: row {i}: OPName '{op}' is none of {', '.join(sorted(DIMS))}")
            dims = []
            for col in DIMS[op]:
                v = rec.get(col, rec.get("Kernel_Size", "") if col == "Kernel_Szie" else "")
                if not v.isdigit() or int(v) > MAX_DIM or (int(v) == 0 and col not in ("Padding",)):
                    raise InputError(f"{path}: row {i}, column {col}: '{v}' is not a dimension of {op} "
                                     f"(a whole number, at least 1)")
                dims.append(int(v))
            key = (op, tuple(dims))
            if key not in seen:
                seen.add(key)
                rows.append(key)
    return rows


def attribute_launches(events, n_rows):
    """Kernels of each profiled row from a torch.profiler (Kineto) trace's events: a row ran
    inside a user annotation named dpro_row_<i>; its kernels are those whose launch call
    (cuda_runtime or cuda_driver, paired with the kernel by correlation id) started inside that
    range. Returns [[kernel event, ...] in launch order] per row."""
    ranges = []
    for e in events:
        name = e.get("name", "")
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and name.startswith(ROW_MARK):
            try:
                ranges.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), int(name[len(ROW_MARK):])))
            except (KeyError, ValueError):
                continue
    ranges.sort()
    kernels = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and "correlation" in e.get("args", {}):
            kernels[e["args"]["correlation"]] = e
    out = [[] for _ in range(n_rows)]
    launches = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            corr = e.get("args", {}).get("correlation")
            if corr in kernels:
                launches.append((float(e["ts"]), kernels[corr]))
    launches.sort(key=lambda x: x[0])
    for ts, k in launches:
        for lo, hi, row in ranges:  # a chunk's few hundred ranges: a scan is fast enough
            if lo <= ts <= hi and 0 <= row < n_rows:
                out[row].append(k)
                break
    return out


def kernel_columns(kernels):
    """Kernel Name ... Kernels of one row from its kernel events (None when it launched none)."""
    if not kernels:
        return None
    main = max(kernels, key=lambda k: float(k.get("dur", 0)))
    a = main.get("args", {})
    grid, block = a.get("grid", [""] * 3), a.get("block", [""] * 3)
    return {
        "Kernel Name": main.get("name", ""),
        "Warps per SM": a.get("warps per SM", ""),
        "Blocks per SM": a.get("blocks per SM", ""),
        "Grid x": grid[0], "Grid y": grid[1], "Grid z": grid[2],
        "Block x": block[0], "Block y": block[1], "Block z": block[2],
        "Kernels": "".join(";" + k.get("name", "").lower() for k in kernels),
        "Kernel Time": f"{sum(float(k.get('dur', 0)) for k in kernels) / 1000:.6g}",
    }


def file_name(device):
    return device.strip().replace(" ", "_") + ".csv"


class Writer:
    """One CSV per op under DIR/<op>/, opened on its first row; never over an existing file."""

    def __init__(self, out_dir, device):
        self.out_dir, self.device, self.files = out_dir, device, {}

    def check_free(self, ops):
        for op in ops:
            p = os.path.join(self.out_dir, op, file_name(self.device))
            if os.path.exists(p):
                raise InputError(f"{p}: exists already; not overwritten (give another -o)")
        for name in ("skipped.csv", "run.json"):
            if os.path.exists(os.path.join(self.out_dir, name)):
                raise InputError(f"{os.path.join(self.out_dir, name)}: exists already; not overwritten (give another -o)")

    def write(self, op, rec):
        if op not in self.files:
            os.makedirs(os.path.join(self.out_dir, op), exist_ok=True)
            f = open(os.path.join(self.out_dir, op, file_name(self.device)), "x", newline="")
            w = csv.DictWriter(f, fieldnames=HEAD + DIMS[op], lineterminator="\n")
            w.writeheader()
            self.files[op] = (f, w)
        f, w = self.files[op]
        w.writerow(rec)

    def flush(self):
        for f, _ in self.files.values():
            f.flush()

    def close(self):
        for f, _ in self.files.values():
            f.close()


# ---- GPU side (PyTorch; imported only when measuring) ----

def make_op(torch, op, dims):
    dev = "cuda"
    if op in ("bmm", "linear"):
        b, m, n, k = dims
        if op == "bmm":
            return torch.bmm, (torch.randn(b, m, n, device=dev), torch.randn(b, n, k, device=dev))
        return torch.nn.Linear(n, k, bias=True, device=dev), (torch.randn(b, m, n, device=dev),)
    if op == "conv":
        b, ic, oc, ks, size, stride, pad = dims
        conv = torch.nn.Conv2d(ic, oc, ks, stride=stride, padding=pad, bias=False, device=dev)
        return conv, (torch.randn(b, ic, size, size, device=dev),)
    b, h = dims
    x = torch.rand(b, h, device=dev) + 0.5  # positive: pow and div stay finite
    s = 0.7
    fn = {
        "ln": torch.nn.LayerNorm(h, device=dev),
        "softmax": lambda t: torch.softmax(t, dim=-1),
        "add": torch.add, "mul": torch.mul, "div": torch.div, "pow": torch.pow,
        "addu": lambda t: torch.add(t, s), "mulu": lambda t: torch.mul(t, s),
        "divu": lambda t: torch.div(t, s), "powu": lambda t: torch.pow(t, s),
        "relu": torch.relu, "gelu": torch.nn.functional.gelu, "tanh": torch.tanh,
    }[op]
    if op in ("add", "mul", "div", "pow"):
        return fn, (x, torch.rand(b, h, device=dev) + 0.5)
    return fn, (x,)


def time_op(torch, fn, args, warmup):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def once():
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    first = once()
    reps = 25 if first <= 0.4 else max(3, min(25, int(10.0 / first)))
    times = sorted([first] + [once() for _ in range(reps - 1)])
    keep = times[:max(1, len(times) // 5)]
    return sum(keep) / len(keep), len(times)


def measure(args, rows):
    import torch  # noqa: E402 (only the GPU side needs it)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = args.cudnn_benchmark == "on"
    torch.set_grad_enabled(False)
    if not torch.cuda.is_available():
        raise InputError("no CUDA device: measure_ops.py measures on this machine's GPU")
    device = torch.cuda.get_device_name().strip()
    tv, _, cv = torch.__version__.partition("+")
    fixed = {"Device": device, "Torch Version": "p" + tv, "CUDNN Version": str(torch.backends.cudnn.version()),
             "CUDA Version": cv or ("cu" + (torch.version.cuda or "").replace(".", ""))}
    writer = Writer(args.out, device)
    writer.check_free(sorted({op for op, _ in rows}))
    os.makedirs(args.out, exist_ok=True)
    skipped = open(os.path.join(args.out, "skipped.csv"), "x", newline="")
    skip_w = csv.writer(skipped, lineterminator="\n")
    skip_w.writerow(["OPName", "dims", "reason"])
    t0 = time.time()
    deadline = t0 + args.budget_s if args.budget_s else None
    done = n_skipped = 0
    reps_total = 0
    stopped = ""
    for c0 in range(0, len(rows), args.chunk):
        chunk = rows[c0:c0 + args.chunk]
        timed = []  # (op, dims, latency)
        for op, dims in chunk:
            if deadline and time.time() > deadline:
                stopped = f"--budget-s {args.budget_s} reached"
                break
            try:
                fn, inputs = make_op(torch, op, dims)
                lat, reps = time_op(torch, fn, inputs, 2 if op == "conv" else 1)
                reps_total += reps
                timed.append((op, dims, lat))
            except torch.cuda.OutOfMemoryError:
                skip_w.writerow([op, ";".join(map(str, dims)), "out of memory"])
                n_skipped += 1
                fn = inputs = None
                torch.cuda.empty_cache()
            except RuntimeError as e:  # e.g. cuDNN finds no algorithm for a shape
                skip_w.writerow([op, ";".join(map(str, dims)), str(e).splitlines()[0][:200]])
                n_skipped += 1
            fn = inputs = None
        # One profiled call per timed row: its kernels.
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for i, (op, dims, _) in enumerate(timed):
                try:
                    fn, inputs = make_op(torch, op, dims)
                    torch.cuda.synchronize()
                    with torch.profiler.record_function(f"{ROW_MARK}{i}"):
                        fn(*inputs)
                    torch.cuda.synchronize()
                except RuntimeError:  # out of memory this time: the row gets no kernels, is skipped
                    torch.cuda.empty_cache()
                fn = inputs = None
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
            trace_path = tf.name
        prof.export_chrome_trace(trace_path)
        with open(trace_path) as f:
            events = json.load(f).get("traceEvents", [])
        os.unlink(trace_path)
        for (op, dims, lat), ks in zip(timed, attribute_launches(events, len(timed))):
            cols = kernel_columns(ks)
            if cols is None:
                skip_w.writerow([op, ";".join(map(str, dims)), "no kernel seen under the profiler"])
                n_skipped += 1
                continue
            rec = {"OPName": op, "Latency": f"{lat:.6g}", **fixed, **cols}
            rec.update(zip(DIMS[op], dims))
            writer.write(op, rec)
            done += 1
        writer.flush()
        skipped.flush()
        el = time.time() - t0
        print(f"measure_ops: {done + n_skipped}/{len(rows)} rows ({done} measured, {n_skipped} skipped), "
              f"{el:.0f} s", file=sys.stderr, flush=True)
        if stopped:
            break
    writer.close()
    skipped.close()
    with open(os.path.join(args.out, "run.json"), "x") as f:
        json.dump({"device": device, **{k.lower().replace(" ", "_"): v for k, v in fixed.items() if k != "Device"},
                   "rows_given": len(rows), "measured": done, "skipped": n_skipped,
                   "timed_calls": reps_total, "seconds": round(time.time() - t0, 1), "seed": args.seed,
                   "stopped": stopped or "all rows", "method": f"fp32, TF32 off, cuDNN benchmark {args.cudnn_benchmark}; "
                   "mean of the fastest fifth of 3-25 CUDA-event-timed calls (25 or 10 ms of GPU time)", "skip": args.skip},
                  f, indent=1)
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="INPUT")
    ap.add_argument("-o", "--out", required=True, help="output folder (its files are never overwritten)")
    ap.add_argument("--budget-s", type=float, default=0, help="stop after this many seconds (0: no limit)")
    ap.add_argument("--limit", type=int, default=0, help="measure at most this many rows (0: all)")
    ap.add_argument("--skip", type=int, default=0,
                    help="leave out the first N rows of the order (a run that goes on from one stopped after N)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random row order")
    ap.add_argument("--chunk", type=int, default=512, help="rows per profiler pass")
    ap.add_argument("--list", action="store_true", help="print the rows (in measuring order) and stop")
    ap.add_argument("--cudnn-benchmark", choices=["on", "off"], default="on",
                    help="torch.backends.cudnn.benchmark (on: cuDNN times its algorithms per shape and keeps the "
                         "fastest; off: its heuristics choose, PyTorch's default); recorded in run.json")
    a = ap.parse_args()
    if a.budget_s < 0 or a.limit < 0 or a.skip < 0 or a.chunk < 1:
        ap.error("--budget-s, --limit and --skip must be >= 0, --chunk >= 1")
    try:
        rows = read_rows(a.inputs)
        random.Random(a.seed).shuffle(rows)
        rows = rows[a.skip:]
        if a.limit:
            rows = rows[:a.limit]
        if a.list:
            try:
                for op, dims in rows:
                    print(op, *dims)
            except BrokenPipeError:  # `--list | head`
                sys.stderr.close()
            return 0
        n = measure(a, rows)
        print(f"measure_ops: {n} rows measured into {a.out}", file=sys.stderr)
        return 0
    except InputError as e:
        print(f"measure_ops: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
