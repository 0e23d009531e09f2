#!/usr/bin/env python3
"""The GPU check's first stage: every backend x precision x recipe x arch x (eager, graph) trained for 3 steps at
2 layers of the seed's sizes, so a configuration that fails shows within the first minute and a half.

    usage: tests/gpu/smoke_table.py TE_BENCH OUT_DIR [--preset seed|quick-cpu] [--jobs N]

Rows: torch BF16, te BF16, te FP8 under delayed, current and block scaling; gpt and llama; eager and CUDA graph.
Per row: finished or the error, the fused path's fallbacks, FP8 native or emulated, the graph, median ms (several
rows run at once, so the ms only tell a row that is far off). Exit 1 when a row did not finish, the te rows fell
back to the reference anywhere, FP8 was emulated on Hopper, or a graph row ran eager on a GPU; 0 otherwise. The
records go to OUT_DIR/smoke/, the table to OUT_DIR/smoke.txt too.

--preset quick-cpu is the dry run on a machine without a GPU (tests/gpu/check-on-gpu.sh with
TEWB_CHECK_PRESET=quick-cpu): the quick sizes, --device cpu, the te rows on the fused host path; graph rows run
eager there and FP8 is emulated, which a CPU is allowed.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

ROWS = [("torch", "bf16", None), ("te", "bf16", None), ("te", "fp8", "delayed"), ("te", "fp8", "current"),
        ("te", "fp8", "block")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("te_bench")
    parser.add_argument("out")
    parser.add_argument("--preset", choices=["seed", "quick-cpu"], default="seed")
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    out = os.path.join(args.out, "smoke")
    os.makedirs(out, exist_ok=True)
    cpu = args.preset == "quick-cpu"
    info = subprocess.run([args.te_bench, "info", "--json"], capture_output=True, text=True)
    try:
        cc = json.loads(info.stdout).get("device", {}).get("compute_capability") or ""
    except json.JSONDecodeError:
        cc = ""
    hopper = str(cc).startswith("9.")

    jobs = []
    for arch in ("gpt", "llama"):
        for graph in ("off", "on"):
            for backend, precision, recipe in ROWS:
                preset = {"seed": {"gpt": "seed", "llama": "llama-seed"},
                          "quick-cpu": {"gpt": "quick-cpu", "llama": "quick-cpu-llama"}}[args.preset][arch]
                name = f"{arch} {backend} {precision}{' ' + recipe if recipe else ''} {'graph' if graph == 'on' else 'eager'}"
                command = [args.te_bench, "run", "--preset", preset, "--layers", "2", "--warmup", "1", "--iters", "2",
                           "--backend", backend, "--precision", precision, "--cuda-graph", graph, "--no-store",
                           "--device", "cpu" if cpu else "cuda"]
                if recipe:
                    command += ["--recipe", recipe]
                if backend == "te" and cpu:
                    command += ["--te-impl", "fused"]
                record = os.path.join(out, name.replace(" ", "-") + ".json")
                jobs.append((name, backend, precision, graph, command + ["--json", record], record))

    def run(job):
        name, backend, precision, graph, command, record = job
        with tempfile.TemporaryDirectory() as data:
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=240,
                                      env=dict(os.environ, TEWB_DATA_DIR=data))
                return job, done.returncode, done.stderr
            except subprocess.TimeoutExpired:
                return job, None, "timed out after 240 s"

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run, jobs))

    lines = [f"smoke table ({args.preset} sizes, 2 layers, 3 steps; compute capability {cc or 'none'}):",
             f"{'row':<34}{'outcome':<12}{'fallbacks':>10}  {'fp8':<9}{'graph':<8}{'median ms':>10}"]
    problems = []
    for (name, backend, precision, graph, _, record), rc, stderr in results:
        try:
            r = json.load(open(record))
        except (OSError, json.JSONDecodeError):
            r = None
        if r is None or rc != 0 or r.get("status") != "finished":
            why = (r or {}).get("message") or (stderr.strip().splitlines() or ["no record"])[-1]
            lines.append(f"{name:<34}{'FAILED':<12}{'-':>10}  {'-':<9}{'-':<8}{'-':>10}  {why[:160]}")
            problems.append(f"{name}: did not finish (exit {rc}): {why}")
            continue
        e = r["execution"]
        fallbacks = sum(f.get("count", 0) for f in e.get("fallbacks", []))
        fp8 = "-" if precision != "fp8" else ("emulated" if e.get("fp8_emulated") else "native")
        graphed = "graph" if e.get("graph_kernels") else "eager"
        median = r["summary"].get("median_ms")
        lines.append(f"{name:<34}{'finished':<12}{fallbacks:>10}  {fp8:<9}{graphed:<8}"
                     f"{(f'{median:.2f}' if isinstance(median, (int, float)) else '-'):>10}")
        if backend == "te" and fallbacks:
            first = e["fallbacks"][0]
            problems.append(f"{name}: {fallbacks} fallbacks, first {first['op']}: {first['reason']}")
        if precision == "fp8" and fp8 == "emulated" and hopper:
            problems.append(f"{name}: FP8 emulated on Hopper (compute capability {cc})")
        if graph == "on" and graphed == "eager" and not cpu:
            problems.append(f"{name}: ran eager: {e.get('cuda_graph_note', '')}")
    lines.append(f"{len(results) - len(set(p.split(':')[0] for p in problems))} of {len(results)} rows clean")
    lines += [f"SMOKE FAIL: {p}" for p in problems]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(args.out, "smoke.txt"), "w") as f:
        f.write(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
