#!/bin/sh
# Builds fasthprof and runs every test: unit, lint, fuzz (time-capped), integration with a real
# java on JDK 17 (and Temurin 25 when installed). Usage: tools/test.sh [build-dir]
set -eu
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
tools/install-deps.sh
if [ -f "$BUILD/build.ninja" ]; then
  meson setup --reconfigure "$BUILD" >/dev/null
else
  meson setup "$BUILD" >/dev/null
fi
meson compile -C "$BUILD"
meson test -C "$BUILD" --print-errorlogs --num-processes 2
