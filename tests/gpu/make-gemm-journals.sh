#!/usr/bin/env bash
# Writes the checked-in GEMM journals (tests/gpu/gemm-journals/): every distinct GEMM a training step of the seed
# presets issues on the fused path, BF16 and FP8 under each recipe, as this build's fused host path issues them on
# the CPU. The GPU check replays them first (tests/gpu/check-on-gpu.sh); CI checks them against the rule table
# (tests/kernels/check_gemm_journals.sh). Regenerate whenever a change alters which GEMMs a step issues or where FP8
# scales live. Two layers (a GEMM's shape does not depend on the layer count; every layer's pointers come from the
# same code), the seed's batch, sequence, hidden size and vocabulary, three steps (the first, and two that read the
# FP8 state's slots). About 10 minutes on 2 cores.
#   usage: tests/gpu/make-gemm-journals.sh [TE_BENCH]   (default build/default/app/te-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${1:-build/default/app/te-bench}
[ -x "$bench" ] || { echo "make-gemm-journals: $bench is not built (cmake --build --preset default)" >&2; exit 2; }
out=tests/gpu/gemm-journals
mkdir -p "$out"
for preset in seed llama-seed; do
  for config in "bf16 -" "fp8 delayed" "fp8 current" "fp8 block"; do
    read -r precision recipe <<< "$config"
    name=$preset-$precision
    flags=(--precision "$precision")
    if [ "$recipe" != - ]; then flags+=(--recipe "$recipe"); name=$name-$recipe; fi
    start=$(date +%s)
    TEWB_DATA_DIR=$(mktemp -d) "$bench" run --preset "$preset" --layers 2 --backend te --te-impl fused --device cpu \
      "${flags[@]}" --warmup 1 --iters 2 --no-store --gemm-journal "$out/$name.json" > /dev/null
    echo "make-gemm-journals: $out/$name.json ($(grep -c '"op"' "$out/$name.json") GEMMs, $(( $(date +%s) - start )) s)"
  done
done
