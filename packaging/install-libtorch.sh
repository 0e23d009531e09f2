#!/usr/bin/env bash
# Puts LibTorch (the torch wheel, CUDA 13.0 build) into a Python virtual environment, and only what is
# missing. Used by packaging/setup-deps.sh (with numpy for the Python reference benchmarks and tensorboard for the
# test that reads exported event files back) and shipped in the .deb as /usr/lib/te-workbench/install-libtorch,
# behind the te-workbench-setup command.
#   usage: install-libtorch.sh VENV [EXTRA_PACKAGE...]
# Needs python3 with the venv module (Debian: python3-venv).
set -euo pipefail

TORCH_VERSION=2.11.0

venv=${1:?usage: install-libtorch.sh VENV [EXTRA_PACKAGE...]}
shift
extras=("$@")

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  die "python3 with the venv module is needed to hold LibTorch (Debian: apt-get install python3 python3-venv)"
fi
if [ ! -x "$venv/bin/python" ]; then
  say "creating virtual environment $venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
fi

# One python call tells the torch version and which extras are missing.
probe="
import importlib.util, sys
try:
    import torch
    version = torch.__version__
except Exception:
    version = 'none'
missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
print(version, *missing)
"
read -r have missing_extras < <("$venv/bin/python" -c "$probe" "${extras[@]}") || have=none
if [ "${have%%+*}" != "$TORCH_VERSION" ]; then
  say "installing torch==$TORCH_VERSION${extras[*]:+ and ${extras[*]}} into $venv (about 4.7 GB with its CUDA libraries)"
  "$venv/bin/pip" install -q "torch==$TORCH_VERSION" "${extras[@]}"
elif [ -n "${missing_extras:-}" ]; then
  say "installing ${missing_extras} into $venv"
  # shellcheck disable=SC2086  # a list of package names
  "$venv/bin/pip" install -q $missing_extras
fi
have=$("$venv/bin/python" -c 'import torch; print(torch.__version__)') ||
  die "torch does not import in $venv; remove that folder and run this again"
say "LibTorch: torch $have in $venv"
