#!/usr/bin/env bash
# The installed layout, as the .deb has it: `cmake --install` into a scratch prefix, then the launchers.
#   usage: installed_layout.sh BUILD_DIR SCRATCH_DIR VENV
# Checks: the programs sit in lib/te-workbench with no path to this machine's LibTorch; bin/te-bench and
# bin/te-workbench find LibTorch through TEWB_VENV and answer --version with version and git commit;
# without LibTorch (or with another torch) they exit 1 naming te-workbench-setup; te-workbench-setup,
# install-libtorch, the desktop entry and the icon are installed; te-bench-torch (which te-bench hands its
# LibTorch commands to) beside te-bench, without a path to this machine's LibTorch, and a run through the
# launcher reaches it.
set -uo pipefail
build=${1:?usage: installed_layout.sh BUILD_DIR SCRATCH_DIR VENV}
scratch=${2:?}
venv=${3:?}
prefix=$scratch/prefix
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

rm -rf "$scratch" && mkdir -p "$scratch/home"
cmake --install "$build" --prefix "$prefix" > "$scratch/install.log" 2>&1 || { cat "$scratch/install.log"; exit 1; }

programs=(te-bench)
[ -f "$build/app/te-workbench" ] && programs+=(te-workbench)
for program in "${programs[@]}"; do
  binary=$prefix/lib/te-workbench/$program
  [ -x "$binary" ] || { fail "$binary is not installed"; continue; }
  if readelf -d "$binary" | grep -E 'RPATH|RUNPATH' | grep -q 'site-packages\|/venv'; then
    fail "$program carries a path to this machine's LibTorch: $(readelf -d "$binary" | grep -E 'RPATH|RUNPATH')"
  else
    pass "$program has no path to this machine's LibTorch"
  fi

  out=$(env -u DISPLAY HOME="$scratch/home" TEWB_VENV="$venv" "$prefix/bin/$program" --version 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && [[ "$out" =~ ^$program\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [0-9a-f]{12}(-dirty)?,\ [A-Za-z]+\)$ ]]; then
    pass "$program --version through the launcher: $out"
  else
    fail "$program --version: exit $rc, '$out'"
  fi

  # No LibTorch anywhere the launcher looks (unless this machine has a system-wide one, which it would find).
  if [ -d /opt/te-workbench/venv ]; then
    echo "skipped: $program without LibTorch (/opt/te-workbench/venv exists on this machine)"
  else
    out=$(env -u DISPLAY -u WAYLAND_DISPLAY HOME="$scratch/home" TEWB_VENV="$scratch/no-venv" "$prefix/bin/$program" --version 2>&1)
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'Install it once with:  te-workbench-setup' <<<"$out" && grep -q "$scratch/no-venv" <<<"$out"; then
      pass "$program without LibTorch exits 1 and names te-workbench-setup"
    else
      fail "$program without LibTorch: exit $rc, '$out'"
    fi

    fake=$scratch/old-venv/lib/python3.11/site-packages/torch
    mkdir -p "$fake/lib" && touch "$fake/lib/libtorch.so" && echo "__version__ = '2.10.0+cu128'" > "$fake/version.py"
    out=$(env -u DISPLAY -u WAYLAND_DISPLAY HOME="$scratch/home" TEWB_VENV="$scratch/old-venv" "$prefix/bin/$program" --version 2>&1)
    rc=$?
    if [ $rc -eq 1 ] && grep -q "Found only: $scratch/old-venv (torch 2.10.0)" <<<"$out"; then
      pass "$program with another torch exits 1 and says which it found"
    else
      fail "$program with torch 2.10: exit $rc, '$out'"
    fi
  fi
done

torch_half=$prefix/lib/te-workbench/te-bench-torch
if [ ! -x "$torch_half" ]; then
  fail "$torch_half is not installed"
elif readelf -d "$torch_half" | grep -E 'RPATH|RUNPATH' | grep -q 'site-packages\|/venv'; then
  fail "te-bench-torch carries a path to this machine's LibTorch"
else
  pass "te-bench-torch installed beside te-bench, no path to this machine's LibTorch"
  out=$(env -u DISPLAY HOME="$scratch/home" TEWB_VENV="$venv" OMP_NUM_THREADS=1 "$prefix/bin/te-bench" run --preset quick-cpu \
        --warmup 0 --iters 1 --no-store 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q "finished" <<<"$out"; then
    pass "te-bench run through the launcher (handed to te-bench-torch)"
  else
    fail "te-bench run through the launcher: exit $rc, '$out'"
  fi
fi

for file in bin/te-workbench-setup lib/te-workbench/install-libtorch; do
  [ -x "$prefix/$file" ] && pass "$file installed" || fail "$file is not installed"
done
if [ -f "$build/app/te-workbench" ]; then
  for file in lib/te-workbench/te-workbench-notice share/applications/te-workbench.desktop \
              share/icons/hicolor/scalable/apps/te-workbench.svg; do
    [ -e "$prefix/$file" ] && pass "$file installed" || fail "$file is not installed"
  done
fi

rm -rf "$scratch"
[ $failures -eq 0 ] && echo "installed layout: PASS" || echo "installed layout: $failures FAILED"
[ $failures -eq 0 ]
