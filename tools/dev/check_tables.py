#!/usr/bin/env python3
"""Checks `dpro-replay replay --table operators,overlap,idle,memory,phases,gpu_ops` against the same
figures computed here straight from one rank's raw Kineto JSON (no dpro code in between); of
gpu_ops, the kernels' counts and their efficiency fields (duration-weighted means of "est. achieved
occupancy %", "blocks per SM", "warps per SM").

Usage: tools/dev/check_tables.py --binary BIN --raw RANK_FILE [--inputs TRACE_OR_DIR ...]
                                 [--inject-memory]

--inputs: what dpro-replay replays (default: RANK_FILE); RANK_FILE is the rank checked.
--inject-memory: first writes a copy of RANK_FILE with synthetic Kineto "[memory]" events (one
  after every GPU op's launch, a deterministic saw-tooth) and checks the memory table on it.

A figure agrees when it is within 1 % of its step (operators: of all steps together); counts and
the sum of the idle causes must be exact; an efficiency mean within 0.1 % of its value. Prints one line per table and exits 1 on a mismatch.
"""
import argparse
import bisect
from decimal import ROUND_HALF_EVEN, Decimal
import gzip
import json
import os
import subprocess
import sys
import tempfile

NCCL = ("ncclKernel", "ncclDevKernel")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
NEST_CATS = ("cpu_op", "operator", "user_annotation", "cuda_runtime", "runtime", "cuda_driver", "driver")
OP_CATS = ("cpu_op", "operator", "user_annotation")
CALL_CATS = ("cuda_runtime", "runtime", "cuda_driver", "driver")


def ns(us):
    # Exact: epoch timestamps in us (1.7e15) times 1000 are beyond a double's 53 bits.
    return int((Decimal(us) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=Decimal)


class Raw:
    """One rank's trace: events in ns, its steps, nesting and launched GPU time."""

    def __init__(self, j):
        self.rank = (j.get("distributedInfo") or {}).get("rank", 0)
        evs = [e for e in j["traceEvents"] if e.get("ph") == "X" and "ts" in e and isinstance(e.get("pid"), int)]
        for e in evs:
            e["s"], e["d"] = ns(e["ts"]), ns(e.get("dur", 0))
            e["e"] = e["s"] + e["d"]
        self.gpu = [e for e in evs if (e.get("cat") or "").lower() in GPU_CATS]
        self.cpu = sorted((e for e in evs if (e.get("cat") or "").lower() in NEST_CATS), key=lambda e: (e["s"], -e["d"]))
        self.steps = sorted(((int(e["name"].split("#")[1]), e["s"], e["e"], id(e)) for e in self.cpu
                             if e["name"].startswith("ProfilerStep#")), key=lambda s: s[1])
        self.marker_ids = {s[3] for s in self.steps}
        if not self.steps:  # the whole recorded span is the window
            side = self.cpu + self.gpu + [e for e in evs if (e.get("cat") or "").lower() == "python_function"]
            self.steps = [(-1, min(e["s"] for e in side), max(e["e"] for e in side), None)]
        self.nest()

    def nest(self):
        by_corr = {}
        for g in self.gpu:
            c = (g.get("args") or {}).get("correlation")
            if c is not None:
                by_corr[c] = by_corr.get(c, 0) + g["d"]
        stacks = {}
        for e in self.cpu:
            e["parent"], e["children"], e["launched"] = None, 0, 0
            st = stacks.setdefault((e["pid"], e["tid"]), [])
            while st and st[-1]["e"] < e["e"]:
                st.pop()
            if st:
                e["parent"] = st[-1]
                st[-1]["children"] += e["d"]
            st.append(e)
            c = (e.get("args") or {}).get("correlation")
            if e["cat"].lower() in CALL_CATS and c is not None and c in by_corr:
                e["launched"] = by_corr.pop(c)

    def step_of(self, t):
        for s in self.steps:
            if s[1] <= t < s[2]:
                return s
        return None

    def total_steps(self):
        return sum(s[2] - s[1] for s in self.steps)


def union(iv):
    out = []
    for a, b in sorted(iv):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(u):
    return sum(b - a for a, b in u)


def inter(u, v):
    i = j = n = 0
    while i < len(u) and j < len(v):
        n += max(0, min(u[i][1], v[j][1]) - max(u[i][0], v[j][0]))
        if u[i][1] < v[j][1]:
            i += 1
        else:
            j += 1
    return n


def clip(events, s):
    return union([(max(e["s"], s[1]), min(e["e"], s[2])) for e in events])


class Checker:
    def __init__(self):
        self.failures = []
        self.checked = 0

    def near(self, what, got, want, scale, exact=False):
        self.checked += 1
        ok = got == want if exact else abs(got - want) <= 0.01 * scale
        if not ok:
            self.failures.append(f"{what}: table {got}, raw {want} (1% of step = {0.01 * scale:.0f} ns)")


def check_operators(raw, rows, ck):
    ops = {}
    for e in raw.cpu:
        if e["cat"].lower() not in OP_CATS or id(e) in raw.marker_ids or not raw.step_of(e["s"]):
            continue
        o = ops.setdefault(e["name"], {"count": 0, "self": 0, "total": 0, "gpu_self": 0, "gpu": 0})
        o["count"] += 1
        o["total"] += e["d"]
        o["self"] += max(0, e["d"] - e["children"])
    for c in raw.cpu:
        if not c["launched"] or c["parent"] is None:
            continue
        p = c["parent"]
        if p["cat"].lower() in OP_CATS and id(p) not in raw.marker_ids and raw.step_of(p["s"]):
            ops[p["name"]]["gpu_self"] += c["launched"]
        while p is not None:
            if p["cat"].lower() in OP_CATS and id(p) not in raw.marker_ids and raw.step_of(p["s"]):
                ops[p["name"]]["gpu"] += c["launched"]
            p = p["parent"]
    table = {r["name"]: r for r in rows if r["rank"] == raw.rank}
    scale = raw.total_steps()
    ck.near("operators: distinct names", len(table), len(ops), 0, exact=True)
    for key in ("self", "total", "gpu_self", "gpu"):
        ck.near(f"operators: sum of {key}", sum(r[key + "_ns"] for r in table.values()), sum(o[key] for o in ops.values()), scale)
    for name in sorted(ops, key=lambda n: -ops[n]["self"])[:10]:
        t = table.get(name, {"count": 0, "self_ns": 0, "total_ns": 0, "gpu_self_ns": 0, "gpu_ns": 0})
        ck.near(f"operators: {name} count", t["count"], ops[name]["count"], 0, exact=True)
        for key in ("self", "total", "gpu_self", "gpu"):
            ck.near(f"operators: {name} {key}", t[key + "_ns"], ops[name][key], scale)


def rows_by_step(rows, rank):
    return {(r["step"] if r["step"] is not None else -1): r for r in rows if r["rank"] == rank}


def check_overlap(raw, rows, ck):
    table = rows_by_step(rows, raw.rank)
    ck.near("overlap: steps", sorted(table), sorted(s[0] for s in raw.steps), 0, exact=True)
    kernels = [g for g in raw.gpu if g["cat"].lower() == "kernel"]
    for s in raw.steps:
        comp = clip([g for g in kernels if not g["name"].startswith(NCCL)], s)
        comm = clip([g for g in kernels if g["name"].startswith(NCCL)], s)
        t = table.get(s[0])
        if not t:
            continue
        span = s[2] - s[1]
        ck.near(f"overlap: step {s[0]} compute", t["compute_ns"], length(comp), span)
        ck.near(f"overlap: step {s[0]} communication", t["communication_ns"], length(comm), span)
        ck.near(f"overlap: step {s[0]} overlapped", t["overlapped_ns"], inter(comp, comm), span)


def idle_causes(raw, s, busy):
    """Each idle gap of step s by what the GPU op starting at its end waited for (tables.h)."""
    calls = {}
    for c in raw.cpu:
        corr = (c.get("args") or {}).get("correlation")
        if c["cat"].lower() in CALL_CATS and corr is not None:
            calls.setdefault(corr, c)
    pred_end, streams = {}, {}
    for g in sorted(raw.gpu, key=lambda g: (g["s"], -g["d"])):
        key = (g["pid"], g["tid"])
        if key in streams:
            pred_end[id(g)] = streams[key]
        streams[key] = max(streams.get(key, 0), g["e"])
    starts = sorted(raw.gpu, key=lambda g: g["s"])
    keys = [g["s"] for g in starts]
    out = {"host_wait": 0, "kernel_wait": 0, "peer_wait": 0, "other": 0}
    def gap(begin, end):
        if end <= begin:
            return
        k = bisect.bisect_left(keys, end)
        cause = "other"
        if end < s[2] and k < len(starts) and starts[k]["s"] == end:
            g = starts[k]
            call = calls.get((g.get("args") or {}).get("correlation"))
            pe = pred_end.get(id(g))
            if call is not None and (pe is None or call["s"] >= pe):
                cause = "host_wait"
            elif pe is not None:
                cause = "kernel_wait"
        out[cause] += end - begin

    cursor = s[1]
    for b in busy:
        gap(cursor, b[0])
        cursor = b[1]
    gap(cursor, s[2])
    return out


def check_idle(raw, rows, report, ck):
    table = rows_by_step(rows, raw.rank)
    ck.near("idle: steps", sorted(table), sorted(s[0] for s in raw.steps), 0, exact=True)
    report_idle = {}
    for it in report["iterations"]:
        for r in it["ranks"]:
            if r["rank"] == raw.rank:
                report_idle[it.get("number", -1) if not it.get("whole_trace") else -1] = r["gpu"]["idle_ns"]
    for s in raw.steps:
        t = table.get(s[0])
        if not t:
            continue
        span = s[2] - s[1]
        busy = clip(raw.gpu, s)
        parts = ("host_wait", "kernel_wait", "peer_wait", "other")
        ck.near(f"idle: step {s[0]} causes add up", sum(t[p + "_ns"] for p in parts), t["idle_ns"], 0, exact=True)
        if s[0] in report_idle:
            ck.near(f"idle: step {s[0]} = the report's GPU idle", t["idle_ns"], report_idle[s[0]], 0, exact=True)
        ck.near(f"idle: step {s[0]} idle", t["idle_ns"], span - length(busy), span)
        causes = idle_causes(raw, s, busy)
        for p in parts:
            ck.near(f"idle: step {s[0]} {p}", t[p + "_ns"], causes[p], span)


def check_phases(raw, rows, ck):
    got = {(r["step"] if r["step"] is not None else -1, r["phase"]): r for r in rows if r["rank"] == raw.rank}
    want = {}
    for e in raw.cpu:
        s = raw.step_of(e["s"])
        if not s or id(e) in raw.marker_ids:
            continue
        name, cat, low = e["name"], e["cat"].lower(), e["name"].lower()
        phase = None
        if cat in ("cpu_op", "operator"):
            phase = "backward" if name.startswith("autograd::engine::evaluate_function") else None
        elif cat == "user_annotation":
            for word in ("backward", "forward", "optimizer"):
                if word in low:
                    phase = word
                    break
            else:
                if e["parent"] is not None and id(e["parent"]) in raw.marker_ids:
                    phase = name
        if phase:
            want.setdefault((s[0], phase), (s, []))[1].append((e["s"], min(e["e"], s[2])))
    ck.near("phases: (step, phase) pairs", sorted(got), sorted(want), 0, exact=True)
    launches = [(c["s"], c["launched"]) for c in raw.cpu if c["launched"]]
    for key, (s, ranges) in want.items():
        u = union(ranges)
        gpu = sum(t for at, t in launches if any(a <= at < b for a, b in u))
        t = got.get(key, {"ranges": 0, "cpu_ns": 0, "gpu_ns": 0})
        span = s[2] - s[1]
        ck.near(f"phases: step {key[0]} {key[1]} ranges", t["ranges"], len(ranges), 0, exact=True)
        ck.near(f"phases: step {key[0]} {key[1]} cpu", t["cpu_ns"], length(u), span)
        ck.near(f"phases: step {key[0]} {key[1]} gpu", t["gpu_ns"], gpu, span)


def check_memory(raw, j, rows, ck):
    samples = sorted((ns(e["ts"]), a["Total Allocated"], a.get("Total Reserved"))
                     for e in j["traceEvents"] if e.get("name") == "[memory]" and e.get("ph") in ("i", "I")
                     for a in [e.get("args") or {}] if "Total Allocated" in a and a.get("Device Type", 1) == 1)
    mine = [r for r in rows if r["rank"] == raw.rank]
    whole = [r for r in mine if r["step"] is None]
    ck.near("memory: one whole-trace row", len(whole), 1, 0, exact=True)
    if not whole:
        return
    ck.near("memory: recorded", whole[0]["recorded"], bool(samples), 0, exact=True)
    if not samples:
        ck.near("memory: no step rows", len(mine), 1, 0, exact=True)
        return
    ck.near("memory: peak allocated", whole[0]["peak_allocated_bytes"], max(s[1] for s in samples), 0, exact=True)
    steps = {r["step"]: r for r in mine if r["step"] is not None}
    for s in raw.steps:
        before = [x for x in samples if x[0] < s[1]][-1:]
        inside = [x for x in samples if s[1] <= x[0] < s[2]]
        if not before and not inside:
            continue
        t = steps.get(s[0] if s[0] >= 0 else None, {})
        ck.near(f"memory: step {s[0]} peak allocated", t.get("peak_allocated_bytes"), max(x[1] for x in before + inside), 0, exact=True)
        ck.near(f"memory: step {s[0]} samples", t.get("samples"), len(inside), 0, exact=True)


EFFICIENCY = {"occupancy_percent": "est. achieved occupancy %", "blocks_per_sm": "blocks per SM", "warps_per_sm": "warps per SM"}


def check_efficiency(raw, rows, ck):
    """Per kernel name, over the kernels that start in a step: count and duration-weighted means."""
    sums = {}
    for g in raw.gpu:
        if (g.get("cat") or "").lower() != "kernel" or g["name"].startswith(NCCL) or raw.step_of(g["s"]) is None:
            continue
        k = sums.setdefault(g["name"], {"count": 0, **{f: [Decimal(0), Decimal(0)] for f in EFFICIENCY}})
        k["count"] += 1
        weight = Decimal(max(g["d"], 1))
        for field, arg in EFFICIENCY.items():
            v = (g.get("args") or {}).get(arg)
            if isinstance(v, (int, Decimal)):
                k[field][0] += Decimal(v) * weight
                k[field][1] += weight
    table = {r["name"]: r for r in rows if r["rank"] == raw.rank and r["kind"] == "kernel"}
    recorded = 0
    for name, k in sums.items():
        r = table.get(name, {})
        ck.near(f"gpu_ops: {name[:60]} count", r.get("count"), k["count"], 0, exact=True)
        for field in EFFICIENCY:
            value, weight = k[field]
            if weight == 0:
                ck.near(f"gpu_ops: {name[:60]} {field} absent", r.get(field), None, 0, exact=True)
                continue
            recorded += 1
            want, got = float(value / weight), r.get(field)
            ck.near(f"gpu_ops: {name[:60]} {field}", got if got is not None else float("nan"), want, abs(want) * 0.1)
    return recorded


def inject_memory(j, path):
    """A saw-tooth of allocations after each GPU op's launch: deterministic and step-dependent."""
    gpu = sorted((e for e in j["traceEvents"] if e.get("ph") == "X" and (e.get("cat") or "").lower() in GPU_CATS),
                 key=lambda e: e["ts"])
    pid = next(e["pid"] for e in j["traceEvents"] if e.get("ph") == "X" and (e.get("cat") or "") == "cpu_op")
    for k, g in enumerate(gpu):
        alloc = (1 << 20) * ((k * 37) % 101 + 5) + k
        j["traceEvents"].append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid, "tid": pid,
                                 "ts": g["ts"], "args": {"Device Type": 1, "Device Id": 0, "Bytes": 4096,
                                                         "Total Allocated": alloc, "Total Reserved": 2 * alloc}})
    class Exact(json.JSONEncoder):  # Decimal times written as they were read
        def encode(self, o):
            return json.dumps(o, default=lambda d: f"@@{d}@@").replace('"@@', "").replace('@@"', "")

    with gzip.open(path, "wt") as f:
        f.write(Exact().encode(j))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--raw", required=True)
    ap.add_argument("--inputs", nargs="*")
    ap.add_argument("--inject-memory", action="store_true")
    args = ap.parse_args()
    j = load(args.raw)
    inputs = args.inputs or [args.raw]
    with tempfile.TemporaryDirectory() as tmp:
        if args.inject_memory:
            injected = os.path.join(tmp, "with-memory.json.gz")
            inject_memory(j, injected)
            inputs = [injected]
            j = load(injected)
        names = "operators,overlap,idle,memory,phases,gpu_ops"
        run = subprocess.run([args.binary, "replay", *inputs, "--table", names, "--json", "-"], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"dpro-replay failed ({run.returncode}): {run.stderr.strip()}")
        return 1
    report = json.loads(run.stdout)
    tables = report["tables"]
    raw = Raw(j)
    ck = Checker()
    check_operators(raw, tables["operators"], ck)
    check_overlap(raw, tables["overlap"], ck)
    check_idle(raw, tables["idle"], report, ck)
    check_phases(raw, tables["phases"], ck)
    check_memory(raw, j, tables["memory"], ck)
    efficiency = check_efficiency(raw, tables["gpu_ops"], ck)
    print(f"{args.raw} rank {raw.rank}: {len(raw.steps)} step(s), {ck.checked} figures checked "
          f"({efficiency} kernel efficiency means), {len(ck.failures)} off")
    for f in ck.failures[:40]:
        print("  " + f)
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
