#!/usr/bin/env bash
# Installs what TE Workbench needs to build and test on a Debian 12 machine, and only what is missing;
# says what it did. Idempotent: a second run changes nothing and says so. Checked from a bare Debian 12
# root by tests/fresh-machine/check.sh, with and without a CUDA toolkit.
#   TEWB_VENV      the Python virtual environment that holds LibTorch (default
#                  ~/.local/share/te-workbench/venv, outside the source tree so every clone reuses it)
#   TEWB_NO_GUI=1  skip the Qt packages (GPU servers without a display; configure with -DTEWB_BUILD_GUI=OFF)
#   TEWB_FUZZ_TOOLS=1  also clang and its libFuzzer runtime, for the `fuzz` preset (CI runs it)
#   CUDACXX        the nvcc to use. Otherwise the first CUDA 13 nvcc on PATH, in /usr/local/cuda/bin or
#                  /usr/local/cuda-13*/bin; with none, the CUDA 13.0 compiler and headers are installed
#                  from PyPI (NVIDIA's wheels, the versions LibTorch was built with) into $TEWB_VENV/cuda,
#                  where CMake looks last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
started=$(date +%s)

VENV=${TEWB_VENV:-$HOME/.local/share/te-workbench/venv}

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and no sudo: run as root or install sudo"
  SUDO=sudo
fi

# --- Debian packages -------------------------------------------------------------------------
# Everything the default build needs, named one by one: installs use --no-install-recommends, so a
# package that is only recommended (libqt6opengl6-dev, which Qt6Charts' CMake package needs) must be here.
# libssl-dev: libcrypto's SHA-256 (a token file's identity in the run record).
# libgloo-dev: the headers LibTorch's Gloo backend (data-parallel runs on CPUs) was built with and does not ship.
packages=(build-essential cmake ninja-build ccache pkg-config git ca-certificates python3 python3-venv
          libsqlite3-dev nlohmann-json3-dev libcli11-dev libgloo-dev libssl-dev)
if [ "${TEWB_NO_GUI:-0}" != 1 ]; then
  # poppler-utils: the report tests read the PDF back (pdfinfo, pdftotext)
  # icewm, x11-utils, xdotool: the window suites run in Xvfb under a window manager that reserves a taskbar
  # (tests/ui/xvfb-wm-run.sh waits for it with xprop); tst_window_screen turns the mouse wheel with xdotool
  packages+=(qt6-base-dev qt6-charts-dev libqt6opengl6-dev libqt6svg6 fonts-dejavu-core xvfb xauth poppler-utils
             icewm x11-utils xdotool)
fi
if [ "${TEWB_FUZZ_TOOLS:-0}" = 1 ]; then
  packages+=(clang libclang-rt-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  say "Debian packages: all ${#packages[@]} present"
fi

# --- LibTorch (the torch wheel) in a virtual environment -----------------------------------------
# numpy for the Python reference benchmarks, tensorboard for the test that reads exported event files back.
bash "$here/install-libtorch.sh" "$VENV" numpy tensorboard

# --- CUDA 13 compiler ------------------------------------------------------------------------------
nvcc_release() { "$1" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9]*\).*/\1/p'; }

candidates=("${CUDACXX:-}" "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc /usr/local/cuda-13*/bin/nvcc
            "$VENV/cuda/bin/nvcc")
nvcc_path=""
seen=()
for candidate in "${candidates[@]}"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  release=$(nvcc_release "$candidate")
  case "$release" in
    13.*) nvcc_path=$candidate; break ;;
    *) seen+=("$candidate (release ${release:-unknown})") ;;
  esac
done
if [ -n "$nvcc_path" ]; then
  say "CUDA compiler: $nvcc_path (release $(nvcc_release "$nvcc_path"))"
else
  if [ ${#seen[@]} -gt 0 ]; then
    say "no CUDA 13 compiler: found only ${seen[*]}"
  else
    say "no CUDA toolkit found (looked at \$CUDACXX, PATH, /usr/local/cuda/bin, /usr/local/cuda-13*/bin)"
  fi
  # The same CUDA release LibTorch's wheel depends on, through NVIDIA's cuda-toolkit meta-package.
  toolkit_version=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("cuda-toolkit"))' 2>/dev/null) ||
    die "the torch wheel in $VENV does not name its CUDA release (no cuda-toolkit package); install the CUDA 13.0 toolkit (nvcc, cuBLASLt) and set CUDACXX"
  say "installing the CUDA $toolkit_version compiler and headers from PyPI into $VENV (nvcc, crt, nvvm, cccl, cudart, cublas)"
  "$VENV/bin/pip" install -q "cuda-toolkit[nvcc,crt,nvvm,cccl,cudart,cublas]==$toolkit_version"
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  root=$site/nvidia/cu13
  [ -x "$root/bin/nvcc" ] || die "the nvcc wheel did not install $root/bin/nvcc"
  # The wheels unpack into one folder; nvcc and CMake expect a toolkit's layout on top of it:
  # targets/<arch>/{include,lib}, lib64, and unversioned library names for the linker.
  mkdir -p "$root/targets/x86_64-linux"
  ln -sfn ../../include "$root/targets/x86_64-linux/include"
  ln -sfn ../../lib "$root/targets/x86_64-linux/lib"
  ln -sfn lib "$root/lib64"
  for lib in "$root"/lib/lib*.so.*; do
    base=${lib%%.so.*}.so
    [ -e "$base" ] || ln -s "$(basename "$lib")" "$base"
  done
  ln -sfn "$root" "$VENV/cuda"
  release=$(nvcc_release "$VENV/cuda/bin/nvcc")
  case "$release" in
    13.*) say "CUDA compiler: $VENV/cuda/bin/nvcc (release $release, from PyPI)" ;;
    *) die "$VENV/cuda/bin/nvcc does not run (release '${release}')" ;;
  esac
fi

say "done in $(( $(date +%s) - started )) s; the virtual environment takes $(du -sh "$VENV" | cut -f1)"
