#!/bin/sh
# Puts the OpenJDK test library's HPROF parser (test/lib/jdk/test/lib/hprof of Debian's openjdk-17
# source package) into .deps/openjdk-test-lib, for tests/integration/openjdk_parser.py.
#
# apt runs with a private configuration under .deps/apt: the machine's own Debian entries as
# deb-src, lists and caches of its own, so neither root nor a change to /etc/apt is needed. Costs
# one download of about 75 MB (the Sources indexes, about 10 MB, and the 64 MB orig tarball),
# which is deleted once the parser is extracted; a later run finds the VERSION file and does
# nothing. Exits non-zero, saying why, when the source cannot be had.
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEPS="$ROOT/.deps"
TARGET="$DEPS/openjdk-test-lib"
PARSER=jdk/test/lib/hprof
if [ -f "$TARGET/VERSION" ] && [ -f "$TARGET/$PARSER/HprofParser.java" ]; then
  echo "fetch-openjdk-test-lib: have openjdk-17 $(cat "$TARGET/VERSION")"
  exit 0
fi

APT="$DEPS/apt"
rm -rf "$APT"
mkdir -p "$APT/sources.list.d" "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/download"
# The machine's enabled Debian entries, as source entries (deb822 files and one-line lists).
for file in /etc/apt/sources.list.d/*.sources; do
  [ -f "$file" ] && sed 's/^Types:.*/Types: deb-src/' "$file" > "$APT/sources.list.d/$(basename "$file")"
done
for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$file" ] && sed -n 's/^deb[[:space:]]/deb-src /p' "$file"
done > "$APT/sources.list"
set -- -o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d" \
  -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache" -o "Dir::State::status=/dev/null" \
  -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)"

started=$(date +%s)
# A failed index of some other entry is not fatal: what counts is that openjdk-17 is found.
apt-get "$@" update -qq || echo "fetch-openjdk-test-lib: some source indexes failed (see above)"
versions=$(apt-cache "$@" showsrc openjdk-17 2>/dev/null | sed -n 's/^Version: //p' | sort -Vr | uniq)
if [ -z "$versions" ]; then
  echo "fetch-openjdk-test-lib: no openjdk-17 source package in this machine's Debian entries" >&2
  exit 1
fi
# Newest first; a version whose files the archive no longer serves is skipped. apt's own messages
# (its `E: Failed to fetch` lines) are shown only when no version could be had: an error line for a
# version whose fallback worked would tell of a failure that did not happen.
fetched=""
for version in $versions; do
  rm -f "$APT/download/"*
  if (cd "$APT/download" && apt-get "$@" source -qq --download-only "openjdk-17=$version") \
      >>"$APT/errors.txt" 2>&1; then
    fetched="$version"
    break
  fi
  echo "fetch-openjdk-test-lib: openjdk-17 $version is not served; trying an older version"
done
if [ -z "$fetched" ]; then
  cat "$APT/errors.txt" >&2
  echo "fetch-openjdk-test-lib: no version of openjdk-17's source could be downloaded ($versions)" >&2
  exit 1
fi
tarball=$(ls "$APT/download/"openjdk-17_*.orig.tar.* | head -n 1)
size=$(du -m "$tarball" | cut -f1)
rm -rf "$TARGET.new"
mkdir -p "$TARGET.new"
# Only the parser: it imports nothing else of test/lib.
tar -xf "$tarball" -C "$TARGET.new" --strip-components=3 --wildcards "*/test/lib/$PARSER/*"
echo "$fetched" > "$TARGET.new/VERSION"
rm -rf "$TARGET" "$APT"
mv "$TARGET.new" "$TARGET"
echo "fetch-openjdk-test-lib: openjdk-17 $fetched: $PARSER extracted from a ${size} MB tarball" \
  "in $(( $(date +%s) - started )) s"
