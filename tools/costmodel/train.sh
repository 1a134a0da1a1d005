#!/usr/bin/env bash
# Retrains the shipped learned cost model (data/costmodel/model.dpcm) from measured operator
# latencies in the shared-data CSV schema, on the training side of the 80/20 split (seed 7)
# that `costmodel eval` tests on. Prints the training time as a JSON benchmark line.
#
#   tools/costmodel/train.sh [DATA (file or directory)] [BUILD_DIR] [extra train flags...]
#   default DATA: ../shared/data/neusight/train   default BUILD_DIR: build
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${1:-$root/../shared/data/neusight/train}
build=${2:-$root/build}
shift $(( $# > 2 ? 2 : $# ))

if [[ -x "$build/tools/dpro-replay/dpro-replay" ]] && "$build/tools/dpro-replay/dpro-replay" costmodel --help >/dev/null 2>&1; then
  cli=("$build/tools/dpro-replay/dpro-replay")
else
  cmake --build "$build" --target dpro-costmodel >/dev/null
  cli=("$build/tests/costmodel/dpro-costmodel")
fi
exec nice "${cli[@]}" costmodel -v train --data "$data" -o "$root/data/costmodel/model.dpcm" --force \
  --epochs 40 --batch 1024 --lr 3e-3 --threads 1 "$@"
