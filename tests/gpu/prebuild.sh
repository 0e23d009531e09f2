#!/usr/bin/env bash
# Builds the GPU check's programs here (no GUI, CUDA code for compute capability 9.0 only) and stages
# them in .gpu-bin/ (git-ignored), so that a lent GPU machine spends its minutes testing, not compiling:
# tests/gpu/check-on-gpu.sh uses .gpu-bin/ when its programs start there and builds from source when
# they do not. Needs what the README's set-up installs. Carry `.gpu-bin` and `.deps` (for the fallback
# build; packaging/stage-gpu-deps.sh) with the tree.
#   usage: tests/gpu/prebuild.sh [ARCH]   (ARCH: CUDA architecture, 90 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:-90}
python=${TEWB_PYTHON:-${TEWB_VENV:-$HOME/.local/share/te-workbench/venv}/bin/python}
torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
build=build/gpu-prebuilt
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" -DTEWB_BUILD_GUI=OFF \
      -DTORCH_CUDA_ARCH_LIST="${arch:0:1}.${arch:1}" -DCMAKE_CUDA_ARCHITECTURES="$arch" > /dev/null
cmake --build "$build" --target te-bench te-bench-torch tst_gpu_training tewb-kernel-bench tewb-gemm-replay
rm -rf .gpu-bin
mkdir -p .gpu-bin/lib
cp "$build/app/te-bench" "$build/app/te-bench-torch" "$build/tests/tst_gpu_training" "$build/bench/tewb-kernel-bench" "$build/bench/tewb-gemm-replay" .gpu-bin/
# A real file, not a link: links travel as links and would dangle on the other machine.
cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libsqlite3.so.0)" .gpu-bin/lib/libsqlite3.so.0
git rev-parse HEAD > .gpu-bin/commit
git status --porcelain --untracked-files=no | grep -q . && echo "(with uncommitted changes)" >> .gpu-bin/commit
echo "staged in .gpu-bin ($(du -sh .gpu-bin | cut -f1)), built from $(head -c 12 .gpu-bin/commit)"
