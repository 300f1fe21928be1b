#!/bin/sh
# Installs what is needed, builds fasthprof, and profiles the bundled demo program with it.
# Usage: tools/demo.sh [agent options]   (default: heap=dump,format=b)
set -eu
cd "$(dirname "$0")/.."
OPTIONS="${1:-heap=dump,format=b}"
tools/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null
mkdir -p build/demo
JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}"
"$JAVA_HOME/bin/javac" --release 17 -g -d build/demo/classes tools/demo/Demo.java
case "$OPTIONS" in
  *format=b*) OUT=build/demo/demo.hprof ;;
  *) OUT=build/demo/demo.hprof.txt ;;
esac
echo "demo: java -agentpath:build/agent/libfasthprof.so=$OPTIONS,file=$OUT Demo"
"$JAVA_HOME/bin/java" "-agentpath:$PWD/build/agent/libfasthprof.so=$OPTIONS,file=$OUT" \
  -cp build/demo/classes Demo
echo "demo: fasthprof wrote $PWD/$OUT ($(wc -c < "$OUT") bytes)"
case "$OUT" in
  *.hprof) build/tools/hprof-verify --strict "$OUT" ;;
  *) head -n 40 "$OUT" ;;
esac
