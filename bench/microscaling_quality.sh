#!/usr/bin/env bash
# The quality table of docs/models-and-data.md, "Microscaling recipes on real text": final validation loss at step 100
# on the license texts of /usr/share/common-licenses (bytes), quick sizes, lr 3e-4, batch 8, seeds 1-3, for gpt and
# llama, BF16 against FP8 delayed, FP8 block, MXFP8 and NVFP4 with each of its options on and off (all emulated on a
# CPU). Prints a Markdown table: each recipe's loss minus BF16's per seed, and the spread (max - min) over seeds.
# Usage: bench/microscaling_quality.sh [TE_BENCH] (default build/default/app/te-bench). About 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:-build/default/app/te-bench}
[ -x "$bench" ] || { echo "microscaling_quality: $bench is not built (cmake --build --preset default)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus="$work/licenses.txt"
for name in Apache-2.0 Artistic BSD CC0-1.0 GFDL-1.3 GPL-2 GPL-3 LGPL-2.1 LGPL-3 MPL-1.1 MPL-2.0; do
  cat "/usr/share/common-licenses/$name" >> "$corpus"
done
configs=(
  "bf16|--precision bf16"
  "fp8 delayed|--precision fp8 --recipe delayed"
  "fp8 block|--precision fp8 --recipe block"
  "mxfp8|--precision fp8 --recipe mxfp8"
  "nvfp4|--precision fp8 --recipe nvfp4"
  "nvfp4, SR off|--precision fp8 --recipe nvfp4 --nvfp4-stochastic-rounding off"
  "nvfp4, RHT off|--precision fp8 --recipe nvfp4 --nvfp4-hadamard off"
  "nvfp4, SR and RHT off|--precision fp8 --recipe nvfp4 --nvfp4-stochastic-rounding off --nvfp4-hadamard off"
)
for preset in quick-cpu quick-cpu-llama; do
  for seed in 1 2 3; do
    for entry in "${configs[@]}"; do
      label=${entry%%|*}
      read -r -a flags <<< "${entry#*|}"
      out="$work/$preset-$seed-${label//[ ,]/_}.json"
      TEWB_DATA_DIR="$work/store" "$bench" run --preset "$preset" --backend te "${flags[@]}" --data "$corpus" --lr 3e-4 \
        --warmup 10 --iters 90 --seed "$seed" --no-store --json "$out" > /dev/null 2>&1 || { echo "failed: $preset $label seed $seed" >&2; exit 1; }
    done
  done
done
python3 - "$work" "${configs[@]}" <<'PY'
import json, os, sys
work, labels = sys.argv[1], [c.split("|")[0] for c in sys.argv[2:]]
def loss(preset, seed, label):
    path = os.path.join(work, f"{preset}-{seed}-{label.replace(' ', '_').replace(',', '_')}.json")
    record = json.load(open(path))
    runs = record["runs"] if "runs" in record else [record]
    return runs[0]["summary"]["final_val_loss"]
print("| arch | recipe | seed 1 | seed 2 | seed 3 | minus BF16 (seeds 1, 2, 3) | spread |")
print("|---|---|---|---|---|---|---|")
for preset, arch in (("quick-cpu", "gpt"), ("quick-cpu-llama", "llama")):
    base = [loss(preset, s, "bf16") for s in (1, 2, 3)]
    for label in labels:
        values = [loss(preset, s, label) for s in (1, 2, 3)]
        deltas = ", ".join(f"{v - b:+.3f}" for v, b in zip(values, base)) if label != "bf16" else "-"
        print(f"| {arch} | {label} | " + " | ".join(f"{v:.3f}" for v in values) + f" | {deltas} | {max(values) - min(values):.3f} |")
PY
