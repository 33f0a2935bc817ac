#!/usr/bin/env bash
# Step 2 of the conformance run on a real GPU (cuda_gpu_executor.h): runs every module that
# `run_conformance --cuda-export DIR TARGET` wrote with `agate-runtime run`, on GPU 0, several
# at a time, writing <run>.outputs.npz or <run>.gpu_error (the runtime's message, exit status).
#   run_on_gpu.sh AGATE_RUNTIME DIR [JOBS]
set -u
RUNTIME="$1"
DIR="$2"
JOBS="${3:-8}"
export RUNTIME
run_one() {
  local base="${1%.agm}"
  # A kernel that never ends must not stall the others: 30 s each at most (timeout exits 124).
  if timeout 30 "$RUNTIME" run "$1" --inputs "$base.inputs.npz" --outputs "$base.outputs.npz" >/dev/null 2>"$base.stderr"; then
    rm -f "$base.stderr"
  else
    echo "exit $?: $(cat "$base.stderr")" >"$base.gpu_error"
    rm -f "$base.stderr"
  fi
}
export -f run_one
find "$DIR" -name '*.agm' -print0 | xargs -0 -n 1 -P "$JOBS" bash -c 'run_one "$0"'
echo "ran $(find "$DIR" -name '*.agm' | wc -l) modules: $(find "$DIR" -name '*.outputs.npz' | wc -l) with outputs," \
     "$(find "$DIR" -name '*.gpu_error' | wc -l) failed"
