#!/usr/bin/env bash
# Fresh machine -> a prediction: installs what is missing, builds, and replays the bundled
# 8-rank DLRM trace (8x V100), writing the simulated timeline to build/dlrm-timeline.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install.sh
bash tools/build.sh
./build/tools/dpro-replay/dpro-replay replay traces/dlrm-8xV100 --timeline build/dlrm-timeline.json --force
echo "quickstart: simulated timeline in build/dlrm-timeline.json (open it in https://ui.perfetto.dev)"
