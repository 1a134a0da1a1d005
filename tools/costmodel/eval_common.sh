# Sourced by tools/costmodel/unseen_eval.sh, tools/costmodel/measured_eval.sh (after they set
# `build`, the build folder) and tests/cli/measured_ops_check.sh (after it sets `cli`, the
# dpro-replay binary): `cli`, a scratch folder `work` removed on exit, and the steps they score
# the shipped model with.
cli="${cli:-$build/tools/dpro-replay/dpro-replay}"
[ -x "$cli" ] || { echo "error: $cli not built (bash tools/build.sh)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mape() {  # mape LABEL ARGS...: the MAPE line of `costmodel ARGS...`, prefixed by LABEL
  local label="$1"; shift
  local line
  line="$("$cli" costmodel "$@" 2>&1 >/dev/null | grep '^against the Latency column' || true)"
  echo "$label: ${line#against the Latency column }"
}

# take_samples ALL.csv SAMPLES.csv REST.csv: 200 of ALL's rows chosen by `costmodel pick`
# (k-means) into SAMPLES, the others into REST.
take_samples() {
  "$cli" costmodel pick -n 200 "$1" -o "$2" 2>/dev/null
  { head -n 1 "$1"; grep -vxFf <(tail -n +2 "$2") <(tail -n +2 "$1"); } > "$3"
}

# few_shot GPU ALL.csv: 200 of ALL's rows as measured samples (take_samples); MAPE on the other
# rows with none of them, with the residual correction, with a model fine-tuned on them
# (`costmodel adapt`), and with both.
few_shot() {
  local gpu="$1" all="$2"
  local samples="$work/$gpu-samples.csv" rest="$work/$gpu-rest.csv"
  take_samples "$all" "$samples" "$rest"
  mape "$gpu, 0 samples (the same rows)" predict --device "$gpu" "$rest"
  mape "$gpu, correction" predict --device "$gpu" --samples "$samples" "$rest"
  "$cli" costmodel -q adapt --device "$gpu" --samples "$samples" -o "$work/$gpu.dpcm" > /dev/null
  mape "$gpu, fine-tuned" --model "$work/$gpu.dpcm" predict --device "$gpu" "$rest"
  mape "$gpu, fine-tuned + correction" --model "$work/$gpu.dpcm" predict --device "$gpu" --samples "$samples" "$rest"
}
