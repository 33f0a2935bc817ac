#!/usr/bin/env bash
# The command line as a user meets it: compile, run, inspect on the bundled model, and every
# kind of bad input giving a one-line error, the right exit code, and no partial output file.
# Prints one "ok"/"FAIL" line per check; exits non-zero if any failed.
set -u
AGATE="$1"
MODEL="$2"
MAKE_HOSTILE_MODELS="$3"
STEM="${MODEL%.onnx}"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
source "$(dirname "$0")/checks.sh"

mkdir -p "$TMP/demo"
check "demo matches PyTorch" 0 "$AGATE" demo --model "$MODEL" --output-dir "$TMP/demo"
expect_in "demo checks the answer" "$TMP/out.txt" "demo passed"
check "compile the demo model" 0 "$AGATE" compile "$MODEL" -o "$TMP/demo.agm" --fusion rule
expect_in "compile prints the kernels" "$TMP/out.txt" "kernels:"
expect_in "the default (native) target warns and names a portable one" "$TMP/err.txt" 'llvm -mcpu=x86-64-v3'
check "compile for a portable x86-64 level" 0 "$AGATE" compile "$MODEL" -o "$TMP/v2.agm" --target "llvm -mcpu=x86-64-v2"
expect "a portable target does not warn" test ! -s "$TMP/err.txt"
check "inspect names the module's CPU features" 0 "$AGATE" inspect "$TMP/v2.agm"
expect_in "x86-64-v2 needs sse4.2" "$TMP/out.txt" "cpu features.* sse4.2"
if [ "$(uname -m)" = x86_64 ]; then
  check "compile for aarch64" 0 "$AGATE" compile "$MODEL" -o "$TMP/arm.agm" --target "llvm -mtriple=aarch64-linux-gnu"
  check "an aarch64 module is refused on x86-64" 1 "$AGATE" run "$TMP/arm.agm"
  expect_in "the refusal names both architectures" "$TMP/err.txt" "module built for aarch64, this runtime runs on x86-64"
fi
check "run with the reference inputs" 0 "$AGATE" run "$TMP/demo.agm" --inputs "$STEM.inputs.npz" --outputs "$TMP/out.npz" --print-time --repeat 3
expect_in "run prints tvmc-style timing" "$TMP/out.txt" "median (ms)"
check "run --json" 0 "$AGATE" run "$TMP/demo.agm" --json --repeat 2 --number 2
expect_in "json line" "$TMP/out.txt" '"median_ms"'
check "run with random inputs" 0 "$AGATE" run "$TMP/demo.agm" --seed 3
check "run --profile" 0 "$AGATE" run "$TMP/demo.agm" --profile --repeat 3
expect_in "profile prints the per-kernel table" "$TMP/out.txt" "Per-kernel profile (median of 3 runs"
expect_in "profile ends with a total line" "$TMP/out.txt" "100.0%.*(total)"
check "inspect the module" 0 "$AGATE" inspect "$TMP/demo.agm"
expect_in "inspect lists the plan" "$TMP/out.txt" "kernel calls"
check "inspect the model with --dot" 0 "$AGATE" inspect "$MODEL" --dot "$TMP/g.dot"
expect_in "dot file is Graphviz" "$TMP/g.dot" "digraph"
check "compile with schedule knobs" 0 "$AGATE" compile "$MODEL" -o "$TMP/knobs.agm" --knob conv_winograd=0 --knob conv_ow_block=4
check "inspect the knobbed module" 0 "$AGATE" inspect "$TMP/knobs.agm"
expect_in "the module records its knobs" "$TMP/out.txt" 'knobs="conv_winograd=0,conv_ow_block=4"'
check "unknown knob is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/k.agm" --knob no_such_knob=1
expect_in "unknown knob lists the knobs" "$TMP/err.txt" "conv_winograd"
check "knob out of range is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/k.agm" --knob conv_winograd=5
check "knob that is no integer is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/k.agm" --knob conv_winograd=99999999999999999999
expect "no module for bad knobs" no_file_like "$TMP" k.agm
check "compile for the C backend" 0 "$AGATE" compile "$MODEL" -o "$TMP/micro.agm" --target "c -mcpu=cortex-m4"
expect "firmware kernels written" test -s "$TMP/micro.agm.kernels.c"
expect_in "micro kernels carry the output's name" "$TMP/micro.agm.kernels.c" "int32_t micro_k0_"
# The microcontroller package: every file, all or nothing, never over a folder agate did not write.
check "package for a Cortex-M4" 0 "$AGATE" compile "$MODEL" --target "c -mcpu=cortex-m4" --package "$TMP/pkg" --prefix kws
for f in agate_kws.h agate_kws.c agate_kws_module.c agate_kws_kernels.c README.md; do
  expect "package holds $f" test -s "$TMP/pkg/$f"
done
expect_in "package header has the run entry point" "$TMP/pkg/agate_kws.h" "agate_status_t agate_kws_run("
expect_in "package table carries the fingerprint" "$TMP/pkg/agate_kws.c" "agate_kws_kernel_fingerprint = AGATE_KWS_KERNEL_FINGERPRINT"
check "package again replaces the previous one" 0 "$AGATE" compile "$MODEL" --target "c -mcpu=cortex-m4" --package "$TMP/pkg" --prefix kws2
expect "the replaced package holds only the new files" test ! -e "$TMP/pkg/agate_kws.h" -a -s "$TMP/pkg/agate_kws2.h"
check "package with LLVM objects" 0 "$AGATE" compile "$MODEL" --target "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4" --package "$TMP/pkg_o"
expect "the object package is named after its folder" test -s "$TMP/pkg_o/agate_pkg_o_kernels.o"
mkdir -p "$TMP/mine" && echo keep > "$TMP/mine/notes.txt"
check "package over a folder agate did not write is exit 1" 1 "$AGATE" compile "$MODEL" --target "c -mcpu=cortex-m4" --package "$TMP/mine"
expect_in "the refusal names the folder" "$TMP/err.txt" "was not written by agate"
expect "that folder is untouched" grep -q keep "$TMP/mine/notes.txt"
check "package for a host target is exit 1" 1 "$AGATE" compile "$MODEL" --package "$TMP/hostpkg"
expect_in "host package refusal names the targets" "$TMP/err.txt" "microcontroller targets"
expect "no folder for a host package" no_file_like "$TMP" hostpkg
check "a prefix that is no C identifier is exit 1" 1 "$AGATE" compile "$MODEL" --target "c -mcpu=cortex-m4" --package "$TMP/badpkg" --prefix 9-lives
expect_in "bad prefix is named" "$TMP/err.txt" "not a C identifier"
expect "no folder for a bad prefix" no_file_like "$TMP" badpkg
# RAM options for microcontrollers: the min-peak arena placement, a workspace budget.
check "compile with --memory-plan min-peak" 0 "$AGATE" compile "$MODEL" -o "$TMP/minpeak.agm" --target "c -mcpu=cortex-m4" --memory-plan min-peak
check "compile for the host with --memory-plan min-peak" 0 "$AGATE" compile "$MODEL" -o "$TMP/minpeak_host.agm" --fusion rule --memory-plan min-peak
check "run the min-peak module" 0 "$AGATE" run "$TMP/minpeak_host.agm" --inputs "$STEM.inputs.npz" --outputs "$TMP/minpeak_out.npz"
check "min-peak outputs equal the default plan's" 0 /usr/bin/python3 -c "
import numpy as np, sys
a = np.load('$TMP/out.npz'); b = np.load('$TMP/minpeak_out.npz')
sys.exit(0 if all(np.array_equal(a[k], b[k]) for k in a.files) else 1)"
check "a kernel over --max-workspace is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/budget.agm" --target "c -mcpu=cortex-m4" --max-workspace 0
expect_in "the budget refusal names the kernel and the budget" "$TMP/err.txt" "bytes of workspace.*over --max-workspace 0"
expect "no module over the budget" no_file_like "$TMP" budget.agm
check "an unknown memory plan is exit 2" 2 "$AGATE" compile "$MODEL" -o "$TMP/plan.agm" --memory-plan smallest

# CUDA: compiled with NVRTC (no GPU needed) and inspected without a GPU; without NVRTC the
# compile names what is missing and writes nothing.
if ldconfig -p 2>/dev/null | grep -q libnvrtc.so || [ -e /usr/local/cuda/lib64/libnvrtc.so ]; then
  check "compile for cuda" 0 "$AGATE" compile "$MODEL" -o "$TMP/gpu.agm" --target "cuda -arch=sm_80"
  expect_in "cuda summary shows occupancy" "$TMP/out.txt" "occupancy"
  check "inspect the cuda module" 0 "$AGATE" inspect "$TMP/gpu.agm"
  expect_in "inspect shows the cubin" "$TMP/out.txt" "cubin for sm_80"
  expect_in "inspect shows registers per kernel" "$TMP/out.txt" "registers/thread"
  expect_in "inspect shows occupancy per kernel" "$TMP/out.txt" "blocks/SM, limited by"
else
  echo "ok   (cuda compile skipped: NVRTC is not installed)"
fi
check "cuda without NVRTC is exit 1" 1 env AGATE_NVRTC_LIBRARY=/nonexistent/libnvrtc.so "$AGATE" compile "$MODEL" -o "$TMP/nogpu.agm" --target "cuda -arch=sm_80"
expect_in "missing NVRTC is named" "$TMP/err.txt" "NVRTC"
expect "no module without NVRTC" no_file_like "$TMP" nogpu.agm
check "unknown cuda arch is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/x.agm" --target "cuda -arch=sm_61"
expect_in "unknown cuda arch lists the archs" "$TMP/err.txt" "sm_70, sm_75, sm_80"

# Bad input: exit 1, one error line, no partial file, an existing file untouched.
printf 'not a model' > "$TMP/bad.onnx"
cp "$TMP/demo.agm" "$TMP/keep.agm"
check "malformed model is exit 1" 1 "$AGATE" compile "$TMP/bad.onnx" -o "$TMP/keep.agm"
expect_in "malformed model is named" "$TMP/err.txt" "bad.onnx"
expect "existing module untouched" cmp -s "$TMP/demo.agm" "$TMP/keep.agm"
head -c 1000 "$MODEL" > "$TMP/truncated.onnx"
check "truncated model is exit 1" 1 "$AGATE" compile "$TMP/truncated.onnx" -o "$TMP/t.agm"
expect "no partial file" no_file_like "$TMP" t.agm
# Models that once aborted (std::terminate, exit 134): exit 1 with the reason, no file.
mkdir -p "$TMP/hostile"
"$MAKE_HOSTILE_MODELS" "$TMP/hostile"
check "external data offset that does not fit is exit 1" 1 "$AGATE" compile "$TMP/hostile/external_offset.onnx" -o "$TMP/h.agm"
expect_in "the offset is named" "$TMP/err.txt" "external data offset"
check "empty CumSum axis is exit 1" 1 "$AGATE" compile "$TMP/hostile/empty_axis.onnx" -o "$TMP/h.agm"
expect_in "the axis is named" "$TMP/err.txt" "'axis' must hold exactly one value"
expect "no module for hostile models" no_file_like "$TMP" h.agm
check "bad target is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/x.agm" --target "llvm -mtriple=nonsense-arch"
check "unknown flag is exit 2" 2 "$AGATE" compile "$MODEL" -o "$TMP/x.agm" --bogus
check "bad fusion value is exit 2" 2 "$AGATE" compile "$MODEL" -o "$TMP/x.agm" --fusion sideways
check "missing adaptive policy file is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/p.agm" --fusion adaptive,policy="$TMP/none.policy"
expect_in "the policy file is named" "$TMP/err.txt" "none.policy"
expect "no module without its policy" no_file_like "$TMP" p.agm
check "adaptive falls back to rule when asked" 0 "$AGATE" compile "$MODEL" -o "$TMP/p.agm" --fusion adaptive,policy="$TMP/none.policy",fallback=rule
expect_in "the fallback is said" "$TMP/err.txt" "falls back to rule"
check "unknown command is exit 2" 2 "$AGATE" frobnicate
expect_in "the unknown command is named" "$TMP/err.txt" "unknown command 'frobnicate'"
head -c 2000 "$TMP/demo.agm" > "$TMP/cut.agm"
check "truncated module is exit 1" 1 "$AGATE" run "$TMP/cut.agm"
expect_in "truncated module is named" "$TMP/err.txt" "cut.agm"
check "version" 0 "$AGATE" version
/usr/bin/python3 - "$TMP" <<'PY' || failures=$((failures + 1))
import sys, numpy as np
d = sys.argv[1]
np.savez(d + "/wrong_name.npz", nope=np.zeros((1, 3, 32, 32), np.float32))
np.savez(d + "/wrong_shape.npz", input=np.zeros((1, 3, 16, 16), np.float32))
np.savez(d + "/wrong_dtype.npz", input=np.zeros((1, 3, 32, 32), np.float64))
PY
check "wrong input name is exit 1" 1 "$AGATE" run "$TMP/demo.agm" --inputs "$TMP/wrong_name.npz"
expect_in "wrong input name is named" "$TMP/err.txt" "nope"
check "wrong input shape is exit 1" 1 "$AGATE" run "$TMP/demo.agm" --inputs "$TMP/wrong_shape.npz"
expect_in "wrong shape is described" "$TMP/err.txt" "expects"
check "wrong input dtype is exit 1" 1 "$AGATE" run "$TMP/demo.agm" --inputs "$TMP/wrong_dtype.npz"
check "missing module is exit 2" 2 "$AGATE" run "$TMP/none.agm"
# A run-time operand the module checks (Resize's scales against the declared output shape): a bad
# value is the user's error, exit 1, naming the node and the operand (not an internal error).
check "compile a resize with run-time scales" 0 "$AGATE" compile "$TMP/hostile/run_time_scales.onnx" -o "$TMP/rts.agm"
/usr/bin/python3 - "$TMP" <<'PY' || failures=$((failures + 1))
import sys, numpy as np
d = sys.argv[1]
x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
np.savez(d + "/scales_good.npz", x=x, scales=np.array([1, 1, 0.6, 2], np.float32))
np.savez(d + "/scales_bad.npz", x=x, scales=np.array([1, 1, 2, 2], np.float32))
PY
check "scales that give the declared shape run" 0 "$AGATE" run "$TMP/rts.agm" --inputs "$TMP/scales_good.npz"
check "scales that do not are exit 1" 1 "$AGATE" run "$TMP/rts.agm" --inputs "$TMP/scales_bad.npz"
expect_in "the failed check names the node and the operand" "$TMP/err.txt" "Resize 'resize': scales ('scales')"
expect_in "the failed check is an invalid argument" "$TMP/err.txt" "invalid argument: run failed"

# Auto-tuning end to end, a few trials per task (seconds): records written, resumed, applied.
REC="$TMP/tune.jsonl"
check "tune a few trials" 0 "$AGATE" tune "$MODEL" --records "$REC" --trials 2 --batch 2 --repeats 1 --tuner random --threads 1
expect_in "tune reports each task" "$TMP/out.txt" "task 1/"
expect_in "tune prints the speed-up" "$TMP/out.txt" "tuned kernels:"
expect_in "tune times the whole model untuned and tuned" "$TMP/out.txt" "whole model: untuned"
expect_in "records hold JSON lines" "$REC" '"knob_space":'
check "tune again resumes" 0 "$AGATE" tune "$MODEL" --records "$REC" --trials 2 --tuner grid --threads 1
expect_in "resumed records are not measured again" "$TMP/out.txt" "resuming:"
check "compile --tuning-records" 0 "$AGATE" compile "$MODEL" -o "$TMP/tuned.agm" --tuning-records "$REC"
expect_in "compile reports tuned kernels" "$TMP/out.txt" "tunable kernels tuned"
check "run the tuned module" 0 "$AGATE" run "$TMP/tuned.agm" --inputs "$STEM.inputs.npz" --outputs "$TMP/tuned_out.npz"
check "tuned module matches the reference" 0 /usr/bin/python3 -c "
import numpy as np, sys
a = np.load('$TMP/tuned_out.npz'); b = np.load('$STEM.reference.npz')
sys.exit(0 if all(np.allclose(a[k], b[k], rtol=1e-4, atol=1e-5) for k in b.files) else 1)"
head -c 120 "$REC" > "$TMP/truncated.jsonl"
check "a truncated records file still compiles" 0 "$AGATE" compile "$MODEL" -o "$TMP/t2.agm" --tuning-records "$TMP/truncated.jsonl"
expect_in "the truncated line is named" "$TMP/err.txt" "line 1 (the last line, truncated"
expect_in "kernels without a record are listed" "$TMP/out.txt" "no record for: k0_"
check "records of another target are refused" 1 "$AGATE" compile "$MODEL" -o "$TMP/t3.agm" --target "llvm -mtriple=aarch64-linux-gnu" --tuning-records "$REC"
expect_in "the refusal names the line" "$TMP/err.txt" "line 1: made for target"
expect "no module written for refused records" no_file_like "$TMP" t3.agm
check "a missing records file is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/t4.agm" --tuning-records "$TMP/none.jsonl"
check "an unknown tuner is exit 2" 2 "$AGATE" tune "$MODEL" --records "$REC" --tuner annealing
check "tuning for CUDA is refused" 1 "$AGATE" tune "$MODEL" --records "$TMP/cuda.jsonl" --target "cuda -arch=sm_80"
expect_in "the refusal says why" "$TMP/err.txt" "CUDA kernels need a GPU to be timed on"
expect "no records file made for a refused target" no_file_like "$TMP" cuda.jsonl
check "tuning for another CPU is refused" 1 "$AGATE" tune "$MODEL" --records "$TMP/arm.jsonl" --target "llvm -mtriple=aarch64-linux-gnu"
expect_in "the refusal names the target" "$TMP/err.txt" "cannot tune for target 'llvm -mtriple=aarch64"
# Signed modules: keygen, compile --sign-key, run --public-key; unsigned, tampered and
# wrong-key modules are refused when a key is given.
check "keygen" 0 "$AGATE" keygen --secret-key "$TMP/sk" --public-key "$TMP/pk"
check "keygen never overwrites a key" 1 "$AGATE" keygen --secret-key "$TMP/sk" --public-key "$TMP/pk2"
check "keygen other pair" 0 "$AGATE" keygen --secret-key "$TMP/sk2" --public-key "$TMP/pk2"
check "compile signed" 0 "$AGATE" compile "$MODEL" -o "$TMP/signed.agm" --sign-key "$TMP/sk"
expect_in "compile says signed" "$TMP/out.txt" "(signed)"
check "signed module runs with its key" 0 "$AGATE" run "$TMP/signed.agm" --public-key "$TMP/pk"
check "signed module runs without a key" 0 "$AGATE" run "$TMP/signed.agm"
check "unsigned module refused with a key" 1 "$AGATE" run "$TMP/demo.agm" --public-key "$TMP/pk"
expect_in "unsigned is named" "$TMP/err.txt" "not signed"
check "wrong key refused" 1 "$AGATE" run "$TMP/signed.agm" --public-key "$TMP/pk2"
expect_in "wrong key is named" "$TMP/err.txt" "does not verify"
cp "$TMP/signed.agm" "$TMP/tampered.agm"
printf '\x5a' | dd of="$TMP/tampered.agm" bs=1 seek=1000 conv=notrunc 2>/dev/null
expect "tampered module differs" test "$(cmp "$TMP/signed.agm" "$TMP/tampered.agm" | wc -l)" -eq 1
check "tampered module refused" 1 "$AGATE" run "$TMP/tampered.agm" --public-key "$TMP/pk"
check "a public key is no secret key" 1 "$AGATE" compile "$MODEL" -o "$TMP/bad_sig.agm" --sign-key "$TMP/pk"
expect "no module for a bad key" no_file_like "$TMP" bad_sig.agm

finish
