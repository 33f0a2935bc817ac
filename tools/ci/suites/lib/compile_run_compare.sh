# Sourced by the model suites (models.sh, recurrent_models.sh): compile a model with ./agate under one
# fusion policy, run it in the minimal runtime and compare its outputs with reference outputs
# (compare_outputs.py). The caller sets AGATE (the CLI) and WORK (a scratch folder) and keeps the
# counters `passed` and `failed`, which each call increments.
#
# compile_run_compare NAME MODEL.onnx INPUTS.npz REFERENCE.npz RTOL FUSION [extra `agate run` args...]
compile_run_compare() {
  local name="$1" model="$2" inputs="$3" reference="$4" rtol="$5" fusion="$6"
  shift 6
  local lib
  lib="$(dirname "${BASH_SOURCE[0]}")"
  if ! "$AGATE" compile "$model" -o "$WORK/model.agm" --fusion "$fusion" >"$WORK/compile.log" 2>&1; then
    echo "FAIL $name: compile failed"; tail -3 "$WORK/compile.log"; failed=$((failed + 1)); return
  fi
  if ! "$AGATE" run "$WORK/model.agm" --inputs "$inputs" --outputs "$WORK/out.npz" "$@" >"$WORK/run.log" 2>&1; then
    echo "FAIL $name: run failed"; tail -3 "$WORK/run.log"; failed=$((failed + 1)); return
  fi
  # With --print-time the run's last line is "median <ms> ms ...": shown beside the comparison.
  local note=""
  if grep -q -- "--print-time" <<<"$*"; then note="median $(tail -1 "$WORK/run.log" | awk '{print $2}') ms"; fi
  if /usr/bin/python3 "$lib/compare_outputs.py" "$WORK/out.npz" "$reference" "$name" "$rtol" "$note"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
}
