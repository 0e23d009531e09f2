#!/usr/bin/env python3
"""te-bench (C++, LibTorch) against the same MiniGPT in PyTorch (Python, eager), on this machine's CPU.

Runs both with the same configurations, alternating, several rounds, and prints the median ms per timed
step of each and their ratio. Two configurations: "quick-cpu" (the CPU preset; small enough that per-op
host overhead is a visible part of a step) and "small" (4 layers, hidden 256: GEMM-bound, where both
call the same BLAS and can only tie). Usage:
  bench/cpu_vs_pytorch.py [--te-bench build/default/app/te-bench] [--rounds 3]
Run it with the python of the set-up script's virtual environment (it needs torch).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {
    "quick-cpu": {"layers": 2, "hidden": 128, "heads": 4, "seq": 32, "vocab": 256, "batch": 8, "warmup": 10, "iters": 100},
    "small": {"layers": 4, "hidden": 256, "heads": 4, "seq": 64, "vocab": 1024, "batch": 8, "warmup": 5, "iters": 25},
}


def flags(config):
    return [f"--{k}={v}" for k, v in config.items()]


def run_te_bench(binary, config):
    out = subprocess.run([binary, "run", "--device", "cpu", "--precision", "fp32", "--no-store", "--json", "-", *flags(config)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["summary"]


def run_python(config):
    out = subprocess.run([sys.executable, os.path.join(HERE, "minigpt_reference.py"), "--device", "cpu", "--precision", "fp32",
                          *flags(config)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["summary"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--te-bench", default=os.path.join(HERE, "..", "build", "default", "app", "te-bench"))
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    print(f"CPU, fp32, {a.rounds} rounds alternating, median of the per-run median ms per timed step")
    print(f"{'configuration':<12}{'te-bench (C++)':>16}{'PyTorch (Python)':>18}{'PyTorch / te-bench':>20}")
    for label, config in CONFIGS.items():
        cpp, py = [], []
        for _ in range(a.rounds):
            cpp.append(run_te_bench(a.te_bench, config)["median_ms"])
            py.append(run_python(config)["median_ms"])
        cpp_ms, py_ms = statistics.median(cpp), statistics.median(py)
        print(f"{label:<12}{cpp_ms:>16.2f}{py_ms:>18.2f}{py_ms / cpp_ms:>20.3f}")
    for label, config in CONFIGS.items():
        print(f"  {label}: " + " ".join(flags(config)))
    print("ratio above 1: te-bench is faster")

if __name__ == "__main__":
    main()
