#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/seeds) from the bundled
traces, configs and cost model data: small cuts of real files, so that a seed runs in well under
a millisecond and the committed corpus stays small. Reproducible: the same sources give the
same seeds.

  tests/fuzz/make_seeds.py [--replay BUILD/tools/dpro-replay/dpro-replay]

--replay also writes the `compare` seeds: replay reports of two small bundled traces and a
what-if, made by that dpro-replay."""
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


def kineto_cut(path, per_category):
    """The trace's top-level members and the first `per_category` events of each (ph, cat)."""
    trace = json.loads(read(path))
    counts, kept = {}, []
    for e in trace["traceEvents"]:
        key = (e.get("ph"), e.get("cat"))
        counts[key] = counts.get(key, 0) + 1
        if counts[key] <= per_category:
            kept.append(e)
    trace["traceEvents"] = kept
    return json.dumps(trace, separators=(",", ":")).encode()


def kineto():
    for name in ["cpu-only", "cuda-event-sync", "triton", "simple-add-kineto"]:
        write("kineto", name + ".json", read(f"traces/hta/{name}.json.gz"))
    write("kineto", "a100-ws2-rank0-nccl-cut.json", kineto_cut("traces/hta/a100-ws2-rank0-nccl.json.gz", 40))
    write("kineto", "dlrm-worker0-cut.json",
          kineto_cut("traces/dlrm-8xV100/worker0_step_12.1694128201545.pt.trace.json.gz", 40))


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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replay", help="dpro-replay, to write the compare seeds")
    a = p.parse_args()
    kineto()
    native()
    model_file()
    csv()
    configs()
    if a.replay:
        compare(a.replay)


if __name__ == "__main__":
    main()
