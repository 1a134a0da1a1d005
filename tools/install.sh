#!/usr/bin/env bash
# Installs the Debian packages dpro needs, skipping those already present. The single source of
# truth for dependencies: README, CI and the quickstart all call this script.
set -euo pipefail

# Usage: install.sh [run|all]. `run`: what building and running dpro-replay needs (the quick
# start); `all` (the default): also what the tests, the learned cost model and the fuzzers need.
scope="${1:-all}"
case "$scope" in
  run|all) ;;
  *) echo "install.sh: unknown scope '$scope' (use run or all)" >&2; exit 2 ;;
esac

packages=(build-essential cmake pkg-config libboost-graph-dev libeigen3-dev nlohmann-json3-dev libcli11-dev
          libfmt-dev libsimdjson-dev zlib1g-dev
          libisal-dev  # ISA-L: inflates gzip traces ~3x faster than zlib (optional in CMake: zlib without it)
          catch2)  # configuring the tree looks for Catch2 even when only dpro-replay is built
if [ "$scope" = all ]; then
  packages+=(libtorch-dev libopenblas0-openmp  # LibTorch: the learned cost model; OpenBLAS: its speed
             python3  # tools/fuzz_cli.py and the table checks, run by ctest
             chromium  # tests/report_html/browser_check.py: the HTML report in a headless browser (~80 MB; the test skips without it)
             clang libclang-rt-dev)  # tools/fuzz.sh: the libFuzzer fuzzers (CI runs them briefly)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install.sh: all ${#packages[@]} packages present ($scope)"
  exit 0
fi
echo "install.sh: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
