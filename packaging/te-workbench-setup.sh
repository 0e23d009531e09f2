#!/bin/sh
# te-workbench-setup: installs LibTorch (the torch 2.11.0 wheel) for the installed te-bench and te-workbench.
# As root (sudo) into /opt/te-workbench/venv, for every user; otherwise into ~/.local/share/te-workbench/venv,
# the same place packaging/setup-deps.sh uses. TEWB_VENV names another place.
set -eu
if [ -n "${TEWB_VENV:-}" ]; then
  venv=$TEWB_VENV
elif [ "$(id -u)" -eq 0 ]; then
  venv=/opt/te-workbench/venv
else
  venv=$HOME/.local/share/te-workbench/venv
fi
exec bash "$(dirname "$(readlink -f "$0")")/../lib/te-workbench/install-libtorch" "$venv"
