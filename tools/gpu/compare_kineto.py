#!/usr/bin/env python3
"""Per-iteration kernel count and GPU busy time of two traces of the same job.

  compare_kineto.py KINETO.json.gz DPRO.json.gz [--first N]

KINETO is torch.profiler's trace; DPRO is dpro-profile's native trace converted
with `dpro-replay convert`. Both are Chrome-trace JSON. For every ProfilerStep#N
(host range, from N = --first on), kernels are those that start inside it (every
step of tools/gpu/train_jobs.py ends with torch.cuda.synchronize(), so its GPU
work lies inside it); GPU busy time is the union of its kernel, memcpy and memset
intervals. Prints the mean per step of each trace and their difference as one
JSON line. The two traces come from two runs of the job, so busy times differ
by the run-to-run variation as well as by what each profiler saw.
"""
import argparse
import bisect
import gzip
import json
import statistics


def load(path):
    with (gzip.open(path) if path.endswith(".gz") else open(path)) as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def per_step(events, first):
    steps = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                   if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op")
                   and e.get("name", "").startswith("ProfilerStep#")
                   and int(e["name"].split("#")[1]) >= first)
    gpu = sorted((e["ts"], e["ts"] + e["dur"], e.get("cat")) for e in events
                 if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    starts = [g[0] for g in gpu]
    out = []
    for s, t, name in steps:
        lo, hi = bisect.bisect_left(starts, s), bisect.bisect_right(starts, t)
        kernels, busy, cur_s, cur_t = 0, 0.0, None, None
        for a, b, cat in gpu[lo:hi]:
            kernels += cat == "kernel"
            b = min(b, t)
            if cur_t is None or a > cur_t:
                if cur_t is not None:
                    busy += cur_t - cur_s
                cur_s, cur_t = a, b
            else:
                cur_t = max(cur_t, b)
        if cur_t is not None:
            busy += cur_t - cur_s
        out.append({"step": name, "kernels": kernels, "busy_us": busy, "step_us": t - s})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kineto")
    ap.add_argument("dpro")
    ap.add_argument("--first", type=int, default=10, help="first step compared (after the warm-up)")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    k, d = per_step(load(a.kineto), a.first), per_step(load(a.dpro), a.first)
    if not k or not d:
        raise SystemExit(f"compare_kineto: no ProfilerStep#N >= {a.first} in {a.kineto if not k else a.dpro}")

    def mean(rows, key):
        return statistics.mean(r[key] for r in rows)
    rec = {"job": a.label, "kineto_steps": len(k), "dpro_steps": len(d),
           "kineto_kernels_per_step": round(mean(k, "kernels"), 2),
           "dpro_kernels_per_step": round(mean(d, "kernels"), 2),
           "kineto_busy_ms_per_step": round(mean(k, "busy_us") / 1e3, 4),
           "dpro_busy_ms_per_step": round(mean(d, "busy_us") / 1e3, 4)}
    rec["kernels_diff_pct"] = round(100 * (rec["dpro_kernels_per_step"] / rec["kineto_kernels_per_step"] - 1), 3)
    rec["busy_diff_pct"] = round(100 * (rec["dpro_busy_ms_per_step"] / rec["kineto_busy_ms_per_step"] - 1), 3)
    rec["kernel_count_range_kineto"] = [min(r["kernels"] for r in k), max(r["kernels"] for r in k)]
    rec["kernel_count_range_dpro"] = [min(r["kernels"] for r in d), max(r["kernels"] for r in d)]
    print(json.dumps(rec))


if __name__ == "__main__":
    main()
