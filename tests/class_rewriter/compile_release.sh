#!/bin/sh
# compile_release.sh JAVAC RELEASE OUTDIR STAMP SOURCES...: compile for one release with full debug info.
set -e
javac="$1"; release="$2"; outdir="$3"; stamp="$4"; shift 4
mkdir -p "$outdir"
"$javac" --release "$release" -g -nowarn -encoding UTF-8 -d "$outdir" "$@"
touch "$stamp"
