#!/bin/sh
# Builds fasthprof and runs every test: unit, lint, fuzz (time-capped), integration with a real
# java on JDK 17 (and Temurin 25 when installed), then the unit tests and fuzz replays again in a
# second build under AddressSanitizer + UndefinedBehaviorSanitizer, with that build's agent in a JVM. Usage: tools/test.sh [build-dir]
set -eu
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
SANITIZE_BUILD="$BUILD-asan"
START=$(date +%s)
PHASE_START=$START
# Each phase's wall time on a line of its own (the CI budget is kept phase by phase).
phase_done() {
  now=$(date +%s)
  echo "test.sh: $1 took $((now - PHASE_START)) s ($((now - START)) s in all)"
  PHASE_START=$now
}
tools/install-deps.sh
phase_done "installing dependencies"

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
phase_done "the build"
meson test -C "$BUILD" --print-errorlogs --num-processes 2
phase_done "the tests"

setup "$SANITIZE_BUILD" -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled
meson compile -C "$SANITIZE_BUILD"
phase_done "the sanitizer build"
meson test -C "$SANITIZE_BUILD" --setup sanitize --suite unit --suite fuzz --suite asan-jvm --print-errorlogs \
  --num-processes 2
phase_done "the sanitizer build's tests"
tools/demo.sh
phase_done "the demo"
