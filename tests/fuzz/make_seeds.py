#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/seeds) from the bundled
traces, configs and cost model data: small cuts of real files, so that a seed runs in well under
a millisecond and the committed corpus stays small. Reproducible: the same sources give the
same seeds.

  tests/fuzz/make_seeds.py [--replay BUILD/tools/dpro-replay/dpro-replay]

--replay also writes the `compare` seeds (replay reports of two small bundled traces and a
what-if), a second `share_table` seed (a table fitted on the bundled subset) and the `plan` seeds
(plans that `optimize --plan-out` writes), made by that dpro-replay."""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def out_dir(target):
    d = os.path.join(CORPUS, target, "seeds")
    os.makedirs(d, exist_ok=True)
    os.makedirs(os.path.join(CORPUS, target, "regressions"), exist_ok=True)
    return d


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def write(target, name, data):
    with open(os.path.join(out_dir(target), name), "wb") as f:
        f.write(data)


NAME_CLASSES = ("nccl:", "nccl", "rccl", "profilerstep", "record_param_comms", "[memory]")


def name_class(e):
    """What of an event's name the importer and the loader look at: a collective's kernel
    (nccl/rccl), an NCCL range annotation ("nccl:"), a ProfilerStep span, PyTorch's
    record_param_comms op, a memory instant event; metadata events by their name."""
    name = str(e.get("name", ""))
    if e.get("ph") == "M":
        return name
    lower = name.lower()
    return next((c for c in NAME_CLASSES if lower.startswith(c)), "")


def signature(e):
    args = e.get("args")
    keys = tuple(sorted(args)) if isinstance(args, dict) else None
    return (e.get("ph"), e.get("cat"), name_class(e), keys, type(e.get("pid")).__name__)


def kineto_cut(path, per_signature=1, max_devices=2, max_name=160):
    """A small Kineto seed from a bundled trace: its top-level members (at most `max_devices`
    entries of deviceProperties) and, of its events, the first `per_signature` of each kind the
    importer tells apart (phase, category, name class, set of argument keys, text or number pid:
    `signature`), every ProfilerStep span and instant event, then what those refer to: the
    runtime call or kernel of the same correlation id, the flow events of that id (both ends)
    and the thread_name metadata of their threads; the first pair of events of one start time
    (of different and of equal durations) and the first repeated event. Events stay in file
    order, laid out as Kineto writes them (`kineto_layout`). Names are cut to `max_name`
    characters, process groups to 3 of at most 8 ranks, the free-text INFO dropped."""
    trace = json.loads(read(path))
    events = trace["traceEvents"]
    if isinstance(trace.get("deviceProperties"), list):
        trace["deviceProperties"] = trace["deviceProperties"][:max_devices]
    counts, keep = {}, set()
    for i, e in enumerate(events):
        sig = signature(e)
        counts[sig] = counts.get(sig, 0) + 1
        if counts[sig] <= per_signature or name_class(e) == "profilerstep" or e.get("ph") in ("i", "I"):
            keep.add(i)
    by_corr, by_flow = {}, {}
    for i, e in enumerate(events):
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if e.get("ph") == "X" and "correlation" in args:
            by_corr.setdefault(args["correlation"], []).append(i)
        if e.get("ph") in ("s", "f") and "id" in e:
            by_flow.setdefault((e.get("cat"), e["id"]), []).append(i)
    for i in sorted(keep):  # partners of the kept events (one level: enough to pair them)
        e = events[i]
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if e.get("ph") == "X" and "correlation" in args:
            keep.update(by_corr.get(args["correlation"], [])[:2])
            keep.update(by_flow.get(("ac2g", args["correlation"]), [])[:2])
        if e.get("ph") in ("s", "f") and "id" in e:
            keep.update(by_flow.get((e.get("cat"), e["id"]), [])[:2])
            if e.get("cat") == "ac2g":
                keep.update(by_corr.get(e["id"], [])[:2])
    # Events of one start time (the sort's ties, longer first, then file order) and a repeat
    # (event_checks' drop_repeated_events): the first pair of each relation the trace has.
    pairs, first_at = {}, {}
    for i, e in enumerate(events):
        if e.get("ph") != "X" or not isinstance(e.get("ts"), (int, float)):
            continue
        for j in first_at.get(e["ts"], []):
            o = events[j]
            if o.get("dur") != e.get("dur"):
                relation = "longer first"
            elif (o.get("name"), o.get("pid"), o.get("tid"), o.get("args")) != (e.get("name"), e.get("pid"),
                                                                                 e.get("tid"), e.get("args")):
                relation = "file order"
            else:
                relation = "repeat"
            pairs.setdefault(relation, (j, i))
        first_at.setdefault(e["ts"], []).append(i)
    for pair in pairs.values():
        keep.update(pair)
    threads = {(events[i].get("pid"), events[i].get("tid")) for i in keep}
    for i, e in enumerate(events):
        if e.get("ph") == "M" and e.get("name") == "thread_name" and (e.get("pid"), e.get("tid")) in threads:
            keep.add(i)
    trace["traceEvents"] = [events[i] for i in sorted(keep)]
    for e in trace["traceEvents"]:  # a kernel's name can be kilobytes of C++ template; the importer reads prefixes
        if isinstance(e.get("name"), str) and len(e["name"]) > max_name:
            e["name"] = e["name"][:max_name]
    trace.pop("INFO", None)  # a kilobyte of free text the importer skips as any unknown member (others stay)
    info = trace.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("pg_config"), list):
        info["pg_config"] = info["pg_config"][:3]
        for g in info["pg_config"]:
            if isinstance(g, dict) and isinstance(g.get("ranks"), list):
                g["ranks"] = g["ranks"][:8]
    return kineto_layout(trace)


def kineto_layout(trace):
    """JSON laid out as Kineto writes it (a member per line, an event per line, ", " and ": "
    between items), so that the seeds carry white space where the scanners meet it."""
    members = []
    for k, v in trace.items():
        if k == "traceEvents":
            v = "[\n  " + ",\n  ".join(json.dumps(e) for e in v) + "\n]"
        else:
            v = json.dumps(v)
        members.append(json.dumps(k) + ": " + v)
    return ("{\n  " + ",\n  ".join(members) + "\n}\n").encode()


# Kinds of event none of the bundled traces has, written by hand (each as the importer reads it,
# kineto_importer.cpp): begin/end pairs ("B"/"E", nested, and an "E" with no "B"), memory
# instant events ("[memory]", CUDA and CPU Device Type), async_cpu_to_gpu flows, a
# python_function span, a Process Group Ranks list truncated with "..." (completed from Global
# rank start/stride) and older category spellings ("Kernel", "Runtime", "Memcpy").
HAND_WRITTEN = {
    "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 40,
                        "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 40, "ranks": []}]},
    "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85000000000, "computeMajor": 9,
                          "computeMinor": 0, "numSms": 132}],
    "baseTimeNanoseconds": 1700000000000000000,
    "traceEvents": [
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "python main"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 7, "tid": 7, "ts": 100, "dur": 900},
        {"ph": "B", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": 7, "ts": 110,
         "args": {"External id": 5, "Input Dims": [[8, 16], [32, 16], [32]], "Input type": ["float", "float", "float"]}},
        {"ph": "B", "cat": "python_function", "name": "torch/nn/functional.py(12): linear", "pid": 7, "tid": 7,
         "ts": 112},
        {"ph": "E", "pid": 7, "tid": 7, "ts": 150},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 152, "dur": 5,
         "args": {"External id": 5, "cbid": 211, "correlation": 41}},
        {"ph": "s", "cat": "async_cpu_to_gpu", "id": 41, "pid": 7, "tid": 7, "ts": 152, "name": "launch"},
        {"ph": "E", "pid": 7, "tid": 7, "ts": 160},
        {"ph": "E", "pid": 7, "tid": 9, "ts": 161},
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 170, "s": "t",
         "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 4096, "Total Allocated": 8192,
                  "Total Reserved": 20971520}},
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 171, "s": "t",
         "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 0}},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 7, "ts": 180, "dur": 40,
         "args": {"External id": 6, "Collective name": "allreduce", "Group size": 40, "dtype": "Float",
                  "In msg nelems": 1024, "Out msg nelems": 1024, "Process Group Name": "0",
                  "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, "
                                         "20, 21, 22, 23, 24, 25, 26, 27, 28, 29, ...]",
                  "Global rank start": 0, "Global rank stride": 1}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 190, "dur": 5,
         "args": {"External id": 6, "cbid": 211, "correlation": 42}},
        {"ph": "X", "cat": "Kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         "pid": 0, "tid": 20, "ts": 200, "dur": 300,
         "args": {"External id": 6, "device": 0, "stream": 20, "correlation": 42, "grid": [4, 1, 1],
                  "block": [640, 1, 1], "Collective name": "allreduce", "In msg size": 4096, "Out msg size": 4096}},
        {"ph": "f", "cat": "async_cpu_to_gpu", "id": 41, "pid": 0, "tid": 20, "ts": 400, "bp": "e", "name": "launch"},
        {"ph": "X", "cat": "Kernel", "name": "sm90_xmma_gemm_f32f32_tf32f32", "pid": 0, "tid": 7, "ts": 400, "dur": 50,
         "args": {"device": 0, "stream": 7, "correlation": 41, "grid": [1, 2, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 460,
         "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 43, "bytes": 4096}},
    ],
}


def kineto():
    cuts = {"a100-ws2-rank0-nccl": "traces/hta/a100-ws2-rank0-nccl.json.gz",
            "dlrm-worker0": "traces/dlrm-8xV100/worker0_step_12.1694128201545.pt.trace.json.gz",
            "cpu-only": "traces/hta/cpu-only.json.gz",
            "cuda-event-sync": "traces/hta/cuda-event-sync.json.gz",
            "triton": "traces/hta/triton.json.gz",
            "simple-add-kineto": "traces/hta/simple-add-kineto.json.gz",
            "amd-mi250-toy": "traces/hta/amd-mi250-toy.json.gz",
            "cupti-counters": "traces/hta/cupti-counters.json.gz",
            "sampled-ws128-rank1": "traces/hta/sampled-ws128-rank1.json.gz"}
    seeds = out_dir("kineto")
    for name in os.listdir(seeds):  # the seeds are exactly what this writes
        os.remove(os.path.join(seeds, name))
    for name, path in cuts.items():
        write("kineto", name + "-cut.json", kineto_cut(path))
    write("kineto", "hand-written-begin-end-memory.json", json.dumps(HAND_WRITTEN, separators=(",", ":")).encode())
    # One input past the stream's first 64 KiB read (json_stream.h), so that the fuzzer reaches its
    # refill and buffer growth and an event cut by a read: the simple-add cut after a long INFO
    # member (the a100 trace's INFO text repeated to 63,000 characters, then cut there).
    trace = json.loads(kineto_cut("traces/hta/simple-add-kineto.json.gz").decode())
    info = json.loads(read("traces/hta/a100-ws2-rank0-nccl.json.gz"))["INFO"]
    text = info if isinstance(info, str) else json.dumps(info)
    long_info = {"INFO": (text * (63000 // len(text) + 1))[:63000]}
    write("kineto", "simple-add-kineto-cut-after-long-member.json",
          kineto_layout(dict(long_info, **trace)))


def varint(data, pos):
    v, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7


def native_cut(path, per_type, string_limit):
    """Preamble, header, metadata, devices and the first `string_limit` records' string
    definitions, then the first `per_type` records of every other type, in file order, and the
    footer."""
    data = read(path)
    out, pos, counts, index = bytearray(data[:12]), 12, {}, 0
    while pos < len(data):
        start = pos
        rtype = data[pos]
        n, pos = varint(data, pos + 1)
        pos += n
        counts[rtype] = counts.get(rtype, 0) + 1
        keep = rtype in (1, 3, 4, 19) or (rtype == 2 and index < string_limit) or (
            rtype not in (2,) and counts[rtype] <= per_type)
        if keep:
            out += data[start:pos]
        index += 1
    return bytes(out)


def native():
    write("native", "bert-ddp-norank.dpro", read("traces/h100/bert-ddp/norank.vm.pid1548.dpro.gz"))
    write("native", "bert-ddp-rank0-cut.dpro",
          native_cut("traces/h100/bert-ddp/rank0.local0.vm.pid1574.dpro.gz", 25, 400))
    write("native", "resnet50-nvtx-step-cut.dpro",
          native_cut("traces/h100/resnet50-emit-nvtx-step/norank.vm.pid601.dpro.gz", 25, 300))
    write("native", "resnet18-gloo2-rank1-cut.dpro",
          native_cut("traces/h100/resnet18-gloo2/rank1.local1.vm.pid1719.dpro.gz", 25, 300))


def fnv1a(data):
    h = 1469598103934665603
    for c in data:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def dump(header):
    # nlohmann's one-line dump of the writer (keys sorted, no spaces): model_file.cpp hashes it.
    return json.dumps(header, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def model_file():
    """The bundled model's header with a payload of five short sections in place of the networks'
    weights, hashed as format_model_file does (version 6), and the same as version 5 (no header
    hash)."""
    data = read("data/costmodel/model.dpcm")
    eol = data.index(b"\n", 9)
    header = json.loads(data[9:eol])
    sections = [b"main weights", b"unseen weights", b"kernel memory", b"plain memory", b"unseen memory"]
    payload = b"".join(sections)
    for field, s in zip(["weights_bytes", "unseen_weights_bytes", "memory_kernel_bytes", "memory_plain_bytes",
                         "memory_unseen_bytes"], sections):
        header[field] = len(s)
    header["payload_bytes"] = len(payload)
    header["payload_fnv1a"] = str(fnv1a(payload))
    header.pop("header_fnv1a", None)
    v5 = dict(header, version=5)
    header["header_fnv1a"] = str(fnv1a(dump(header).encode()))
    write("model_file", "model-v6-small-payload.dpcm", b"DPROCM01\n" + dump(header).encode() + b"\n" + payload)
    write("model_file", "model-v5-small-payload.dpcm", b"DPROCM01\n" + dump(v5).encode() + b"\n" + payload)


def csv():
    for path, lines in [("data/costmodel/subset/bmm.csv.gz", 20), ("data/costmodel/subset/softmax.csv.gz", 20),
                        ("data/costmodel/subset/add.csv.gz", 20),
                        ("data/costmodel/neusight-test/NVIDIA_A100-PCIE-40GB.csv.gz", 20)]:
        text = read(path).split(b"\n")
        write("csv", os.path.basename(path)[:-3], b"\n".join(text[:lines]) + b"\n")


def configs():
    for target, folder in [("cluster", "configs/clusters"), ("device_spec", "configs/devices")]:
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith(".json"):
                write(target, name, read(os.path.join(folder, name)))


def compare(replay):
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("simple-add-kineto", ["traces/hta/simple-add-kineto.json.gz"]),
                ("cuda-event-sync", ["traces/hta/cuda-event-sync.json.gz"]),
                ("simple-add-kineto-whatif", ["traces/hta/simple-add-kineto.json.gz", "--set", "host.cpu_speed=2"])]
        for name, args in runs:
            out = os.path.join(tmp, name + ".json")
            subprocess.run([replay, "replay", *[a if a.startswith("-") or "=" in a else os.path.join(ROOT, a)
                                               for a in args], "--json", out], check=True,
                           stdout=subprocess.DEVNULL)
            report = json.load(open(out))
            write("compare", name + ".json", json.dumps(report, separators=(",", ":")).encode())


def shares(replay):
    """The shipped roofline-share table, and (with --replay) a small one fitted on the bundled
    subset with the GEMM kernel-choice form, compact."""
    write("share_table", "shares.json", read("data/costmodel/shares.json"))
    if not replay:
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.json")
        # The data path relative to the checkout: the table's provenance records it, and the seed
        # is then the same in every checkout.
        subprocess.run([os.path.abspath(replay), "costmodel", "fit-shares", "--data", "data/costmodel/subset",
                        "--gemm-waves", "tile+wave", "--gemm-likely-split-k", "-o", out], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        write("share_table", "subset-gemm-waves.json", json.dumps(json.load(open(out)), separators=(",", ":")).encode())


def device_profile():
    """Two device profiles laid out as device_profile_json writes them (keys sorted, indent 2): a
    whole one, with every table (the three copy directions, GEMMs of each dtype and math mode, the
    six kernels, stand-in errors of both signs; the figures are of the order an H100 gives), and the
    smallest one the reader takes (no tables) with a key of a later version, which it ignores."""
    copies = [{"kind": kind, "latency_ns": lat, "bandwidth_gbps": bw,
               "samples": [{"bytes": b, "ns": round(lat + b / bw)} for b in (4096, 1 << 20, 1 << 26)]}
              for kind, lat, bw in (("h2d", 1800.0, 24.5), ("d2h", 1900.0, 25.25), ("d2d", 2500.0, 1450.0))]
    gemms = []
    for m, n, k, batch, dtype, math, ns in ((1024, 1024, 1024, 1, "fp32", "default", 41230),
                                           (4096, 4096, 4096, 1, "fp32", "tf32", 412345),
                                           (4096, 4096, 4096, 1, "bf16", "default", 190211),
                                           (1024, 1024, 64, 96, "fp16", "default", 30125),
                                           (2304, 8192, 768, 1, "fp64", "default", 980004)):
        gemms.append({"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype, "math": math, "ns": ns,
                      "tflops": 2 * m * n * k * batch / ns / 1000})
    kernels = [{"kernel": name, "param": param, "latency_ns": lat, "ns_per_element": slope,
                "samples": [{"elements": e, "ns": round(lat + e * slope)} for e in (1 << 16, 1 << 20, 1 << 24)]}
               for name, param, lat, slope in (("cast_fp32_bf16", 0, 2500.0, 0.004), ("cast_fp32_fp16", 0, 2480.0, 0.0041),
                                               ("topk", 0.01, 9100.0, 0.031), ("randomk", 0.01, 4200.0, 0.012),
                                               ("signpack", 0, 3100.0, 0.006), ("powersgd", 4, 15000.0, 0.05))]
    standin = [{"blocks": b, "threads": t, "requested_ns": req, "measured_ns": meas, "error_ns": meas - req,
                "error_pct": 100.0 * (meas - req) / req}
               for b, t, req, meas in ((1, 1, 1000, 2900), (2000, 256, 5000, 5300), (132, 1024, 100000, 99000))]
    whole = {"format": "dpro-device-profile", "version": 1, "device": "NVIDIA H100 80GB HBM3",
             "date": "2026-11-26T15:00:00Z", "repetitions": 7, "warmup": 2,
             "launch": {"gpu_ns_per_launch": 2100.5, "host_ns_per_launch": 2500.0, "launches": 200},
             "copies": copies, "gemms": gemms, "kernels": kernels, "standin": standin}
    smallest = {"format": "dpro-device-profile", "version": 1, "device": "A100-SXM4-40GB", "date": "2026-11-27T00:00:00Z",
                "repetitions": 1, "warmup": 0, "launch": {"gpu_ns_per_launch": 0, "host_ns_per_launch": 0, "launches": 0},
                "nccl": {"later": True}}
    for name, profile in (("h100-whole.json", whole), ("smallest.json", smallest)):
        write("device_profile", name, (json.dumps(profile, indent=2, sort_keys=True) + "\n").encode())


# Tolerances files: the example of docs/optimizer.md ("Per-layer tolerances"), one of every kind
# of match and field (parts of a class, a bucket past the first, a method with its parameter, a
# bare method, fp32 and as_recorded), the smallest, and parts by layer.
TOLERANCES = {
    "docs-example.json": {"rules": [
        {"match": "gemm", "precision": ["tf32", "bf16"]},
        {"match": "conv", "max_risk": 0.01},
        {"match": "bucket:0", "compression": ["none"]},
        {"match": "bucket:3", "compression": ["fp16", "bf16"]},
        {"match": "*", "max_risk": 0.2},
        {"match": "layer_norm", "fusion": False}]},
    "every-kind.json": {"rules": [
        {"match": "conv@0,-1", "precision": ["fp32", "as_recorded", "fp8"], "max_risk": 0.05},
        {"match": "gemm@-1", "precision": ["fp16"]},
        {"match": "bucket:12", "compression": ["topk:0.01", "powersgd", "randomk", "dgc", "efsignsgd"], "max_risk": 0.3},
        {"match": "*", "precision": ["bf16"], "compression": ["none", "fp16"], "fusion": True, "max_risk": 1e-3},
        {"match": "softmax", "fusion": False}]},
    "smallest.json": {"rules": [{"match": "*", "fusion": False}]},
    "layers.json": {"rules": [
        {"match": "conv#0,-1", "precision": ["tf32"]},
        {"match": "gemm#^-1", "max_risk": 0.05}]},
}


def tolerances():
    for name, rules in TOLERANCES.items():
        write("tolerances", name, (json.dumps(rules) + "\n").encode())


# A plan with every kind of decision, conditions and recorded tolerances, none of which a search of
# a small bundled trace decides together; its fingerprints are made up except the tolerances' one,
# which `plan` puts right (dpro-replay computes it, so it is written only with --replay).
HAND_PLAN = {
    "format": "dpro-plan", "version": 1,
    "trace": {"fingerprint": "0123456789abcdef", "ranks": 2, "ops": 1234},
    "conditions": {"device": "H100-SXM5-80GB", "origin_device": "A100-SXM4-40GB", "cluster": "dgx-h100",
                   "origin_cluster": "", "set": ["network.inter_node_gbps=25", "host.cpu_speed=2"],
                   "comm_sizes": ["et/rank0.json"], "ranks": 16},
    "decisions": [{"strategy": "buckets", "value": "25"},
                  {"strategy": "partition", "value": "1,3", "boundaries": [1, 3]},
                  {"strategy": "compression", "value": "none,fp16,topk:0.01"},
                  {"strategy": "precision", "subject": "gemm", "value": "bf16"},
                  {"strategy": "precision", "subject": "conv@-1,0", "value": "fp16"},
                  {"strategy": "precision", "subject": "conv@^-1,0", "value": "tf32"},
                  {"strategy": "op_fusion", "chain": ["void at::native::vectorized_elementwise_kernel<4>(int)",
                                                      "layer_norm_kernel"]}],
    "predicted": {"baseline_ns": 1000000, "step_ns": 900000, "risk": 0.15, "extra_memory_bytes": -4096,
                  "gains_ns": [1, 2, 3, 4, 5, 6, 7]},
    "search": {"seed": 1, "evaluations": 200, "strategies": ["buckets", "compression", "precision", "op_fusion", "partition"]},
    "tolerances": {"file": "tol.json", "fingerprint": "0000000000000000",
                   "rules": [{"match": "conv@-1,0", "precision": ["fp16", "bf16"]},
                             {"match": "bucket:1", "compression": ["fp16"]},
                             {"match": "*", "max_risk": 0.5}]},
}


def plan(replay):
    """Plans written by `dpro-replay optimize --plan-out` on the 2-rank NCCL trace (compression and
    buckets, with the docs' tolerances; a slower network so that compression pays), and the
    hand-written plan above with its tolerances' fingerprint put right (both need --replay: the
    fingerprint is dpro's hash). Without --replay: the hand-written plan as it is (the fuzz target
    puts the fingerprint right itself)."""
    hand = json.loads(json.dumps(HAND_PLAN))
    if not replay:
        write("plan", "hand-every-decision.json", (json.dumps(hand, indent=2, sort_keys=True) + "\n").encode())
        return
    trace = os.path.join(ROOT, "traces/hta/a100-ws2-rank0-nccl.json.gz")
    with tempfile.TemporaryDirectory() as tmp:
        tol = os.path.join(tmp, "tol.json")
        with open(tol, "w") as f:
            json.dump({"rules": hand["tolerances"]["rules"]}, f)
        runs = [("a100-nccl-buckets-compression.json", ["--strategies", "buckets,compression", "--budget", "50", "--seed", "1",
                                                        "--set", "network.inter_node_gbps=0.5",
                                                        "--set", "network.intra_node_gbps=0.5"]),
                ("a100-nccl-tolerances.json", ["--strategies", "buckets,compression", "--budget", "30", "--seed", "2",
                                               "--set", "network.inter_node_gbps=0.5",
                                               "--set", "network.intra_node_gbps=0.5", "--tolerances", tol])]
        for name, args in runs:
            out = os.path.join(tmp, name)
            subprocess.run([replay, "optimize", trace, *args, "--plan-out", out], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            p = json.load(open(out))
            if "tolerances" in p:
                p["tolerances"]["file"] = "tol.json"  # not the temporary folder's name
                hand["tolerances"]["fingerprint"] = p["tolerances"]["fingerprint"]
            write("plan", name, (json.dumps(p, indent=2, sort_keys=True) + "\n").encode())
    write("plan", "hand-every-decision.json", (json.dumps(hand, indent=2, sort_keys=True) + "\n").encode())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replay", help="dpro-replay, to write the compare seeds")
    a = p.parse_args()
    kineto()
    native()
    model_file()
    csv()
    configs()
    shares(a.replay)
    device_profile()
    tolerances()
    plan(a.replay)
    if a.replay:
        compare(a.replay)


if __name__ == "__main__":
    main()
