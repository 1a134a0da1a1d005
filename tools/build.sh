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
# at least every 15 s while steps complete, so that a long build is never silent.
set +e
cmake --build build -j "$jobs" "${targets[@]}" 2>&1 | tee -a build.log |
  awk -v start="$start" '
    match($0, /^\[ *[0-9]+%\]/) {
      pct = substr($0, RSTART + 1, RLENGTH - 3) + 0
      now = systime()
      if (int(pct / 10) > int(shown / 10) || (pct > shown && now - last >= 15)) {
        what = $NF; sub(/\.o$/, "", what); sub(/.*CMakeFiles\/[^\/]*\.dir\//, "", what)
        printf "build.sh: %3d%% (%d s) %s\n", pct, now - start, what; fflush()
        shown = pct; last = now
      }
    }'
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || { tail -50 build.log; exit 1; }
echo "build.sh: built $what into ./build in $(( $(date +%s) - start )) s (log: build.log)"
