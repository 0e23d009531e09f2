#!/usr/bin/env bash
# Copies the build dependencies that a bare GPU server lacks (no package installs there) into one
# prefix folder, .deps/ by default (git-ignored), to travel with the source tree: the header-only
# nlohmann-json and CLI11 with their CMake configs, and SQLite's header and library. Run it here after
# packaging/setup-deps.sh; tests/gpu/check-on-gpu.sh adds the folder to CMAKE_PREFIX_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps}
rm -rf "$dest"
mkdir -p "$dest/include" "$dest/lib" "$dest/share/cmake"
cp -r /usr/include/nlohmann /usr/include/CLI "$dest/include/"
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h "$dest/include/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$dest/share/cmake/"
# Real files, not links: links travel as links and would dangle on the other machine.
lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libsqlite3.so)
cp "$lib" "$dest/lib/libsqlite3.so"
cp "$lib" "$dest/lib/libsqlite3.so.0"
echo "staged build dependencies in $dest ($(du -sh "$dest" | cut -f1))"
