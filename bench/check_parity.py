#!/usr/bin/env python3
"""te-bench's torch and te backends against the PyTorch reference: same seed, same loss curve.

All build the same model with the same initial weights and train on the same synthetic corpus, so in FP32 on
the CPU every step's loss must agree: the torch backend runs the same LibTorch ops as PyTorch, the te backend
its TE-style modules' reference implementation.
  --arch gpt (default): MiniGPT against minigpt_reference.py, 40 steps, to 1e-5 relative (in practice identical).
  --arch llama: the Llama-style model (grouped-query attention, 2 key/value heads for 4 query heads) against
    llama_reference.py, 20 steps, to 1e-4 relative (the torch backend calls the same LibTorch ops; the te
    backend's RMSNorm, SwiGLU and rotary are its own compositions, so its float32 rounding differs).
Exit 0 when they do, 1 when not. Run by CTest as `pytorch_parity` and `pytorch_parity_llama`.
  usage: check_parity.py --te-bench PATH [--arch gpt|llama] [--steps N]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
QUICK = ["--layers", "2", "--hidden", "128", "--heads", "4", "--seq", "32", "--vocab", "256", "--batch", "8", "--lr", "3e-3"]
LLAMA = ["--kv-heads", "2"]
# arch: (reference script, te-bench's extra flags, the reference's extra flags, default steps, relative tolerance)
ARCHS = {
    "gpt": ("minigpt_reference.py", [], [], 40, 1e-5),
    "llama": ("llama_reference.py", ["--arch", "llama", *LLAMA], LLAMA, 20, 1e-4),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--te-bench", required=True)
    p.add_argument("--arch", choices=sorted(ARCHS), default="gpt")
    p.add_argument("--steps", type=int, default=None)
    a = p.parse_args()
    script, cpp_flags, py_flags, default_steps, tolerance = ARCHS[a.arch]
    steps = ["--warmup", "0", "--iters", str(a.steps or default_steps)]
    py = json.loads(subprocess.run([sys.executable, os.path.join(HERE, script), "--device", "cpu",
                                    "--precision", "fp32", *QUICK, *py_flags, *steps],
                                   check=True, capture_output=True, text=True).stdout)
    py_losses = py["losses"]
    failed = 0
    for backend in ("torch", "te"):
        cpp = json.loads(subprocess.run([a.te_bench, "run", "--device", "cpu", "--backend", backend, "--precision", "fp32",
                                         "--no-store", "--json", "-", *QUICK, *cpp_flags, *steps],
                                        check=True, capture_output=True, text=True).stdout)
        cpp_losses = [s["loss"] for s in cpp["steps"]]
        for step, (c, q) in enumerate(zip(cpp_losses, py_losses), start=1):
            if abs(c - q) > tolerance * abs(q):
                failed += 1
                print(f"{backend} step {step}: te-bench {c!r} vs PyTorch {q!r}")
        if len(cpp_losses) != len(py_losses):
            failed += 1
            print(f"{backend}: step counts differ: te-bench {len(cpp_losses)}, PyTorch {len(py_losses)}")
        print(f"{backend}: first loss {cpp_losses[0]:.6f}, last te-bench {cpp_losses[-1]:.6f} / PyTorch {py_losses[-1]:.6f}")
    print(f"{2 * len(py_losses) - failed} step comparisons passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
