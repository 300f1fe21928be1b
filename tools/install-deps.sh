#!/bin/sh
# Installs what fasthprof needs to build, run and test, from Debian 12's archive only.
# Idempotent; uses sudo when not run as root.
set -eu
PACKAGES="g++ meson ninja-build pkg-config python3 binutils procps
  libconcurrentqueue-dev libxxhash-dev libjemalloc-dev libjemalloc2 libdeflate-dev zlib1g-dev gzip
  libgtest-dev libbenchmark-dev openjdk-17-jdk-headless libh2-java visualvm
  chromium chromium-driver python3-selenium
  protobuf-compiler libprotobuf-dev golang-github-google-pprof-dev golang-go"

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
"$(dirname "$0")/fetch-openjdk-test-lib.sh" ||
  echo "install-deps: WARNING: the OpenJDK HPROF parser could not be fetched; its test will be skipped"
