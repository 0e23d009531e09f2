#!/usr/bin/env python3
"""The seed's MiniGPT in PyTorch (Python): the reference te-bench's torch backend is measured against.

Same architecture as core/model/MiniGpt.cpp (pre-LayerNorm blocks, fused QKV, causal
scaled_dot_product_attention, 4x MLP with tanh GELU, tied LM head), same optimizer (AdamW, betas
0.9/0.95, weight decay 0.1, LibTorch's fused kernel), BF16 autocast with FP32 master weights on the GPU,
FP32 on the CPU. Prints one JSON object with the same summary keys as a te-bench run record.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, hidden, heads, layers):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden)
        self.fc2 = torch.nn.Linear(4 * hidden, hidden)
        for linear, std in ((self.qkv, 0.02), (self.proj, 0.02 / math.sqrt(2 * layers)), (self.fc1, 0.02),
                            (self.fc2, 0.02 / math.sqrt(2 * layers))):
            torch.nn.init.normal_(linear.weight, 0.0, std)
            torch.nn.init.zeros_(linear.bias)

    def forward(self, x):
        b, s, h = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class MiniGpt(torch.nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab):
        super().__init__()
        self.wte = torch.nn.Parameter(torch.randn(vocab, hidden) * 0.02)
        self.wpe = torch.nn.Parameter(torch.randn(seq, hidden) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(hidden, heads, layers) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden)

    def forward(self, tokens):
        x = self.wte[tokens] + self.wpe[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default=None)
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    for name, default in (("layers", 12), ("hidden", 768), ("heads", 12), ("seq", 96), ("vocab", 4096), ("batch", 32),
                          ("warmup", 10), ("iters", 30), ("seed", 1234)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--lr", type=float, default=3e-4)
    a = p.parse_args()
    precision = a.precision or ("bf16" if a.device == "cuda" else "fp32")
    torch.manual_seed(a.seed)
    device = torch.device(a.device)

    model = MiniGpt(a.layers, a.hidden, a.heads, a.seq, a.vocab).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=True)
    step_fn = torch.compile(model) if a.compile else model
    pool = min(a.warmup + a.iters, 64)
    data = torch.randint(0, a.vocab, (pool, a.batch, a.seq + 1), device=device)

    def train_step(k):
        batch = data[k % pool]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits = step_fn(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, a.vocab), batch[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    cuda = a.device == "cuda"
    times, losses = [], []
    for k in range(a.warmup + a.iters):
        if cuda and k == a.warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = train_step(k)
            end.record()
            times.append((start, end))
            losses.append(loss.detach())
        else:
            t0 = time.perf_counter()
            loss = train_step(k).item()
            times.append((time.perf_counter() - t0) * 1000.0)
            losses.append(loss)
    if cuda:
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in times]
        losses = [l.item() for l in losses]
    timed = times[a.warmup:]
    mean = statistics.fmean(timed)
    tokens = a.batch * a.seq
    if cuda:
        peak = torch.cuda.max_memory_allocated()
    else:
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    timed_sorted = sorted(timed)
    rank = 0.9 * (len(timed_sorted) - 1)
    lo = int(rank)
    p90 = timed_sorted[lo] + (timed_sorted[min(lo + 1, len(timed_sorted) - 1)] - timed_sorted[lo]) * (rank - lo)
    print(json.dumps({
        "implementation": "pytorch-python" + (" torch.compile" if a.compile else " eager"),
        "torch_version": torch.__version__,
        "device": a.device, "precision": precision,
        "summary": {"mean_ms": mean, "median_ms": statistics.median(timed), "p90_ms": p90,
                    "tokens_per_s": tokens / (mean / 1000.0), "peak_mem_bytes": peak, "final_loss": losses[-1]},
    }))


if __name__ == "__main__":
    main()
