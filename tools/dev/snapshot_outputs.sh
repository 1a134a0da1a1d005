#!/usr/bin/env bash
# Runs one dpro-replay binary over every bundled trace, plain and with each what-if the README
# shows, and keeps everything it printed and wrote (text, stderr, exit code, JSON report,
# timeline). Two snapshots of two builds compare with `diff -r`: a refactor must leave them
# byte-identical.
#   tools/dev/snapshot_outputs.sh BINARY OUT_DIR
set -euo pipefail
if [[ $# -ne 2 ]]; then echo "usage: $0 BINARY OUT_DIR" >&2; exit 2; fi
bin=$(realpath "$1"); out=$2
cd "$(dirname "$0")/../.."
if [[ -e "$out" ]]; then echo "$0: $out exists; give a new directory" >&2; exit 2; fi
mkdir -p "$out"
samples=$(mktemp -d)/l4.csv
{ zcat data/costmodel/neusight-test/NVIDIA_L4.csv.gz || true; } | head -201 > "$samples" || true
traces=(traces/dlrm-8xV100 traces/hta/*.json.gz traces/h100/* traces/h200/*)
traces=("${traces[@]/traces\/h100\/expected.json}")
whatifs=(
  "plain|"
  "device-h100|--device H100-SXM5-80GB"
  "device-l4-samples|--device L4 --device-samples $samples"
  "device-a100|--device A100-SXM4-80GB"
  "device-h200|--device H200-SXM-141GB"
  "ranks-1024|--ranks 1024"
  "ranks-4|--ranks 4"
  "cluster-set|--cluster dgx-a100 --set network.inter_node_gbps=50"
  "bucket-25|--bucket-mb 25"
)
for t in "${traces[@]}"; do
  [[ -z "$t" ]] && continue
  name=$(echo "$t" | tr '/' '_')
  for w in "${whatifs[@]}"; do
    label=${w%%|*}; args=${w#*|}
    d="$out/$name/$label"; mkdir -p "$d"
    # shellcheck disable=SC2086
    set +e
    "$bin" replay "$t" $args --json "$d/report.json" --timeline "$d/timeline.json" > "$d/stdout" 2> "$d/stderr"
    echo $? > "$d/rc"
    set -e
  done
done
# A report's "replay" -> "seconds" is the replay's wall-clock time: never the same twice.
find "$out" -name report.json -print0 | xargs -0 -r sed -i -E 's/"seconds": [-+0-9.eE]+/"seconds": "(wall clock)"/'
# The samples file's temporary path appears in messages: name it the same in every snapshot.
{ grep -rl -- "$samples" "$out" || true; } | xargs -r sed -i "s|$samples|SAMPLES.csv|g"
echo "snapshot of $bin in $out"
