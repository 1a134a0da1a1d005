#!/usr/bin/env bash
# Configures and builds dpro in ./build (Release), showing the build's progress; the compiler's
# output goes to build.log (its tail is printed when the build fails).
# Usage: build.sh [--target NAME]... [CMAKE_CONFIGURE_ARGS...]
#   --target NAME  build only NAME and what it needs (repeatable; default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
targets=()
configure=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) [ $# -ge 2 ] || { echo "build.sh: --target needs a name" >&2; exit 2; }
              targets+=(--target "$2"); shift 2 ;;
    *) configure+=("$1"); shift ;;
  esac
done
what="everything"
[ ${#targets[@]} -gt 0 ] && what="$(printf '%s ' "${targets[@]}" | sed 's/--target //g; s/ $//')"
echo "build.sh: configuring ./build (log: build.log)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${configure[@]}" > build.log 2>&1 || { cat build.log; exit 1; }
echo "build.sh: building $what on $jobs cores"
start=$(date +%s)
# cmake prints "[ 42%] Building CXX object .../x.cpp.o" per step: show a line at each new tenth, and
# at least every 15 s while steps complete, so that a long build is never silent. (Read by bash
# line by line: awk would read the pipe in blocks and print in bursts.)
set +e
cmake --build build -j "$jobs" "${targets[@]}" 2>&1 | tee -a build.log | {
  shown=-1 last=-15
  while IFS= read -r line; do
    [[ $line =~ ^\[\ *([0-9]+)%\] ]] || continue
    pct=${BASH_REMATCH[1]}
    if (( pct / 10 > shown / 10 || (pct > shown && SECONDS - last >= 15) )); then
      what=${line##* }; what=${what%.o}; what=${what##*.dir/}
      printf 'build.sh: %3d%% (%d s) %s\n' "$pct" $(( $(date +%s) - start )) "$what"
      shown=$pct last=$SECONDS
    fi
  done
}
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || { tail -50 build.log; exit 1; }
echo "build.sh: built $what into ./build in $(( $(date +%s) - start )) s (log: build.log)"
