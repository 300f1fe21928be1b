#!/bin/sh
# Installs what fasthprof needs, from Debian 12's archive only. Idempotent; uses sudo when not run
# as root.
#   tools/install-deps.sh          what building and running it needs (tools/demo.sh)
#   tools/install-deps.sh --tests  also what tools/test.sh needs: GoogleTest and Google Benchmark,
#                                  the readers and browser the tests check with, the pprof verb's
#                                  protobuf, the package tools, ccache (the gate's second build),
#                                  and the OpenJDK test library's parser
set -eu
PACKAGES="g++ meson ninja-build pkg-config python3
  libconcurrentqueue-dev libxxhash-dev libjemalloc-dev libjemalloc2 libdeflate-dev zlib1g-dev
  openjdk-17-jdk-headless"
TESTS=no
if [ "${1:-}" = "--tests" ]; then
  TESTS=yes
  PACKAGES="$PACKAGES binutils procps gzip
  libgtest-dev libbenchmark-dev libh2-java visualvm
  chromium chromium-driver python3-selenium
  protobuf-compiler libprotobuf-dev golang-github-google-pprof-dev golang-go
  dpkg-dev debhelper lintian man-db bash-completion ccache"
fi

missing=""
for package in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $package"
done
if [ -z "$missing" ]; then
  echo "install-deps: every package is installed"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
  echo "install-deps: done"
fi

# The OpenJDK test library's HPROF parser, a second independent reader of the binary files
# (tests/integration/openjdk_parser.py). It ships only in Debian's openjdk-17 source package.
if [ "$TESTS" = yes ]; then
  "$(dirname "$0")/fetch-openjdk-test-lib.sh" ||
    echo "install-deps: WARNING: the OpenJDK HPROF parser could not be fetched; its test will be skipped"
fi
