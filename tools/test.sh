#!/bin/sh
# Builds fasthprof and runs every test: unit, lint, fuzz (time-capped), integration with a real
# java on JDK 17 (and Temurin 25 when installed), then the unit tests and fuzz replays again in a
# second build under AddressSanitizer + UndefinedBehaviorSanitizer, with that build's agent in a JVM,
# then the Debian package built, installed, used and purged. Usage: tools/test.sh [build-dir]
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
tools/install-deps.sh --tests
phase_done "installing dependencies"
# Meson compiles through ccache when it is installed: the gate's build of HEAD's parent (below)
# then reuses what this build compiled from the files the two commits share. Its folder differs
# from this one, which ccache must not count (the compiler commands name files relatively).
export CCACHE_NOHASHDIR=1

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
# Only what its three suites run (the `fasthprof` command and its pprof code are not among them).
ninja -C "$SANITIZE_BUILD" $(tools/suite_targets.py "$SANITIZE_BUILD" unit fuzz asan-jvm)
phase_done "the sanitizer build"
meson test -C "$SANITIZE_BUILD" --setup sanitize --suite unit --suite fuzz --suite asan-jvm --print-errorlogs \
  --num-processes 2 --no-rebuild
phase_done "the sanitizer build's tests"
tools/demo.sh
phase_done "the demo"
# The Debian package: built without tests or benchmarks, installed into this machine, used as a
# user would, purged (tools/package-test.sh; it purges the package on failure too).
tools/package-test.sh
phase_done "the Debian package (build, lintian, install, tests, purge)"

# Last, so that its verdict hides no test result: the regression gate (bench/README.md "The
# regression gate"), HEAD against its parent on the quick set, the parent built from git archive,
# HEAD measured in $BUILD. A figure that got worse beyond its threshold and the run's noise fails CI
# here (exit 1), as does a gate that cannot run (exit 2).
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ] && ! git rev-parse --verify --quiet HEAD~1 >/dev/null; then
  echo "bench/gate: SKIPPED: a shallow clone without HEAD's parent (fetch with --depth 2 or more to gate)"
elif ! git rev-parse --verify --quiet HEAD~1 >/dev/null 2>&1; then
  echo "bench/gate: SKIPPED: HEAD has no parent commit to compare with (a first commit, or not a git checkout)"
elif [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "bench/gate: SKIPPED: the working tree has uncommitted changes, so $BUILD is not HEAD (commit, then run bench/gate HEAD~1)"
else
  bench/gate HEAD~1 --head-build "$BUILD"
  phase_done "the regression gate (the parent's build and the runs)"
fi
