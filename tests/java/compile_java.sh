#!/bin/sh
# compile_java.sh JAVAC OUTDIR STAMP SOURCES...: compile for release 17 with full debug info.
set -e
javac="$1"; outdir="$2"; stamp="$3"; shift 3
mkdir -p "$outdir"
"$javac" --release 17 -g -encoding UTF-8 -d "$outdir" "$@"
touch "$stamp"
