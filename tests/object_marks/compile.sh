#!/bin/sh
# compile.sh JAVAC OUTDIR STAMP SOURCES...: the mark test's Java side, which uses
# jdk.internal.misc.Unsafe (javac refuses --add-exports with --release: compiled by the build's JDK 17).
set -e
javac="$1"; outdir="$2"; stamp="$3"; shift 3
mkdir -p "$outdir"
"$javac" -g -encoding UTF-8 --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -d "$outdir" "$@"
touch "$stamp"
