#!/usr/bin/env bash
# Symbolic sequence lengths end to end (issue 16): a small transformer encoder exported by PyTorch
# with a dynamic sequence axis (dim_param "S" on axis 1 of its token ids and attention mask:
# embeddings plus a sliced position table, masked multi-head attention, LayerNorm, a GELU MLP, a
# 1-D convolution along the sequence, a per-token head and masked-mean / mean / max pooling) is
# compiled ONCE with `agate compile --bounds S=1..48` (padded variants 16, 32 and 48), run with
# `agate run` at S = 1, 5, 16, 17 and 48 (inputs given at run time, shorter ones padded by the
# runtime), and compared with PyTorch at each; S = 49, ids and mask of different lengths, and a
# model that prepends a class token (S + 1 positions) are refused with messages naming the input,
# the symbol or the node, and so is a second unknown dimension (B) beside S; `agate inspect` prints the padded symbol.
# A second model bounds a batch and a sequence length at once (--bounds B=1..4 --bounds S=1..24: four
# padded variants) and runs at four (B, S) pairs against PyTorch.
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

if ! /usr/bin/python3 - "$WORK" <<'PY' >"$WORK/export.log" 2>&1
import math
import sys
import numpy as np
import torch
import torch.nn as nn
work = sys.argv[1]
torch.manual_seed(0)
D, H, C = 32, 4, 5


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, D)
        self.pos = nn.Parameter(torch.randn(64, D) * 0.1)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln1 = nn.LayerNorm(D)
        self.ff1 = nn.Linear(D, 4 * D)
        self.ff2 = nn.Linear(4 * D, D)
        self.ln2 = nn.LayerNorm(D)
        self.conv = nn.Conv1d(D, D, 3, padding=1)
        self.tag = nn.Linear(D, C)
        self.cls = nn.Linear(D, C)

    def forward(self, ids, mask):
        s = ids.shape[1]
        x = self.emb(ids) + self.pos[:s]
        q, k, v = self.qkv(x).split(D, -1)

        def heads(t):
            return t.reshape(1, s, H, D // H).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D // H) + (1.0 - mask[:, None, None, :]) * -1e4
        a = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(1, s, D)
        x = self.ln1(x + self.proj(a))
        x = self.ln2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))
        x = x + self.conv(x.transpose(1, 2)).transpose(1, 2)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.tag(x), self.cls(pooled), x.mean(1), x.max(1).values


class WithClassToken(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, D)
        self.token = nn.Parameter(torch.randn(1, 1, D))

    def forward(self, ids):
        return torch.softmax(torch.cat([self.token, self.emb(ids)], 1), 1)


model = Encoder().eval()
ids, mask = torch.randint(0, 50, (1, 9)), torch.ones(1, 9)
torch.onnx.export(model, (ids, mask), f"{work}/encoder.onnx", input_names=["ids", "mask"],
                  output_names=["tags", "logits", "mean", "max"],
                  dynamic_axes={"ids": {1: "S"}, "mask": {1: "S"}, "tags": {1: "S"}}, opset_version=13)
torch.onnx.export(model, (ids, mask), f"{work}/encoder_bs.onnx", input_names=["ids", "mask"],
                  output_names=["tags", "logits", "mean", "max"],
                  dynamic_axes={"ids": {0: "B", 1: "S"}, "mask": {0: "B", 1: "S"}, "tags": {0: "B", 1: "S"}},
                  opset_version=13)
torch.onnx.export(WithClassToken().eval(), (ids,), f"{work}/class_token.onnx", input_names=["ids"],
                  output_names=["y"], dynamic_axes={"ids": {1: "S"}, "y": {1: "S"}}, opset_version=13)
for n in (1, 5, 16, 17, 48, 49):
    ids, mask = torch.randint(1, 50, (1, n)), torch.ones(1, n)
    if n > 3:
        mask[0, -2:] = 0  # the user's own padding tokens, masked by the model
    np.savez(f"{work}/in{n}.npz", ids=ids.numpy(), mask=mask.numpy())
    with torch.no_grad():
        tags, logits, mean, mx = model(ids, mask)
    np.savez(f"{work}/ref{n}.npz", tags=tags.numpy(), logits=logits.numpy(), mean=mean.numpy(), max=mx.numpy())
np.savez(f"{work}/uneven.npz", ids=np.ones((1, 5), np.int64), mask=np.ones((1, 6), np.float32))


class Batched(nn.Module):  # attention over S for every item of a batch B, masked mean pooling
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, D)
        self.qkv = nn.Linear(D, 3 * D)
        self.ln = nn.LayerNorm(D)
        self.tag = nn.Linear(D, C)

    def forward(self, ids, mask):
        b, s = ids.shape
        x = self.emb(ids)
        q, k, v = self.qkv(x).split(D, -1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D) + (1.0 - mask[:, None, :]) * -1e4
        x = self.ln(x + torch.softmax(scores, -1) @ v)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.tag(x), pooled


batched = Batched().eval()
torch.onnx.export(batched, (torch.randint(0, 50, (2, 9)), torch.ones(2, 9)), f"{work}/batched.onnx",
                  input_names=["ids", "mask"], output_names=["tags", "pooled"],
                  dynamic_axes={"ids": {0: "B", 1: "S"}, "mask": {0: "B", 1: "S"}, "tags": {0: "B", 1: "S"},
                                "pooled": {0: "B"}}, opset_version=13)
for b, s in ((1, 5), (3, 17), (4, 24), (2, 1)):
    ids, mask = torch.randint(1, 50, (b, s)), torch.ones(b, s)
    if s > 3:
        mask[0, -2:] = 0
    np.savez(f"{work}/batched_in{b}x{s}.npz", ids=ids.numpy(), mask=mask.numpy())
    with torch.no_grad():
        tags, pooled = batched(ids, mask)
    np.savez(f"{work}/batched_ref{b}x{s}.npz", tags=tags.numpy(), pooled=pooled.numpy())
PY
then
  cat "$WORK/export.log"; echo "could not export the models with PyTorch"; echo "0 1"; exit 0
fi

check "compile --bounds S=1..48" "$AGATE" compile "$WORK/encoder.onnx" -o "$WORK/encoder.agm" --bounds S=1..48 \
  --target "llvm -mcpu=x86-64-v3"
check "inspect prints the padded symbol" sh -c "'$AGATE' inspect '$WORK/encoder.agm' |
  grep -q 'symbol S=1..48, variants 16,32,48, padded (on ids\[axis 1\] mask\[axis 1\] tags\[axis 1\]'"
for n in 1 5 16 17 48; do
  check "run at S = $n matches PyTorch" sh -c "'$AGATE' run '$WORK/encoder.agm' --inputs '$WORK/in$n.npz' --outputs '$WORK/out$n.npz' &&
    /usr/bin/python3 -c \"
import numpy as np, sys
got, want = np.load('$WORK/out$n.npz'), np.load('$WORK/ref$n.npz')
ok = got['tags'].shape == (1, $n, 5) and all(
    got[k].shape == want[k].shape and np.allclose(got[k], want[k], rtol=1e-4, atol=1e-5) for k in want.files)
sys.exit(0 if ok else 1)\""
done
check "S = 49 names the input, the axis, the symbol and its bounds" sh -c \
  "'$AGATE' run '$WORK/encoder.agm' --inputs '$WORK/in49.npz' 2>&1 | grep -q \"input 0 'ids' has extent 49 on axis 1 (symbol S), outside its bounds 1..48\""
check "ids and mask of different lengths are refused" sh -c \
  "'$AGATE' run '$WORK/encoder.agm' --inputs '$WORK/uneven.npz' 2>&1 | grep -q \"bind symbol S to different extents: 5 and 6\""
check "a class token (S + 1 positions) is refused naming the Concat" sh -c \
  "! '$AGATE' compile '$WORK/class_token.onnx' -o '$WORK/class_token.agm' --bounds S=1..48 --target 'llvm -mcpu=x86-64-v3' 2>'$WORK/cls.err' &&
   grep -q \"Concat '/Concat' output '/Concat_output_0' has shapes \[1,17,32\] and \[1,18,32\] at S = 16 and 17\" '$WORK/cls.err' &&
   test ! -e '$WORK/class_token.agm'"
check "a second unknown dim (B) is named, with the --input-shape that fixes it" sh -c \
  "! '$AGATE' compile '$WORK/encoder_bs.onnx' -o '$WORK/encoder_bs.agm' --bounds S=1..48 2>'$WORK/bs.err' &&
   grep -q \"input 'ids' has the unknown dimension(s) 'B' besides the symbol S: fix them with --input-shape, e.g. --input-shape ids:1xS, or bound them with another --bounds\" '$WORK/bs.err'"
# Two symbols: a batch B and a sequence S, both padded (variants B in 1,4 x S in 16,24).
check "compile --bounds B=1..4 --bounds S=1..24" "$AGATE" compile "$WORK/batched.onnx" -o "$WORK/batched.agm" \
  --bounds B=1..4 --bounds S=1..24 --target "llvm -mcpu=x86-64-v3"
check "inspect prints both symbols" sh -c "'$AGATE' inspect '$WORK/batched.agm' > '$WORK/batched.txt' &&
  grep -q 'symbol B=1..4, variants 1,4, padded (on ids\[axis 0\] mask\[axis 0\] tags\[axis 0\] pooled\[axis 0\]' '$WORK/batched.txt' &&
  grep -q 'symbol S=1..24, variants 16,24, padded (on ids\[axis 1\] mask\[axis 1\] tags\[axis 1\]' '$WORK/batched.txt' &&
  grep -q 'variant B=4,S=24: ' '$WORK/batched.txt'"
for bs in 1x5 3x17 4x24 2x1; do
  check "run at B x S = $bs matches PyTorch" sh -c "'$AGATE' run '$WORK/batched.agm' --inputs '$WORK/batched_in$bs.npz' --outputs '$WORK/batched_out$bs.npz' &&
    /usr/bin/python3 -c \"
import numpy as np, sys
got, want = np.load('$WORK/batched_out$bs.npz'), np.load('$WORK/batched_ref$bs.npz')
sys.exit(0 if all(got[k].shape == want[k].shape and np.allclose(got[k], want[k], rtol=1e-4, atol=1e-5) for k in want.files) else 1)\""
done
echo "$passed $failed"
