#!/bin/sh
# Builds fasthprof and runs every test: unit, lint, fuzz (time-capped), integration with a real
# java on JDK 17 (and Temurin 25 when installed), then the unit tests and fuzz replays again in a
# second build under AddressSanitizer + UndefinedBehaviorSanitizer, with that build's agent in a JVM. Usage: tools/test.sh [build-dir]
set -eu
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
SANITIZE_BUILD="$BUILD-asan"
tools/install-deps.sh

setup() {
  dir="$1"
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

setup "$BUILD"
meson compile -C "$BUILD"
meson test -C "$BUILD" --print-errorlogs --num-processes 2

setup "$SANITIZE_BUILD" -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled
meson compile -C "$SANITIZE_BUILD"
meson test -C "$SANITIZE_BUILD" --setup sanitize --suite unit --suite fuzz --suite asan-jvm --print-errorlogs \
  --num-processes 2
tools/demo.sh
