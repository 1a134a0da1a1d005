#!/usr/bin/env bash
# Fresh machine -> a prediction: installs what dpro-replay needs, builds only dpro-replay, replays
# the bundled 8-rank DLRM trace (8x V100) and then the same job as 8 one-GPU machines on 1 Gb/s
# Ethernet, writing the
# simulated timeline to build/dlrm-timeline.json. `bash tools/test.sh` installs and builds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage() { echo; echo "== quickstart [$1/4, $(( $(date +%s) - start )) s] $2"; }

stage 1 "packages (tools/install.sh run)"
bash tools/install.sh run
stage 2 "building dpro-replay (tools/build.sh --target dpro-replay)"
bash tools/build.sh --target dpro-replay
replay=./build/tools/dpro-replay/dpro-replay
stage 3 "replaying traces/dlrm-8xV100: where the step's time goes"
"$replay" replay traces/dlrm-8xV100 --timeline build/dlrm-timeline.json --force
stage 4 "what if the 8 GPUs were 8 machines on 1 Gb/s Ethernet? (--set cluster.gpus_per_node=1 --set network.inter_node_gbps=1)"
"$replay" replay traces/dlrm-8xV100 --set cluster.gpus_per_node=1 --set network.inter_node_gbps=1 |
  sed -n '/^what-if:/,$p'
echo
echo "quickstart: done in $(( $(date +%s) - start )) s; simulated timeline in build/dlrm-timeline.json"
echo "            (open it in https://ui.perfetto.dev); more: ./build/tools/dpro-replay/dpro-replay --help"
