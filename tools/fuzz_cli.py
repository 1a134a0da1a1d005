#!/usr/bin/env python3
"""Mutation fuzzing of dpro-replay's inputs: every run must end with exit code 0 or 2 (never an
abort, a signal or a hang), and print no sanitizer report.

  python3 tools/fuzz_cli.py [--binary B] [--runs N] [--seed S] {model,csv,config,trace,native,comm,report,all}

  model    the cost model file's header (each field set to a bad value) and truncated payloads
  csv      `costmodel predict` rows with bad dimension values, and bad Latency and Device values
  config   cluster and device spec files (each field set to a bad value), --set, --ranks, --bucket-mb
  trace    Kineto traces of traces/hta with random events' fields changed, duplicated, deleted (some
           runs with --device, some with --iteration-marker)
  native   a dpro-profile native trace with random bytes changed, cut or inserted
  comm     collective what-ifs on bad message sizes: the A100 trace's NCCL kernel arguments
           (message size, dtype, group), its distributedInfo and base time, and DLRM's host
           execution traces (--comm-sizes) mutated
  report   `compare` on replay reports (replay --json of a bundled trace, plain and with a what-if)
           with random fields set to bad values or deleted, and cut

For sanitizer findings build dpro-replay with -fsanitize=address,undefined (see docs/replay.md)
and pass it as --binary; ASAN_OPTIONS=detect_leaks=0 keeps LibTorch's leaks out of the reports.
Prints one line per finding and a summary line per target; exit code 1 if anything was found.
"""
import argparse
import copy
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD = [None, -1, 0, 2**31, 2**63, 1e300, -1e300, 1e-300, "x", "", [], {}, True, 0.5]
findings = 0


def run(args, label, timeout=120, stdin=None):
    """Runs the binary; reports a finding unless it exits 0 or 2 cleanly. Returns (rc, stdout)."""
    global findings
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        rc, out, err = "timeout", "", ""
    sanitizer = "runtime error:" in err or "Sanitizer" in err
    if rc not in (0, 2) or sanitizer:
        findings += 1
        where = next((l for l in err.splitlines() if "runtime error" in l or "ERROR" in l), err.strip()[-300:])
        print(f"FINDING {label}: exit {rc}: {where}", flush=True)
    return rc, out


def json_paths(o, prefix=()):
    if isinstance(o, dict):
        # Below the top level, in a map of many like members (families), the first stands for the others.
        for k, v in list(o.items())[:1] if prefix and len(o) > 6 else o.items():
            yield from json_paths(v, prefix + (k,))
    elif isinstance(o, list) and o:
        yield from json_paths(o[0], prefix + (0,))  # the first element stands for the others
    if prefix:
        yield prefix


def set_path(o, path, value):
    for k in path[:-1]:
        o = o[k]
    if value is None:
        del o[path[-1]]
    else:
        o[path[-1]] = value


def fuzz_model(a, tmp):
    model = os.path.join(ROOT, "data/costmodel/model.dpcm")
    data = open(model, "rb").read()
    magic = b"DPROCM01\n"
    eol = data.index(b"\n", len(magic))
    header, payload = json.loads(data[len(magic):eol]), data[eol + 1:]
    csv = os.path.join(tmp, "ops.csv")
    open(csv, "w").write("OPName,B,M,N,K\nbmm,8,512,512,512\nlinear,64,1,1024,1024\n")
    path = os.path.join(tmp, "m.dpcm")
    n = 0

    def attempt(head, body, label):
        nonlocal n
        n += 1
        text = head if isinstance(head, bytes) else json.dumps(head).encode()
        open(path, "wb").write(magic + text + b"\n" + body)
        run([a.binary, "costmodel", "--model", path, "predict", "--device", "H100-SXM5-80GB", csv], label)

    for p in list(json_paths(header)):
        for v in BAD:
            h = copy.deepcopy(header)
            set_path(h, p, v)
            attempt(h, payload, f"model header {p}={v!r}")
    for cut in (0, 10, len(payload) // 2, len(payload) - 1):
        attempt(header, payload[:cut], f"model payload cut at {cut}")
    attempt(b'{"format":', payload, "model header not JSON")
    print(f"model: {n} runs", flush=True)


def fuzz_csv(a, tmp):
    families = {"bmm": ["B", "M", "N", "K"], "linear": ["B", "M", "N", "K"], "add": ["B", "H"],
                "softmax": ["B", "H"],
                "conv": ["B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"]}
    good = {"bmm": [8, 512, 512, 512], "linear": [1, 64, 1024, 1024], "add": [1024, 1024], "softmax": [1024, 1024],
            "conv": [8, 64, 64, 3, 56, 1, 1]}
    values = ["0", "-1", "1e300", "nan", "inf", "9223372036854775807", "18446744073709551616", "1.5", "0x10", "",
              " 3", "abc", "4294967296", "1099511627776"]
    path = os.path.join(tmp, "c.csv")
    n = 0
    for op, cols in families.items():
        for i, col in enumerate(cols):
            for v in values:
                row = [str(x) for x in good[op]]
                row[i] = v
                open(path, "w").write(f"OPName,{','.join(cols)}\n{op},{','.join(row)}\n")
                n += 1
                rc, out = run([a.binary, "costmodel", "predict", "--device", "T4", path], f"csv {op}.{col}={v!r}")
                if rc == 0:
                    last = out.strip().splitlines()[-1].split(",")[-1]
                    if last and not (0 < float(last) < 1e12):
                        global findings
                        findings += 1
                        print(f"FINDING csv {op}.{col}={v!r}: predicted {last} ms", flush=True)
    # The score line against a measured Latency (and the Device it names): bad values are left
    # out and counted, never a crash.
    for v in values:
        for device in ("Tesla T4", v):
            open(path, "w").write(f"OPName,Latency,Device,B,H\nadd,{v},{device},1024,1024\nadd,0.05,Tesla T4,64,64\n")
            n += 1
            run([a.binary, "costmodel", "predict", "--device", "T4", path], f"csv Latency={v!r} Device={device!r}")
    print(f"csv: {n} runs", flush=True)


def fuzz_config(a, tmp):
    trace = os.path.join(ROOT, "traces/dlrm-8xV100")
    sizes = os.path.join(ROOT, "tests/comm/data/dlrm-host-et")
    n = 0
    for kind, src, flag, name, extra in (
            ("cluster", "configs/clusters", "--clusters-dir", "dgx-a100", ["--cluster", "dgx-a100", "--comm-sizes", sizes]),
            ("device", "configs/devices", "--device-specs", "L4", ["--device", "L4"])):
        base = json.load(open(os.path.join(ROOT, src, name + ".json")))
        directory = os.path.join(tmp, kind)
        for p in list(json_paths(base)):
            for v in BAD:
                shutil.rmtree(directory, ignore_errors=True)
                shutil.copytree(os.path.join(ROOT, src), directory)
                c = copy.deepcopy(base)
                set_path(c, p, v)
                json.dump(c, open(os.path.join(directory, name + ".json"), "w"))
                n += 1
                run([a.binary, "replay", "-q", "--json", "-", flag, directory] + extra + [trace], f"{kind} {p}={v!r}")
    for key in ("network.inter_node_gbps", "network.intra_node_gbps", "network.inter_node_latency_us",
                "network.intra_node_latency_us", "cluster.gpus_per_node", "bogus"):
        for v in ("-1", "0", "nan", "inf", "1e300", "1e-300", "x", "", "3"):
            n += 1
            run([a.binary, "replay", "-q", "--json", "-", "--set", f"{key}={v}", "--comm-sizes", sizes, trace],
                f"--set {key}={v}")
    for v in ("0", "-1", "3", "9", "4294967296", "x"):
        n += 1
        run([a.binary, "replay", "-q", "--json", "-", "--ranks", v, "--comm-sizes", sizes, trace], f"--ranks {v}")
    for v in ("0", "-1", "nan", "inf", "1e-300", "1e300", "x"):
        n += 1
        run([a.binary, "replay", "-q", "--json", "-", "--bucket-mb", v, "--comm-sizes", sizes, trace], f"--bucket-mb {v}")
    print(f"config: {n} runs", flush=True)


def fuzz_trace(a, tmp):
    rnd = random.Random(a.seed)
    names = ["alexnet-a100-single.json.gz", "cuda-event-sync-multistream.json.gz", "no-distributed-info.json.gz",
             "sampled-ws128-rank0.json.gz", "triton.json.gz", "simple-add-kineto.json.gz"]
    docs = {s: json.load(gzip.open(os.path.join(ROOT, "traces/hta", s))) for s in names}
    values = BAD + ["1" * 5000, float("nan")]
    path = os.path.join(tmp, "t.json")
    for it in range(a.runs):
        src = rnd.choice(names)
        d = copy.deepcopy(docs[src])
        ev = d["traceEvents"]
        what = []
        for _ in range(rnd.randint(1, 4)):
            m = rnd.random()
            if m < 0.55 and ev:
                e = rnd.choice(ev)
                target = e["args"] if isinstance(e.get("args"), dict) and e["args"] and rnd.random() < 0.4 else e
                k, v = rnd.choice(list(target.keys())), rnd.choice(values)
                set_path(target, (k,), v)
                what.append(f"{e.get('cat')}.{k}={str(v)[:12]}")
            elif m < 0.65 and ev:
                ev.insert(rnd.randrange(len(ev)), copy.deepcopy(rnd.choice(ev)))
                what.append("duplicate")
            elif m < 0.75 and ev:
                k = rnd.randint(1, max(1, len(ev) // 3))
                for _ in range(k):
                    ev.pop(rnd.randrange(len(ev)))
                what.append(f"delete {k}")
            elif m < 0.85:
                k = rnd.choice([k for k in d if k != "traceEvents"] or ["x"])
                d[k] = rnd.choice(values)
                what.append(f"top {k}")
            elif len(ev) > 1:
                i, j = rnd.randrange(len(ev)), rnd.randrange(len(ev))
                if "ts" in ev[i] and "ts" in ev[j]:
                    ev[i]["ts"], ev[j]["ts"] = ev[j]["ts"], ev[i]["ts"]
                    what.append("swap ts")
        text = json.dumps(d)
        if rnd.random() < 0.05:
            text = text[:rnd.randrange(len(text))]
            what.append("cut")
        open(path, "w").write(text)
        args = [a.binary, "replay", "-q", "--json", "-", path]
        if rnd.random() < 0.3:
            args += ["--device", "H100-SXM5-80GB"]
        if rnd.random() < 0.2:
            args += ["--iteration-marker", rnd.choice(["*", "aten::*", "*forward*", "ProfilerStep#*"])]
        run(args, f"trace #{it} {src} {what} {args[5:]}")
    print(f"trace: {a.runs} runs (seed {a.seed})", flush=True)


def fuzz_native(a, tmp):
    rnd = random.Random(a.seed)
    data = open(os.path.join(ROOT, "tests/profiler/data/sample_v1_0.dpro"), "rb").read()
    path, out = os.path.join(tmp, "f.dpro"), os.path.join(tmp, "f.json")
    for it in range(a.runs):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 6)):
            m, i = rnd.random(), rnd.randrange(len(b))
            if m < 0.5:
                b[i] = rnd.randrange(256)
            elif m < 0.7:
                b[i:i + 8] = bytes([rnd.choice([0, 0xFF])]) * len(b[i:i + 8])
            elif m < 0.85:
                del b[max(1, i):]
            else:
                j = rnd.randrange(len(b))
                b[i:i] = b[j:j + rnd.randint(1, 64)]
        open(path, "wb").write(b)
        run([a.binary, "replay", "-q", "--json", "-", path], f"native #{it} replay")
        run([a.binary, "convert", path, "-o", out, "--force", "-q"], f"native #{it} convert")
    print(f"native: {a.runs} x 2 runs (seed {a.seed})", flush=True)


def fuzz_comm(a, tmp):
    rnd = random.Random(a.seed)
    values = BAD + [2**40, 2**62, -2**62, "[0, 1, 1]", "[0, -1]", "[0, 99]", "[]", "Float8", "nope",
                    "gather", "scatter"]
    whatif = ["--cluster", "dgx-a100", "--ranks", "8", "--set", "network.intra_node_gbps=100"]
    # 1. The A100 trace: one argument of its NCCL kernels set to a bad value, in every kernel or in one.
    doc = json.load(gzip.open(os.path.join(ROOT, "traces/hta/a100-ws2-rank0-nccl.json.gz")))
    coll = [i for i, e in enumerate(doc["traceEvents"]) if "Collective name" in e.get("args", {})]
    keys = sorted({k for i in coll for k in doc["traceEvents"][i]["args"]})
    path, n = os.path.join(tmp, "a100.json"), 0
    for k in keys:
        for v in values:
            d = copy.deepcopy(doc)
            for i in (coll if rnd.random() < 0.5 else [rnd.choice(coll)]):
                if k in d["traceEvents"][i]["args"] or v is not None:
                    set_path(d["traceEvents"][i]["args"], (k,), v)
            open(path, "w").write(json.dumps(d))
            n += 1
            run([a.binary, "replay", "-q", "--json", "-", *whatif, path], f"comm a100 args.{k}={str(v)[:16]}")
    # The rank metadata: distributedInfo's fields and the base time.
    for path in [("distributedInfo", k) for k in doc["distributedInfo"]] + [("baseTimeNanoseconds",)]:
        for v in values:
            d = copy.deepcopy(doc)
            set_path(d, path, v)
            open(os.path.join(tmp, "a100.json"), "w").write(json.dumps(d))
            n += 1
            run([a.binary, "replay", "-q", "--json", "-", *whatif, os.path.join(tmp, "a100.json")],
                f"comm a100 {'.'.join(path)}={str(v)[:16]}")
    # 2. DLRM with --comm-sizes: one host execution trace's nccl:* nodes (or the file's shape) changed.
    et_dir = os.path.join(ROOT, "tests/comm/data/dlrm-host-et")
    ets = {f: json.load(gzip.open(os.path.join(et_dir, f))) for f in sorted(os.listdir(et_dir)) if f.endswith(".gz")}
    trace = os.path.join(ROOT, "traces/dlrm-8xV100")
    mut = os.path.join(tmp, "et")
    for it in range(a.runs):
        shutil.rmtree(mut, ignore_errors=True)
        os.makedirs(mut)
        victim = rnd.choice(sorted(ets))
        for f in ets:
            if f != victim:
                shutil.copy(os.path.join(et_dir, f), mut)
        d = copy.deepcopy(ets[victim])
        nccl = [x for x in d["nodes"] if str(x.get("name", "")).startswith("nccl:")]
        what = []
        for _ in range(rnd.randint(1, 3)):
            m, node, v = rnd.random(), rnd.choice(nccl), rnd.choice(values)
            if not isinstance(d["nodes"], list) or node not in d["nodes"]:
                break  # replaced by an earlier mutation of this run
            if m < 0.45 and isinstance(node.get("inputs"), list) and node["inputs"]:
                t = node["inputs"][0]
                j = rnd.randrange(len(t)) if isinstance(t, list) and t else None
                if j is not None:
                    t[j] = v if v is not None else 0
                    what.append(f"inputs[0][{j}]={str(v)[:12]}")
            elif m < 0.8:
                k = rnd.choice(["name", "id", "inputs"])
                set_path(node, (k,), v)
                what.append(f"{k}={str(v)[:12]}")
            elif m < 0.9:
                d["nodes"][d["nodes"].index(node)] = v
                what.append(f"node={str(v)[:12]}")
            else:
                d["nodes"] = v
                what.append(f"nodes={str(v)[:12]}")
        open(os.path.join(mut, victim[:-3]), "w").write(json.dumps(d))
        run([a.binary, "replay", "-q", "--json", "-", "--ranks", "16", "--comm-sizes", mut, trace],
            f"comm host-et #{it} {victim} {what}")
    print(f"comm: {n} runs on the A100 trace's arguments, {a.runs} on host execution traces (seed {a.seed})",
          flush=True)


def fuzz_report(a, tmp):
    rnd = random.Random(a.seed)
    trace = os.path.join(ROOT, "traces/hta/cuda-event-sync.json.gz")
    docs = []
    for extra in ([], ["--device", "H100-SXM5-80GB", "--origin-device", "A100-SXM4-80GB"]):
        rc, out = run([a.binary, "replay", "-q", "--json", "-", trace] + extra, f"report: replay {extra}")
        if rc != 0:
            print("report: the replay that makes the reports failed", flush=True)
            return
        docs.append(json.loads(out))
    base, path = os.path.join(tmp, "base.json"), os.path.join(tmp, "r.json")
    json.dump(docs[0], open(base, "w"))
    for it in range(a.runs):
        d = copy.deepcopy(rnd.choice(docs))
        paths = list(json_paths(d))
        what = []
        for _ in range(rnd.randint(1, 3)):
            p, v = rnd.choice(paths), rnd.choice(BAD + [2**64 - 1, -2**63])
            try:
                set_path(d, p, v)
                what.append(f"{'.'.join(map(str, p))}={str(v)[:12]}")
            except (KeyError, IndexError, TypeError):
                pass
        text = json.dumps(d)
        if rnd.random() < 0.1:
            text = text[:rnd.randrange(len(text))]
            what.append("cut")
        open(path, "w").write(text)
        order = [base, path] if rnd.random() < 0.5 else [path, base]
        run([a.binary, "compare", "--json", "-"] + order, f"report #{it} {what}")
    print(f"report: {a.runs} runs (seed {a.seed})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=["model", "csv", "config", "trace", "native", "comm", "report", "all"])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/tools/dpro-replay/dpro-replay"))
    ap.add_argument("--runs", type=int, default=200, help="mutations for trace, native, report and comm's host execution traces (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        print(f"fuzz_cli: {a.binary}: not an executable (build first, or pass --binary)", file=sys.stderr)
        return 2
    targets = ["model", "csv", "config", "trace", "native", "comm", "report"] if a.target == "all" else [a.target]
    with tempfile.TemporaryDirectory(prefix="dpro-fuzz-") as tmp:
        for t in targets:
            globals()["fuzz_" + t](a, tmp)
    print(f"findings: {findings}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
