#!/bin/sh
# The Debian package, end to end: builds it from this tree with `dpkg-buildpackage -b -us -uc` in a
# scratch copy (the tree and its parent folder stay clean), runs lintian on it, checks its file list
# and dependencies (tests/package/package_contents.py), installs it into this machine with dpkg -i,
# runs the installed agent and commands from a folder outside the tree without LD_LIBRARY_PATH
# (tests/package/installed_package.py), purges it and checks that nothing is left. The package is
# purged on every way out, a failure or an interrupt included. Prints each step's wall time.
# Needs root for dpkg (sudo otherwise) and the build dependencies (tools/install-deps.sh --tests).
# Usage: tools/package-test.sh
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
STEP_START=$(date +%s)
step_done() {
  now=$(date +%s)
  echo "package-test: $1 took $((now - STEP_START)) s"
  STEP_START=$now
}

if dpkg-query -W -f='${Status}' fasthprof 2>/dev/null | grep -q "ok installed"; then
  echo "package-test: SKIP: a fasthprof package is installed on this machine already; it is left as it is" \
    "(dpkg -P fasthprof, then run again)"
  exit 0
fi

WORK="$(mktemp -d /tmp/fasthprof-package.XXXXXX)"
INSTALLED=no
finish() {
  status=$?
  trap - EXIT INT TERM
  if [ "$INSTALLED" = yes ]; then
    echo "package-test: purging the package after a failure"
    $SUDO dpkg -P fasthprof >/dev/null || status=1
  fi
  rm -rf "$WORK"
  [ "$status" -eq 0 ] || echo "package-test: FAILED"
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

# The tree as git sees it (tracked and new files, not ignored ones such as build folders).
mkdir -p "$WORK/src" "$WORK/run"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$WORK/src"
else
  tar -C "$ROOT" --exclude='./build*' --exclude=./.deps --exclude='./obj-*' -cf - . | tar -xf - -C "$WORK/src"
fi

# As a Debian build machine builds it: without ccache, which Meson would use when installed.
if ! (cd "$WORK/src" && CCACHE_DISABLE=1 dpkg-buildpackage -b -us -uc) > "$WORK/build.log" 2>&1; then
  tail -n 60 "$WORK/build.log"
  echo "package-test: dpkg-buildpackage failed (the last lines above)"
  exit 1
fi
DEB="$(ls "$WORK"/fasthprof_*.deb)"
step_done "building $(basename "$DEB")"

# Every remaining tag is explained in debian/fasthprof.lintian-overrides.
# spelling-error-in-binary is not checked: the compiler stores the programs' string literals merged
# and split at its convenience, so lintian reads pieces of messages ("... names anothe" +
# "another folder") as misspelt words, and which pieces depends on the text of every message (an
# override per piece went stale with the next help text).
lintian --fail-on error,warning --display-info --suppress-tags spelling-error-in-binary "$DEB"
step_done "lintian"
python3 "$ROOT/tests/package/package_contents.py" "$DEB" "$WORK"

INSTALLED=yes
$SUDO dpkg -i "$DEB" >/dev/null
step_done "checking the contents and installing"
(cd "$WORK/run" && env -u LD_LIBRARY_PATH -u FASTHPROF_AGENT -u JAVA_TOOL_OPTIONS \
  JAVA17_HOME="${JAVA17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}" \
  JAVA25_HOME="${JAVA25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}" \
  FASTHPROF_LIBDIR="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)" \
  python3 "$ROOT/tests/package/installed_package.py")
step_done "the installed package's tests"

$SUDO dpkg -P fasthprof >/dev/null
INSTALLED=no
python3 "$ROOT/tests/package/package_contents.py" --purged "$DEB"
step_done "purging"
echo "package-test: all checks passed"
