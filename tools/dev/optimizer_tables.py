#!/usr/bin/env python3
"""The optimizer's tables in docs/optimizer.md: for bundled traces, under their own cluster and
under a slow network, the plan `dpro-replay optimize` chooses with each strategy alone and with all
of them, its predicted median step against the baseline's, and its decisions.

Usage: tools/dev/optimizer_tables.py [--binary build/tools/dpro-replay/dpro-replay] [--budget 150]
                                    [--only SUBSTRING ...]  (only the traces whose path has one)
Prints Markdown tables on stdout; every figure comes from a run of the binary made here.
"""
import argparse
import json
import subprocess
import sys

TRACES = [
    ("dlrm-8xV100 (8 ranks)", "traces/dlrm-8xV100"),
    ("a100-ws2 rank 0", "traces/hta/a100-ws2-rank0-nccl.json.gz"),
    ("h100 resnet50", "traces/h100/resnet50"),
    ("h100 gpt2", "traces/h100/gpt2"),
    ("h100 bert-ddp", "traces/h100/bert-ddp"),
]
SLOW = ["--set", "cluster.gpus_per_node=1", "--set", "network.inter_node_gbps=1.25"]
STRATEGIES = ["buckets", "partition", "compression", "precision", "op_fusion", "all"]


def optimize(binary, trace, strategies, budget, extra):
    cmd = [binary, "optimize", "-q", trace, "--budget", str(budget), "--json", "-"] + extra
    if strategies != "all":
        cmd += ["--strategies", strategies]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 2 and "nothing to search" in r.stderr:
        return None
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def summary(decisions):
    parts, chains = [], 0
    for d in decisions:
        if d["strategy"] == "op_fusion":
            chains += 1
        elif d["strategy"] == "buckets":
            parts.append(f"buckets {d['value']} MiB")
        elif d["strategy"] == "partition":
            parts.append(f"partition [{d['value']}]")
        elif d["strategy"] == "precision":
            parts.append(f"precision {d.get('subject', 'all')} {d['value']}")
        else:
            parts.append(f"compression {d['value']}")
    if chains:
        parts.append(f"{chains} fusion chains")
    return "; ".join(parts) or "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/tools/dpro-replay/dpro-replay")
    ap.add_argument("--budget", type=int, default=150)
    ap.add_argument("--only", nargs="*", default=[], help="only the traces whose path contains one of these")
    args = ap.parse_args()
    print(f"Budget {args.budget} plans per search, seed 1. Cells: predicted median step change (chosen plan).\n")
    for cond_name, extra in (("the trace's own cluster", []), ("10 Gb/s Ethernet, one GPU per node", SLOW)):
        print(f"### Under {cond_name}\n")
        print("| trace | baseline | " + " | ".join(STRATEGIES) + " |")
        print("|---|---|" + "---|" * len(STRATEGIES))
        for name, trace in TRACES:
            if extra and trace.startswith("traces/h100"):
                continue  # single-GPU captures: no all-reduce for a network to slow
            if args.only and not any(o in trace for o in args.only):
                continue
            cells, baseline = [], None
            for s in STRATEGIES:
                j = optimize(args.binary, trace, s, args.budget, extra)
                if j is None:
                    cells.append("n/a")
                    continue
                baseline = j["baseline_ns"]
                step = j["plan"]["predicted"]["step_ns"]
                change = 100.0 * (step - baseline) / baseline
                cells.append(f"{change:+.1f} % ({summary(j['plan']['decisions'])})")
            print(f"| {name} | {baseline / 1e6:.3f} ms | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
