#!/usr/bin/env bash
# Symbolic batch dimensions end to end (issue 16): a small CNN exported by PyTorch with a dynamic
# batch axis (dim_param "N") is compiled ONCE with `agate compile --bounds N=1..32` (variants 1, 8,
# 32), run with `agate run` at batch 1, 7 (seven chunks of the 1-row variant) and 32 (one chunk),
# and compared with PyTorch at each batch; a batch of 33 and a mismatched static extent are
# refused with the runtime's messages; `agate inspect` prints the bounds; the symbol named in
# --input-shape with chosen variants (N=1..4:1,2) runs batch 3 as 2 + 1.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
# shellcheck source=lib/check.sh
. "$ROOT/tools/ci/suites/lib/check.sh"

bazel build --noshow_progress //tools/cli:agate >/dev/null 2>&1 || { echo "could not build the CLI"; echo "0 1"; exit 0; }
AGATE="$ROOT/bazel-bin/tools/cli/agate"

if ! /usr/bin/python3 - "$WORK" <<'PY'
import sys
import numpy as np
import torch
work = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
    torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10), torch.nn.Softmax(dim=1)).eval()
torch.onnx.export(model, torch.randn(2, 3, 16, 16), f"{work}/cnn.onnx", input_names=["input"],
                  output_names=["probs"], dynamic_axes={"input": {0: "N"}, "probs": {0: "N"}}, opset_version=13)
for n in (1, 7, 32, 33):
    x = torch.randn(n, 3, 16, 16)
    np.savez(f"{work}/in{n}.npz", input=x.numpy())
    with torch.no_grad():
        np.savez(f"{work}/ref{n}.npz", probs=model(x).numpy())
np.savez(f"{work}/bad.npz", input=np.zeros((4, 3, 16, 8), np.float32))
PY
then
  echo "could not export the model with PyTorch"; echo "0 1"; exit 0
fi

check "compile --bounds N=1..32" "$AGATE" compile "$WORK/cnn.onnx" -o "$WORK/cnn.agm" --bounds N=1..32 --target "llvm -mcpu=x86-64-v3"
check "inspect prints the bounds" sh -c "'$AGATE' inspect '$WORK/cnn.agm' | grep -q 'symbol N=1..32, variants 1,8,32'"
for n in 1 7 32; do
  check "run at batch $n matches PyTorch" sh -c "'$AGATE' run '$WORK/cnn.agm' --inputs '$WORK/in$n.npz' --outputs '$WORK/out$n.npz' &&
    /usr/bin/python3 -c \"
import numpy as np, sys
got, want = np.load('$WORK/out$n.npz')['probs'], np.load('$WORK/ref$n.npz')['probs']
sys.exit(0 if got.shape == want.shape == ($n, 10) and np.allclose(got, want, rtol=1e-4, atol=1e-5) else 1)\""
done
check "batch 33 names the input, the symbol and its bounds" sh -c \
  "'$AGATE' run '$WORK/cnn.agm' --inputs '$WORK/in33.npz' 2>&1 | grep -q \"input 0 'input' has extent 33 on axis 0 (symbol N), outside its bounds 1..32\""
# The symbol named in --input-shape instead of the model's dim_param, with chosen variants (3 = 2 + 1).
check "compile --input-shape input:Nx3x16x16 --bounds N=1..4:1,2" "$AGATE" compile "$WORK/cnn.onnx" -o "$WORK/cnn4.agm" \
  --input-shape input:Nx3x16x16 --bounds N=1..4:1,2 --target "llvm -mcpu=x86-64-v3"
/usr/bin/python3 -c "
import numpy as np
x = np.load('$WORK/in7.npz')['input'][:3]
np.savez('$WORK/in3.npz', input=x)" 
check "run at batch 3 (variants 1, 2) matches PyTorch" sh -c "'$AGATE' run '$WORK/cnn4.agm' --inputs '$WORK/in3.npz' --outputs '$WORK/out3.npz' &&
    /usr/bin/python3 -c \"
import numpy as np, sys
got, want = np.load('$WORK/out3.npz')['probs'], np.load('$WORK/ref7.npz')['probs'][:3]
sys.exit(0 if got.shape == (3, 10) and np.allclose(got, want, rtol=1e-4, atol=1e-5) else 1)\""
check "a wrong static extent is refused" sh -c "! '$AGATE' run '$WORK/cnn.agm' --inputs '$WORK/bad.npz'"
echo "$passed $failed"
