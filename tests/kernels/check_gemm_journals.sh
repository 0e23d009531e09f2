#!/usr/bin/env bash
# The GEMM journals against the GEMM's rule table (docs/kernels.md, "The scale storage contract"):
#   1. the checked-in journals of the seed presets (tests/gpu/gemm-journals/, what the GPU check replays) pass it;
#   2. journals written now, by this build's fused host path, for a gpt and a llama at the quick sizes in BF16 and
#      FP8 under every recipe (three steps: the first, calibrated or not, and two that use the state's slots), pass
#      it, so a change that hands a GEMM a misaligned pointer fails here rather than on the next GPU;
#   3. a journal whose weight scale_inv sits 4 bytes in (the H200's status 15 of 2026-12-04) is refused, naming it.
#   usage: check_gemm_journals.sh REPLAY TE_BENCH JOURNAL_DIR SCRATCH
set -uo pipefail
replay=${1:?usage: check_gemm_journals.sh REPLAY TE_BENCH JOURNAL_DIR SCRATCH}
bench=${2:?}
journals=${3:?}
scratch=${4:?}
rm -rf "$scratch" && mkdir -p "$scratch"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

echo "== 1. the checked-in journals ($journals)"
shopt -s nullglob
checked_in=("$journals"/*.json)
[ ${#checked_in[@]} -ge 8 ] || fail "expected 8 checked-in journals (seed and llama-seed x bf16, delayed, current, block), found ${#checked_in[@]}"
if [ ${#checked_in[@]} -gt 0 ]; then
  "$replay" --rules-only "${checked_in[@]}" > "$scratch/checked-in.txt" 2>&1 || fail "a checked-in journal breaks the rules: $(grep -m3 REFUSED "$scratch/checked-in.txt")"
  tail -1 "$scratch/checked-in.txt"
fi

echo "== 2. journals written by this build (quick sizes, fused host path)"
fresh=()
for preset in quick-cpu quick-cpu-llama; do
  for config in "bf16 delayed" "fp8 delayed" "fp8 current" "fp8 block"; do
    read -r precision recipe <<< "$config"
    file="$scratch/$preset-$precision-$recipe.json"
    flags=(--precision "$precision")
    [ "$precision" = fp8 ] && flags+=(--recipe "$recipe")
    if ! "$bench" run --preset "$preset" --backend te --te-impl fused --device cpu "${flags[@]}" --warmup 1 --iters 2 \
         --no-store --gemm-journal "$file" > "$scratch/run.log" 2>&1; then
      fail "te-bench run --preset $preset ${flags[*]} --gemm-journal: exit $?: $(tail -3 "$scratch/run.log")"
      continue
    fi
    [ "$precision" = bf16 ] && [ "$preset" = quick-cpu ] && cp "$file" "$scratch/bf16.json"
    [ "$precision" = fp8 ] && [ "$recipe" = delayed ] && [ "$preset" = quick-cpu ] && cp "$file" "$scratch/fp8.json"
    fresh+=("$file")
  done
done
if [ ${#fresh[@]} -gt 0 ]; then
  "$replay" --rules-only "${fresh[@]}" > "$scratch/fresh.txt" 2>&1 || fail "this build hands a GEMM what the rules refuse: $(grep -m3 REFUSED "$scratch/fresh.txt")"
  tail -1 "$scratch/fresh.txt"
  grep -q '"b.scale_inv"' "$scratch/fp8.json" 2>/dev/null || fail "the FP8 journal records no scale_inv alignment"
fi

echo "== 3. a weight scale_inv 4 bytes into a packed array is refused"
if [ -f "$scratch/fp8.json" ]; then
  sed 's/"b.scale_inv": [0-9]*/"b.scale_inv": 4/' "$scratch/fp8.json" > "$scratch/misaligned.json"
  "$replay" --rules-only "$scratch/misaligned.json" > "$scratch/misaligned.txt" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "a 4-byte aligned b.scale_inv passed (exit $rc)"
  grep -q 'REFUSED.*(Misaligned): b.scale_inv' "$scratch/misaligned.txt" || fail "the refusal does not name b.scale_inv: $(head -2 "$scratch/misaligned.txt")"
  grep -m1 REFUSED "$scratch/misaligned.txt" | cut -c1-200
fi

echo "== 4. bad input: exit 2 with the reason"
echo '{"schema": "tewb-gemm-journal/1", "written_by": "x", "run": "y", "gemms": [{"op": "gemm"}]}' > "$scratch/bad.json"
"$replay" --rules-only "$scratch/bad.json" > "$scratch/bad.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q 'gemms\[0\]\.m' "$scratch/bad.txt" || fail "a journal missing m: exit $rc, $(cat "$scratch/bad.txt")"
"$bench" run --preset quick-cpu --backend torch --no-store --gemm-journal "$scratch/torch.json" > "$scratch/torch.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q -- '--gemm-journal.*--backend torch' "$scratch/torch.txt" || fail "--gemm-journal with --backend torch: exit $rc, $(cat "$scratch/torch.txt")"

[ $failed -eq 0 ] && echo "PASS" || echo "FAILED"
exit $failed
