#!/bin/sh
# Installed as bin/te-bench and bin/te-workbench (the .deb, `cmake --install`). The programs link LibTorch,
# which comes as the torch wheel in a Python virtual environment rather than as a Debian package: this
# finds that environment, puts its libraries on the loader path and runs the program from
# lib/te-workbench. Without one it says which command installs it, and exits 1.
set -eu
program=$(basename "$0")
private_dir=$(dirname "$(readlink -f "$0")")/../lib/te-workbench
torch_version=2.11.0

# The same places, in the same order, as te-workbench-setup and packaging/setup-deps.sh use.
looked=""
found_other=""
for venv in "${TEWB_VENV:-}" "${HOME:+$HOME/.local/share/te-workbench/venv}" /opt/te-workbench/venv; do
  [ -n "$venv" ] || continue
  looked="$looked $venv"
  for site in "$venv"/lib/python3*/site-packages; do
    [ -f "$site/torch/lib/libtorch.so" ] || continue
    have=$(sed -n "s/^__version__ = '\([^'+]*\).*/\1/p" "$site/torch/version.py" 2>/dev/null || true)
    if [ "$have" != "$torch_version" ]; then
      found_other="$found_other $venv (torch ${have:-unknown})"
      continue
    fi
    LD_LIBRARY_PATH=$site/torch/lib:$site/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    exec "$private_dir/$program" "$@"
  done
done

message="$program needs LibTorch (the torch $torch_version wheel, CUDA 13.0 build), and it is not installed.
Install it once with:  te-workbench-setup
(with sudo it goes to /opt/te-workbench/venv for every user, otherwise to ~/.local/share/te-workbench/venv;
TEWB_VENV names another place). Looked in:$looked"
if [ -n "$found_other" ]; then
  message="$message
Found only:$found_other"
fi
printf '%s\n' "$message" >&2
# Started from the desktop menu, nobody reads stderr: show the message in a dialog (only on a real display).
if [ "$program" = te-workbench ] && [ ! -t 2 ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] &&
   [ "${QT_QPA_PLATFORM:-}" != offscreen ] && [ -x "$private_dir/te-workbench-notice" ]; then
  "$private_dir/te-workbench-notice" "$message" >/dev/null 2>&1 || true
fi
exit 1
