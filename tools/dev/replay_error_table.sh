#!/usr/bin/env bash
# Prints the README's table of replay errors: every bundled Kineto trace, replayed with its
# measured op costs, measured vs predicted step time per rank and job (for a trace without
# ProfilerStep#N, of the whole trace).
# Usage: tools/dev/replay_error_table.sh [path/to/dpro-replay]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/tools/dpro-replay/dpro-replay}
traces=(traces/dlrm-8xV100 traces/hta/a100-ws2-rank0-nccl.json.gz traces/hta/amd-mi250-toy.json.gz
        traces/hta/cpu-only.json.gz traces/hta/cuda-event-sync.json.gz traces/hta/no-distributed-info.json.gz
        traces/hta/no-rank.json.gz traces/hta/sampled-ws128-rank0.json.gz traces/hta/sampled-ws128-rank1.json.gz
        traces/hta/triton.json.gz traces/hta/alexnet-a100-single.json.gz traces/hta/cupti-counters.json.gz
        traces/hta/cuda-event-sync-multistream.json.gz traces/hta/simple-add-kineto.json.gz)
echo "| trace | step | ranks | measured job (ms) | predicted job (ms) | job error | worst rank error |"
echo "|---|---|---|---|---|---|---|"
for t in "${traces[@]}"; do
  "$bin" replay -q --json - "$t" | python3 -c '
import json, sys
name = sys.argv[1]
for it in json.load(sys.stdin)["iterations"]:
    job = it["job"]
    worst = max(abs(r["error"]) for r in it["ranks"])
    print("| %s | %s | %d | %.3f | %.3f | %+.3f%% | %.3f%% |" % (name, "whole trace" if it["whole_trace"] else it["name"], len(it["ranks"]),
          job["measured_ns"] / 1e6, job["predicted_ns"] / 1e6, 100 * job["error"], 100 * worst))
' "$t"
done
