#!/usr/bin/env python3
"""The seed's MiniGPT in PyTorch (Python): the reference te-bench's torch backend is measured against.

Same architecture as core/model/MiniGpt.cpp (pre-LayerNorm blocks, fused QKV, causal
scaled_dot_product_attention, 4x MLP with tanh GELU, tied LM head), same optimizer (AdamW, betas
0.9/0.95, weight decay 0.1, LibTorch's fused kernel), BF16 autocast with FP32 master weights on the GPU,
FP32 on the CPU. It also reproduces te-bench's initial weights (same seeded CPU generator, same order of
draws as core/model/ParameterInit) and its synthetic corpus (core/train/SyntheticData.cpp), so for the same
seed both train the same model on the same data. Prints one JSON object with the same summary keys as a
te-bench run record, plus the per-step losses.

Code path (what one step runs; te-bench's torch backend runs the same ops, core/model/MiniGpt.cpp):
- Precision: "bf16" is torch.autocast(device_type=<device>, dtype=torch.bfloat16) around the forward and the
  loss, FP32 parameters and optimizer state (as core/train/AutocastScope.h): linears and attention in BF16 on
  BF16 copies of the weights (cast once per forward), LayerNorm, the residual stream and the loss in FP32.
  "fp32": no autocast. Defaults: bf16 on cuda, fp32 on cpu. --weights bf16 (with bf16) is the other recipe
  PyTorch scripts use: the model, its gradients and AdamW's state in bfloat16, no autocast; not te-bench's
  recipe (its losses differ), a figure beside it to tell what the recipe costs.
- Attention: F.scaled_dot_product_attention(is_causal=True) on q, k, v taken by unbind(2) from the fused QKV
  projection (no copy; its backward stacks the three gradients in one write); PyTorch picks the backend
  (flash or cuDNN on Hopper for BF16, head size 64) unless --sdpa names one (torch.nn.attention.sdpa_kernel
  around the step). The JSON's "attention_backend" says which ran: the aten op of one more step, traced by
  torch.profiler after the timed ones (not in the statistics).
- Optimizer: torch.optim.AdamW(fused=True) (aten::_fused_adamw_, on CUDA and CPU), zero_grad(set_to_none=True).
- Data: the whole synthetic batch pool is built once, split into contiguous input and target tensors and moved to
  the device before the first step; a step only indexes a Python list.
- Host syncs (cuda): none inside the loop but one torch.cuda.synchronize() before the first timed step (to
  reset the peak-memory counter). Each step is timed by two CUDA events recorded around it (preallocated);
  losses stay on the device and are read, with the event times, after one synchronize at the end.
  On the CPU each step is timed with time.perf_counter() and its loss read with .item() (both synchronous).
- --compile: torch.compile (default mode, no CUDA graphs) of the forward and the loss, autocast included, so
  the BF16->FP32 upcast of the logits, log-softmax and NLL are fused with the model; its backward comes
  from the same compiled graph (AOTAutograd). The optimizer step runs eagerly (one fused kernel).
"""
import argparse
import bisect
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


class Mt19937_64:
    """std::mt19937_64, bit for bit (the standard fixes its output for a seed)."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = [seed & self.MASK]
        for i in range(1, 312):
            prev = self.state[-1]
            self.state.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & self.MASK)
        self.index = 312

    def __call__(self):
        if self.index >= 312:
            s = self.state
            for i in range(312):
                y = (s[i] & 0xFFFFFFFF80000000) | (s[(i + 1) % 312] & 0x7FFFFFFF)
                s[i] = s[(i + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
            self.index = 0
        x = self.state[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & self.MASK


def synthetic_tokens(vocab, sequences, length, seed, successor_probability=0.6):
    """core/train/SyntheticData.cpp in Python: Zipf unigram mixed with a fixed successor per token."""
    gen = Mt19937_64(seed ^ 0x5EEDDA7A00000001)
    below = lambda bound: (gen() * bound) >> 64
    unit = lambda: (gen() >> 11) * 2.0 ** -53
    successor = list(range(vocab))
    for i in range(vocab - 1, 0, -1):
        j = below(i + 1)
        successor[i], successor[j] = successor[j], successor[i]
    cdf, total = [], 0.0
    for rank in range(vocab):
        total += 1.0 / (rank + 1)
        cdf.append(total)
    cdf = [c / total for c in cdf]
    zipf = lambda: min(bisect.bisect_left(cdf, unit()), vocab - 1)
    tokens = []
    for _ in range(sequences):
        row = [zipf()]
        for _ in range(1, length):
            row.append(successor[row[-1]] if unit() < successor_probability else zipf())
        tokens.append(row)
    return tokens


class ParameterInit:
    """core/model/ParameterInit: float32 values from one seeded CPU generator, in call order."""

    def __init__(self, seed):
        self.generator = torch.Generator().manual_seed(seed)

    def normal(self, shape, std):
        return torch.empty(shape).normal_(0.0, std, generator=self.generator)


class Block(torch.nn.Module):
    def __init__(self, hidden, heads, layers, init):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden)
        self.fc2 = torch.nn.Linear(4 * hidden, hidden)
        residual_std = 0.02 / math.sqrt(2 * layers)
        with torch.no_grad():  # same draws in the same order as core/model/MiniGpt.cpp
            for linear, std in ((self.qkv, 0.02), (self.proj, residual_std), (self.fc1, 0.02), (self.fc2, residual_std)):
                linear.weight.copy_(init.normal(tuple(linear.weight.shape), std))
                linear.bias.zero_()

    def forward(self, x):
        b, s, h = x.shape
        # unbind, as core/model/MiniGpt.cpp: its backward stacks the three gradients (one write); indexing a
        # permuted tensor (qkv[0], qkv[1], qkv[2]) gave each a zero-filled full-size copy, summed, then a copy back.
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class MiniGpt(torch.nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab, seed):
        super().__init__()
        init = ParameterInit(seed)
        self.wte = torch.nn.Parameter(init.normal((vocab, hidden), 0.02))
        self.wpe = torch.nn.Parameter(init.normal((seq, hidden), 0.02))
        self.blocks = torch.nn.ModuleList(Block(hidden, heads, layers, init) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden)

    def forward(self, tokens):
        seq = tokens.shape[1]
        # As te-bench's models: the position table itself when it has exactly seq rows (no gather).
        x = F.embedding(tokens, self.wte) + (self.wpe if self.wpe.shape[0] == seq else self.wpe[:seq])
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte)


def time_steps(train_step, warmup, iters, cuda):
    """Runs warmup + iters steps of train_step(k) (which returns the step's loss tensor). Returns the timed steps' ms,
    every step's loss and the peak memory in bytes. On CUDA each step sits between two preallocated events and the
    losses stay on the device until one synchronize after the loop; peak memory is reset before the first timed
    step. On the CPU: perf_counter around each step, the peak RSS."""
    total = warmup + iters
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(total)] if cuda else []
    times, losses = [], []
    for k in range(total):
        if cuda and k == warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        if cuda:
            start, end = events[k]
            start.record()
            loss = train_step(k)
            end.record()
            losses.append(loss.detach())  # no sync: read after the loop
        else:
            t0 = time.perf_counter()
            losses.append(train_step(k).item())
            times.append((time.perf_counter() - t0) * 1000.0)
    if cuda:
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in events]
        losses = torch.stack(losses).tolist()
        peak = torch.cuda.max_memory_allocated()
    else:
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return times[warmup:] or times, losses, peak


SDPA_OPS = (  # aten op of F.scaled_dot_product_attention -> the backend that ran it
    ("_scaled_dot_product_cudnn_attention", "cudnn"),
    ("_scaled_dot_product_flash_attention_for_cpu", "flash (cpu)"),
    ("_scaled_dot_product_flash_attention", "flash"),
    ("_scaled_dot_product_efficient_attention", "efficient"),
    ("_scaled_dot_product_attention_math", "math"),
)


def attention_backend(train_step, k):
    """Which SDPA backend one more step ran (after the timed ones): the aten op torch.profiler saw, or "unknown"."""
    import warnings
    from torch.profiler import ProfilerActivity, profile
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the profiler's note on cycles, meant for schedules
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            train_step(k)
    names = {e.key for e in prof.key_averages()}
    for op, backend in SDPA_OPS:
        if any(name.endswith(op) for name in names):
            return backend
    return "unknown"


def step_summary(timed, tokens_per_step, peak, final_loss):
    """The JSON summary te-bench's check reads: mean, median and p90 (linear interpolation) ms, tokens/s, peak, loss."""
    mean = statistics.fmean(timed)
    ordered = sorted(timed)
    rank = 0.9 * (len(ordered) - 1)
    lo = int(rank)
    p90 = ordered[lo] + (ordered[min(lo + 1, len(ordered) - 1)] - ordered[lo]) * (rank - lo)
    return {"mean_ms": mean, "median_ms": statistics.median(timed), "p90_ms": p90,
            "tokens_per_s": tokens_per_step / (mean / 1000.0), "peak_mem_bytes": peak, "final_loss": final_loss}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default=None)
    p.add_argument("--compile", action="store_true", help="torch.compile the forward and the loss")
    p.add_argument("--weights", choices=["fp32", "bf16"], default="fp32",
                   help="fp32: FP32 master weights under BF16 autocast (te-bench's recipe); bf16: the model in bfloat16")
    p.add_argument("--sdpa", choices=["auto", "flash", "cudnn", "efficient", "math"], default="auto",
                   help="the attention backend (auto: PyTorch's choice)")
    for name, default in (("layers", 12), ("hidden", 768), ("heads", 12), ("seq", 96), ("vocab", 4096), ("batch", 32),
                          ("warmup", 10), ("iters", 30), ("seed", 1234)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--lr", type=float, default=3e-4)
    a = p.parse_args()
    precision = a.precision or ("bf16" if a.device == "cuda" else "fp32")
    if a.weights == "bf16" and precision != "bf16":
        p.error(f"--weights bf16 needs --precision bf16 (got {precision})")
    device = torch.device(a.device)

    cuda = a.device == "cuda"
    bf16 = precision == "bf16"
    model = MiniGpt(a.layers, a.hidden, a.heads, a.seq, a.vocab, a.seed).to(device)
    pure_bf16 = a.weights == "bf16"
    if pure_bf16:
        model = model.to(torch.bfloat16)
    # aten::_fused_adamw_ on CUDA and on the CPU (torch >= 2.4), the op te-bench's FusedAdamW calls on both.
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=True)
    batch_bytes = a.batch * (a.seq + 1) * 8
    pool = max(1, min(a.warmup + a.iters, 64, (256 << 20) // batch_bytes))  # as the trainer's pool
    data = torch.tensor(synthetic_tokens(a.vocab, pool * a.batch, a.seq + 1, a.seed)).view(pool, a.batch, a.seq + 1)
    # Built once, on the device: contiguous inputs and next-token targets per batch (no per-step slicing copies).
    inputs = [data[i, :, :-1].contiguous().to(device) for i in range(pool)]
    targets = [data[i, :, 1:].contiguous().to(device) for i in range(pool)]

    def forward_loss(tokens, next_tokens):
        with torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=bf16 and not pure_bf16):
            logits = model(tokens)
            return F.cross_entropy(logits.reshape(-1, a.vocab), next_tokens.reshape(-1))

    loss_fn = torch.compile(forward_loss) if a.compile else forward_loss

    def step(k):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(inputs[k % pool], targets[k % pool])
        loss.backward()
        optimizer.step()
        return loss

    if a.sdpa == "auto":
        train_step = step
    else:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        chosen = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                  "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[a.sdpa]

        def train_step(k):
            with sdpa_kernel(chosen):
                return step(k)

    timed, losses, peak = time_steps(train_step, a.warmup, a.iters, cuda)
    ran = attention_backend(train_step, a.warmup + a.iters)
    print(json.dumps({
        "implementation": "pytorch-python" + (" torch.compile" if a.compile else " eager") +
                          (", bf16 weights" if pure_bf16 else "") + ("" if a.sdpa == "auto" else f", sdpa {a.sdpa}"),
        "torch_version": torch.__version__,
        "device": a.device, "precision": precision, "weights": a.weights,
        "sdpa": a.sdpa, "attention_backend": ran,
        "summary": step_summary(timed, a.batch * a.seq, peak, losses[-1]),
        "losses": losses,
    }))


if __name__ == "__main__":
    main()
