#!/usr/bin/env bash
# Installs what TE Workbench needs on a Debian/Ubuntu machine, and only what is missing.
# Idempotent: a second run changes nothing and says so.
#   TEWB_VENV   where the Python virtual environment with LibTorch lives
#               (default: ~/.local/share/te-workbench/venv, outside the source tree so every clone reuses it)
#   TEWB_NO_GUI=1  skip the Qt packages (GPU servers without a display)
set -euo pipefail

TORCH_VERSION=2.11.0
VENV=${TEWB_VENV:-$HOME/.local/share/te-workbench/venv}

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and no sudo: run as root or install sudo"
  SUDO=sudo
fi

# --- Debian packages -------------------------------------------------------------------------
packages=(build-essential cmake ninja-build ccache pkg-config git
          libsqlite3-dev nlohmann-json3-dev libcli11-dev)
if [ "${TEWB_NO_GUI:-0}" != 1 ]; then
  packages+=(qt6-base-dev qt6-charts-dev libqt6svg6 xvfb xauth)
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

# A python3 that can make virtual environments (Debian's needs python3-venv).
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  say "installing Debian packages: python3 python3-venv"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null
fi

# --- CUDA 13 toolkit ---------------------------------------------------------------------------
# The CUDA build of LibTorch needs the toolkit at configure time (headers, nvcc, cuBLASLt).
nvcc_path=""
for candidate in "${CUDACXX:-}" "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc /usr/local/cuda-13*/bin/nvcc; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then nvcc_path=$candidate; break; fi
done
if [ -z "$nvcc_path" ]; then
  die "no CUDA toolkit found (looked for nvcc in \$CUDACXX, PATH, /usr/local/cuda/bin, /usr/local/cuda-13*/bin).
       The CUDA 13.0 build of LibTorch needs it: install NVIDIA's 'cuda-toolkit-13-0' Debian package
       (nvcc, cudart, cuBLASLt headers), or point CUDACXX at an existing nvcc, then run this again."
fi
nvcc_release=$("$nvcc_path" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9]*\).*/\1/p')
case "$nvcc_release" in
  13.*) say "CUDA toolkit: $nvcc_path (release $nvcc_release)" ;;
  *) die "CUDA toolkit at $nvcc_path is release ${nvcc_release:-unknown}; torch==$TORCH_VERSION is built for CUDA 13.0: install cuda-toolkit-13-0 or set CUDACXX" ;;
esac

# --- LibTorch (the torch wheel) in a virtual environment -----------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  say "creating virtual environment $VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
fi
probe='import torch, numpy; print(torch.__version__, torch.utils.cmake_prefix_path)'
read -r have prefix < <("$VENV/bin/python" -c "$probe" 2>/dev/null) || true
if [ "${have%%+*}" != "$TORCH_VERSION" ]; then
  say "installing torch==$TORCH_VERSION and numpy into $VENV (about 3 GB with its CUDA libraries)"
  "$VENV/bin/pip" install -q "torch==$TORCH_VERSION" numpy
  read -r have prefix < <("$VENV/bin/python" -c "$probe")
fi
say "LibTorch: torch $have in $VENV (CMake config: $prefix)"
say "done"
