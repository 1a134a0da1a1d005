#!/usr/bin/env bash
# Configures and builds dpro in ./build (Release). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" > build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build -j "$jobs" >> build.log 2>&1 || { tail -50 build.log; exit 1; }
echo "build.sh: built into ./build (log: build.log)"
