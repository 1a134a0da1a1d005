#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest). Exit code is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install.sh
bash tools/build.sh
cd build && ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
