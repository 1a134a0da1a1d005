#!/usr/bin/env bash
# Speed and memory of two builds side by side, runs alternating (this machine is shared and
# noisy): bench_replay's JSON lines, and CPU seconds (user + sys) and peak RSS of
# `dpro-replay --version` and of a plain replay of the bundled DLRM trace. Prints JSON lines
# with each run's figures and the medians.
#   tools/dev/compare_speed.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [RUNS]
set -euo pipefail
if [[ $# -lt 2 ]]; then echo "usage: $0 BEFORE_BUILD_DIR AFTER_BUILD_DIR [RUNS]" >&2; exit 2; fi
before=$(realpath "$1"); after=$(realpath "$2"); runs=${3:-5}
cd "$(dirname "$0")/../.."
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A samples
measure() {  # label command...
  local label=$1; shift
  local f
  f=$(mktemp)
  /usr/bin/time -o "$f" -f '%U %S %M' "$@" > /dev/null 2>&1 || true  # an exit status is not a timing
  read -r u s m < <(tail -1 "$f")
  rm -f "$f"
  samples["$label cpu"]+="$(echo "$u + $s" | bc) "
  samples["$label rss"]+="$m "
}
for ((i = 0; i < runs; i++)); do
  for side in before after; do
    build=$([[ $side == before ]] && echo "$before" || echo "$after")
    bin=$build/tools/dpro-replay/dpro-replay
    measure "$side version" "$bin" --version
    measure "$side replay_dlrm" "$bin" replay -q traces/dlrm-8xV100
    line=$("$build/tests/bench/bench_replay" 64 20000 3 | grep -m1 '"bench": "replay_speed"' || true)
    [[ -n "$line" ]] && echo "{\"side\": \"$side\", \"run\": $i, \"line\": $line}"
    v=$(echo "$line" | sed -E 's/.*"value": ([-0-9.e+]+).*/\1/')
    [[ -n "$v" ]] && samples["$side bench_replay"]+="$v "
  done
done
for key in "${!samples[@]}"; do
  med=$(echo "${samples[$key]}" | tr ' ' '\n' | grep -v '^$' | median)
  echo "{\"bench\": \"$key\", \"median\": $med, \"runs\": \"${samples[$key]% }\"}"
done | sort
