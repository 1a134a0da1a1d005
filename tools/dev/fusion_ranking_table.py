#!/usr/bin/env python3
"""docs/optimizer.md's "Fusion candidates from the critical path" table: for bundled traces, the best
step an op-fusion-only search finds when op fusion's chains are ranked by their saving on or near
the critical path (the default) and by their predicted saving wherever they run, keeping 16, 8 and
4 chains (`bench_optimizer ranking`, BENCH_FUSION_CHAINS).

Usage: tools/dev/fusion_ranking_table.py [--bench build/tests/bench/bench_optimizer]
Prints a Markdown table on stdout (a few minutes on a 2-core machine); every figure comes from a run
of the bench made here.
"""
import argparse
import json
import os
import subprocess
import sys

# (trace, budget with 16 chains, budget with 8 and 4)
TRACES = [
    ("traces/dlrm-8xV100", 200, 100),
    ("traces/hta/a100-ws2-rank0-nccl.json.gz", 200, 100),
    ("traces/h100/resnet50", 100, 60),
    ("traces/h100/gpt2", 100, 60),
    ("traces/h100/bert-ddp", 100, 60),
    ("traces/h100/resnet50-bf16", 100, 60),
]


def run(bench, trace, budget, chains):
    env = dict(os.environ, BENCH_FUSION_CHAINS=str(chains))
    r = subprocess.run([bench, "ranking", trace, str(budget)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{bench} ranking {trace} {budget}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def cell(d):
    return f"{-d['by_slack_speedup_percent']:+.2f} / {-d['by_saving_speedup_percent']:+.2f} %"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build/tests/bench/bench_optimizer")
    a = ap.parse_args()
    print("| trace | 16 chains (budget): by slack / by saving, change of the step | 8 chains | 4 chains |")
    print("|---|---|---|---|")
    for trace, budget16, budget in TRACES:
        d16 = run(a.bench, trace, budget16, 16)
        d8 = run(a.bench, trace, budget, 8)
        d4 = run(a.bench, trace, budget, 4)
        print(f"| {trace.split('/')[-1]} | ({budget16}) {cell(d16)} | ({budget}) {cell(d8)} | ({budget}) {cell(d4)} |")


if __name__ == "__main__":
    main()
