"""Text transformers for the model zoo, built from torch.nn modules.

Why by hand: Hugging Face `transformers` is not installed (no internet), so the BERT encoder and the GPT-2
decoder are written here the way `transformers` computes them (BertModel, GPT2LMHeadModel), so their ONNX
exports have the same structure: per-head Linear projections split by view + permute, q k^T / sqrt(d),
an additive padding mask (BERT) or a `torch.where` causal mask (GPT-2), softmax, the heads merged back,
post-LayerNorm (BERT, GELU erf) or pre-LayerNorm (GPT-2, GELU tanh "gelu_new") blocks. Weights are random.
"""
import math

import torch
import torch.nn as nn


def split_heads(x, heads):
    """[B, S, H*D] -> [B, H, S, D]."""
    b, s, d = x.shape
    return x.view(b, s, heads, d // heads).permute(0, 2, 1, 3)


def merge_heads(x):
    """[B, H, S, D] -> [B, S, H*D]."""
    b, h, s, d = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(b, s, h * d)


class BertLayer(nn.Module):
    def __init__(self, d, heads, ff, eps):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=eps)
        self.intermediate = nn.Linear(d, ff)
        self.output = nn.Linear(ff, d)
        self.out_norm = nn.LayerNorm(d, eps=eps)

    def forward(self, x, mask):
        q = split_heads(self.query(x), self.heads)
        k = split_heads(self.key(x), self.heads)
        v = split_heads(self.value(x), self.heads)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        probs = torch.softmax(scores + mask, dim=-1)
        x = self.attn_norm(self.attn_out(merge_heads(torch.matmul(probs, v))) + x)
        h = nn.functional.gelu(self.intermediate(x))
        return self.out_norm(self.output(h) + x)


class BertEncoder(nn.Module):
    """BertModel's embeddings and encoder; returns the last hidden state [B, S, d].
    Inputs: input_ids int64 [B, S], attention_mask int64 [B, S] (1 token, 0 padding)."""

    def __init__(self, layers, d, heads, ff, vocab=30522, max_positions=512, eps=1e-12):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_positions, d)
        self.token_type = nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d, eps=eps)
        self.layers = nn.ModuleList([BertLayer(d, heads, ff, eps) for _ in range(layers)])

    def forward(self, input_ids, attention_mask):
        s = input_ids.shape[1]
        positions = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + self.token_type(torch.zeros_like(input_ids))
        x = self.norm(x)
        # BertModel.get_extended_attention_mask: (1 - mask) * finfo.min, broadcast over heads and queries.
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask)
        return x


def gelu_new(x):
    """GPT-2's tanh approximation of GELU, as transformers writes it."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Gpt2Block(nn.Module):
    def __init__(self, d, heads, max_positions, eps):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(max_positions, max_positions, dtype=torch.bool))
                             .view(1, 1, max_positions, max_positions))

    def forward(self, x):
        d = x.shape[-1]
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = split_heads(q, self.heads), split_heads(k, self.heads), split_heads(v, self.heads)
        w = torch.matmul(q, k.transpose(-1, -2)) / (v.shape[-1] ** 0.5)
        s = q.shape[-2]
        causal = self.bias[:, :, :s, :s]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        a = torch.matmul(torch.softmax(w, dim=-1), v)
        x = x + self.c_proj(merge_heads(a))
        return x + self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x))))


class Gpt2Decoder(nn.Module):
    """A GPT-2 decoder step: the whole context through the blocks with a causal mask, then the next-token
    logits from the last position through the tied embedding. Input: input_ids int64 [B, S]."""

    def __init__(self, layers, d, heads, vocab=50257, max_positions=1024, eps=1e-5):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_positions, d)
        self.blocks = nn.ModuleList([Gpt2Block(d, heads, max_positions, eps) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d, eps=eps)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(torch.arange(s, device=input_ids.device).unsqueeze(0))
        for block in self.blocks:
            x = block(x)
        last = self.ln_f(x)[:, -1, :]
        return torch.matmul(last, self.wte.weight.t())


def token_inputs(generator, tokens, vocab, padding=0, with_mask=True):
    """Random token ids (the last `padding` positions padded) and, for encoders, the attention mask."""
    ids = torch.randint(0, vocab, (1, tokens), generator=generator)
    inputs = {"input_ids": ids}
    if with_mask:
        mask = torch.ones(1, tokens, dtype=torch.int64)
        if padding:
            mask[:, tokens - padding:] = 0
        inputs["attention_mask"] = mask
    return inputs
