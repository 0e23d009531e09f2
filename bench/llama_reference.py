#!/usr/bin/env python3
"""A Llama-style decoder in PyTorch (Python): the reference te-bench's `--arch llama` is checked against.

Same architecture as core/model/Llama.cpp: token embeddings (no position table); pre-RMSNorm blocks without
biases, each a fused QKV projection with grouped-query key/value heads, rotary position embeddings on the
queries and keys (rotate-half pairs (i, i + d/2), angle p * base^(-2i/d)), causal scaled_dot_product_attention,
an output projection, then RMSNorm and a SwiGLU MLP (fc1 writes [gate | up], fc2 reads silu(gate) * up); a final
RMSNorm and an LM head tied to the token embedding. Same optimizer as te-bench (AdamW, betas 0.9/0.95, weight
decay 0.1, LibTorch's fused kernel), BF16 autocast with FP32 master weights on the GPU, FP32 on the CPU.

It reproduces te-bench's initial weights (one seeded CPU generator, the draws in core/model/Llama.cpp's order:
wte, then per block qkv, proj, fc1, fc2) and its synthetic corpus (minigpt_reference.py), so for the same seed
both train the same model on the same data. Prints one JSON object with the per-step losses.

Code path (what one step runs; te-bench's torch backend runs the same ops, core/model/Llama.cpp):
- Precision: "bf16" is torch.autocast(device_type=<device>, dtype=torch.bfloat16) around the forward and the
  loss, FP32 parameters and optimizer state (as core/train/AutocastScope.h): linears and attention in BF16 on
  BF16 copies of the weights, RMSNorm, rotary (computed in FP32, rounded once to BF16), the residual stream
  and the loss in FP32. "fp32": no autocast. Defaults: bf16 on cuda, fp32 on cpu.
- Attention: q, k, v split (split_with_sizes: no copy; the backward concatenates, one write) from the fused QKV
  projection; rotary on q and k together (one FP32 cast, chunk into halves, one cat); the rotary tables'
  [1, seq, 1, d/2] views made once per forward; F.scaled_dot_product_attention(is_causal=True,
  enable_gqa=kv_heads < heads): PyTorch picks the backend (flash on Hopper for BF16; GQA runs on the flash
  and math backends), nothing is forced.
- Optimizer: torch.optim.AdamW(fused=True) (aten::_fused_adamw_, on CUDA and CPU), zero_grad(set_to_none=True).
- Data: the synthetic batch pool built once, split into contiguous input and target tensors on the device.
- Host syncs (cuda): none inside the loop but one torch.cuda.synchronize() before the first timed step (to
  reset the peak-memory counter). Each step is timed by two preallocated CUDA events recorded around it;
  losses stay on the device and are read, with the event times, after one synchronize at the end.
  On the CPU each step is timed with time.perf_counter() and its loss read with .item() (both synchronous).
- --compile: torch.compile (default mode, no CUDA graphs) of the forward and the loss, autocast included; its
  backward from the same compiled graph. The optimizer step runs eagerly (one fused kernel).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from minigpt_reference import ParameterInit, step_summary, synthetic_tokens, time_steps  # noqa: E402

RMS_NORM_EPS = 1e-5  # core/model/ModelShape.h, kRmsNormEps


def ffn_hidden(hidden, ffn):
    """core/model/ModelShape.h: --ffn, or 8/3 of hidden rounded up to a multiple of 64."""
    if ffn > 0:
        return ffn
    raw = (8 * hidden + 2) // 3
    return (raw + 63) // 64 * 64


def rotary_tables(seq, head_dim, base):
    """core/model/Rotary.cpp: the angles in double precision, rounded once to float32, [seq, head_dim / 2]."""
    half = head_dim // 2
    inv_freq = [math.pow(base, -2.0 * i / head_dim) for i in range(half)]
    cos = torch.tensor([[math.cos(p * f) for f in inv_freq] for p in range(seq)], dtype=torch.float32)
    sin = torch.tensor([[math.sin(p * f) for f in inv_freq] for p in range(seq)], dtype=torch.float32)
    return cos, sin


def apply_rotary(x, cos, sin):
    """x [batch, seq, heads, d]; cos, sin broadcastable to [batch, seq, heads, d/2] ([1, seq, 1, d/2]): each pair
    (i, i + d/2) turned by its position's angle, in float32 (one cast of x, not one per half)."""
    a, b = x.float().chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1).to(x.dtype)


class Attention(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.qkv = torch.nn.Linear(hidden, (heads + 2 * kv_heads) * self.head_dim, bias=False)
        self.proj = torch.nn.Linear(hidden, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        qkv = self.qkv(x).view(b, s, self.heads + 2 * self.kv_heads, self.head_dim)
        # Splits, not slices (as core/model/Llama.cpp): a split's backward concatenates its parts' gradients in one
        # write, where each slice's is a zero-filled copy of the whole, then summed.
        qk, v = qkv.split((self.heads + self.kv_heads, self.kv_heads), dim=2)
        q, k = apply_rotary(qk, cos, sin).split((self.heads, self.kv_heads), dim=2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                           enable_gqa=self.kv_heads < self.heads)
        return self.proj(y.transpose(1, 2).reshape(b, s, h))


class SwiGluMlp(torch.nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.ffn = ffn
        self.fc1 = torch.nn.Linear(hidden, 2 * ffn, bias=False)  # rows: gate, then up
        self.fc2 = torch.nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        gate, up = self.fc1(x).split(self.ffn, dim=-1)
        return self.fc2(F.silu(gate) * up)


class Block(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn, layers, init):
        super().__init__()
        self.attn_norm = torch.nn.RMSNorm(hidden, eps=RMS_NORM_EPS)
        self.attn = Attention(hidden, heads, kv_heads)
        self.mlp_norm = torch.nn.RMSNorm(hidden, eps=RMS_NORM_EPS)
        self.mlp = SwiGluMlp(hidden, ffn)
        residual_std = 0.02 / math.sqrt(2 * layers)
        with torch.no_grad():  # same draws in the same order as core/model/Llama.cpp
            for linear, std in ((self.attn.qkv, 0.02), (self.attn.proj, residual_std), (self.mlp.fc1, 0.02),
                                (self.mlp.fc2, residual_std)):
                linear.weight.copy_(init.normal(tuple(linear.weight.shape), std))

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Llama(torch.nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn, seq, vocab, rope_base, seed):
        super().__init__()
        init = ParameterInit(seed)
        self.wte = torch.nn.Parameter(init.normal((vocab, hidden), 0.02))
        self.blocks = torch.nn.ModuleList(Block(hidden, heads, kv_heads, ffn, layers, init) for _ in range(layers))
        self.norm_f = torch.nn.RMSNorm(hidden, eps=RMS_NORM_EPS)
        cos, sin = rotary_tables(seq, hidden // heads, rope_base)
        self.register_buffer("rope_cos", cos)
        self.register_buffer("rope_sin", sin)

    def forward(self, tokens):
        seq = tokens.shape[1]
        cos = self.rope_cos[:seq].view(1, seq, 1, -1)  # [1, seq, 1, d/2], once per forward
        sin = self.rope_sin[:seq].view(1, seq, 1, -1)
        x = F.embedding(tokens, self.wte)
        for block in self.blocks:
            x = block(x, cos, sin)
        return F.linear(self.norm_f(x), self.wte)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default=None)
    p.add_argument("--compile", action="store_true", help="torch.compile the forward and the loss")
    for name, default in (("layers", 12), ("hidden", 768), ("heads", 12), ("kv-heads", 4), ("ffn", 0), ("seq", 96),
                          ("vocab", 4096), ("batch", 32), ("warmup", 10), ("iters", 30), ("seed", 1234)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--rope-base", type=float, default=10000.0)
    p.add_argument("--lr", type=float, default=3e-4)
    a = p.parse_args()
    if a.kv_heads <= 0 or a.heads % a.kv_heads != 0:
        p.error(f"--kv-heads {a.kv_heads} must divide --heads {a.heads}")
    if a.hidden % a.heads != 0 or (a.hidden // a.heads) % 2 != 0:
        p.error(f"--hidden {a.hidden} / --heads {a.heads} must be an even head size")
    return a


def main():
    a = parse_args()
    precision = a.precision or ("bf16" if a.device == "cuda" else "fp32")
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    bf16 = precision == "bf16"
    model = Llama(a.layers, a.hidden, a.heads, a.kv_heads, ffn_hidden(a.hidden, a.ffn), a.seq, a.vocab, a.rope_base,
                  a.seed).to(device)
    # aten::_fused_adamw_ on CUDA and on the CPU (torch >= 2.4), the op te-bench's FusedAdamW calls on both.
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=True)
    batch_bytes = a.batch * (a.seq + 1) * 8
    pool = max(1, min(a.warmup + a.iters, 64, (256 << 20) // batch_bytes))  # as the trainer's pool
    data = torch.tensor(synthetic_tokens(a.vocab, pool * a.batch, a.seq + 1, a.seed)).view(pool, a.batch, a.seq + 1)
    # Built once, on the device: contiguous inputs and next-token targets per batch (no per-step slicing copies).
    inputs = [data[i, :, :-1].contiguous().to(device) for i in range(pool)]
    targets = [data[i, :, 1:].contiguous().to(device) for i in range(pool)]

    def forward_loss(tokens, next_tokens):
        with torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=bf16):
            logits = model(tokens)
            return F.cross_entropy(logits.reshape(-1, a.vocab), next_tokens.reshape(-1))

    loss_fn = torch.compile(forward_loss) if a.compile else forward_loss

    def train_step(k):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(inputs[k % pool], targets[k % pool])
        loss.backward()
        optimizer.step()
        return loss

    timed, losses, peak = time_steps(train_step, a.warmup, a.iters, cuda)
    print(json.dumps({
        "implementation": "pytorch-python" + (" torch.compile" if a.compile else " eager") + " (llama)",
        "torch_version": torch.__version__,
        "device": a.device, "precision": precision,
        "summary": step_summary(timed, a.batch * a.seq, peak, losses[-1]),
        "losses": losses,
    }))

if __name__ == "__main__":
    main()
