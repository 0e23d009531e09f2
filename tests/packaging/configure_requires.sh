#!/usr/bin/env bash
# "On if found" must not hide a broken set-up: with a Qt module missing, configuring with the GUI required
# (the default) stops and names the Debian package; with TEWB_BUILD_GUI=AUTO it goes on without the GUI
# and says so. The missing module is simulated with CMAKE_DISABLE_FIND_PACKAGE_Qt6OpenGL (what a machine
# without libqt6opengl6-dev looks like to Qt6Charts); the kernels are off (the CUDA compiler is still set
# up, as LibTorch's config needs it).
#   usage: configure_requires.sh SOURCE_DIR SCRATCH_DIR [CMAKE_ARGS...]
set -uo pipefail
source=${1:?usage: configure_requires.sh SOURCE_DIR SCRATCH_DIR [CMAKE_ARGS...]}
scratch=${2:?}
shift 2
failures=0
rm -rf "$scratch" && mkdir -p "$scratch"

flat() { tr -s ' \n' '  ' < "$scratch/$1.log"; }  # CMake wraps error messages: match on one line

configure() {  # configure NAME ARGS...: configure into SCRATCH/NAME, output in SCRATCH/NAME.log
  local name=$1; shift
  cmake -S "$source" -B "$scratch/$name" -G Ninja -DTEWB_BUILD_KERNELS=OFF -DBUILD_TESTING=OFF \
        -DCMAKE_DISABLE_FIND_PACKAGE_Qt6OpenGL=TRUE "$@" > "$scratch/$name.log" 2>&1
}

if configure required "$@"; then
  echo "FAIL: configure with the GUI required and Qt6OpenGL missing succeeded"; failures=$((failures + 1))
elif flat required | grep -q "Qt 6.4+ OpenGL was not found: install the Debian package libqt6opengl6-dev" &&
     flat required | grep -q "Run packaging/setup-deps.sh"; then
  echo "ok: GUI required, Qt6OpenGL missing: configure stops naming libqt6opengl6-dev"
else
  echo "FAIL: configure stopped without naming libqt6opengl6-dev:"; tail -20 "$scratch/required.log"; failures=$((failures + 1))
fi

if configure auto -DTEWB_BUILD_GUI=AUTO "$@" &&
   flat auto | grep -q "TEWB_BUILD_GUI is AUTO and Qt 6.4+ OpenGL was not found.* left out"; then
  echo "ok: GUI AUTO, Qt6OpenGL missing: configure goes on and says the GUI is left out"
else
  echo "FAIL: GUI AUTO:"; tail -20 "$scratch/auto.log"; tail -40 "$scratch/auto/CMakeFiles/CMakeError.log" 2>/dev/null
  failures=$((failures + 1))
fi

if configure bad -DTEWB_BUILD_GUI=maybe "$@"; then
  echo "FAIL: TEWB_BUILD_GUI=maybe was accepted"; failures=$((failures + 1))
elif flat bad | grep -q "TEWB_BUILD_GUI=maybe: allowed values are ON, AUTO and OFF"; then
  echo "ok: TEWB_BUILD_GUI=maybe is refused, naming the allowed values"
else
  echo "FAIL: TEWB_BUILD_GUI=maybe:"; tail -20 "$scratch/bad.log"; failures=$((failures + 1))
fi

rm -rf "$scratch"
[ $failures -eq 0 ]
