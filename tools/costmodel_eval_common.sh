# Sourced by tools/costmodel_unseen_eval.sh and tools/costmodel_measured_eval.sh after they set
# `build` (the build folder): `cli`, a scratch folder `work` removed on exit, and the two steps
# both scripts score the shipped model with.
cli="$build/tools/dpro-replay/dpro-replay"
[ -x "$cli" ] || { echo "error: $cli not built (bash tools/build.sh)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mape() {  # mape LABEL ARGS...: the MAPE line of `costmodel ARGS...`, prefixed by LABEL
  local label="$1"; shift
  local line
  line="$("$cli" costmodel "$@" 2>&1 >/dev/null | grep '^against the Latency column' || true)"
  echo "$label: ${line#against the Latency column }"
}

# few_shot GPU ALL.csv: 200 of ALL's rows chosen by `costmodel pick` (k-means) as measured
# samples; MAPE on the other rows with none of them, with the residual correction, with a model
# fine-tuned on them (`costmodel adapt`), and with both.
few_shot() {
  local gpu="$1" all="$2"
  local samples="$work/$gpu-samples.csv" rest="$work/$gpu-rest.csv"
  "$cli" costmodel pick -n 200 "$all" -o "$samples" 2>/dev/null
  { head -n 1 "$all"; grep -vxFf <(tail -n +2 "$samples") <(tail -n +2 "$all"); } > "$rest"
  mape "$gpu, 0 samples (the same rows)" predict --device "$gpu" "$rest"
  mape "$gpu, correction" predict --device "$gpu" --samples "$samples" "$rest"
  "$cli" costmodel -q adapt --device "$gpu" --samples "$samples" -o "$work/$gpu.dpcm" > /dev/null
  mape "$gpu, fine-tuned" --model "$work/$gpu.dpcm" predict --device "$gpu" "$rest"
  mape "$gpu, fine-tuned + correction" --model "$work/$gpu.dpcm" predict --device "$gpu" --samples "$samples" "$rest"
}
