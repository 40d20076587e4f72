#!/usr/bin/env bash
# scripts/gpu-check's prefix logic on this CPU machine, as a GPU machine without Debian's
# packages runs it: the packages are fetched, unpacked into a private prefix, and gradwire is
# configured against the prefix's ns-3, ZeroMQ and GoogleTest rather than /usr's. Exit 77
# (skipped, reason printed) where the packages cannot be fetched.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! command -v apt-get >/dev/null 2>&1; then
  echo "skipped: no apt-get to fetch the Debian packages"
  exit 77
fi
if ! "$root/scripts/gpu-check" --download "$work/debs" >"$work/download.log" 2>&1; then
  echo "skipped: the Debian packages could not be fetched: $(tail -n 1 "$work/download.log")"
  exit 77
fi

"$root/scripts/gpu-check" --debs "$work/debs" --prefix "$work/prefix" --build "$work/build" \
  --report "$work/report.md" --configure-only >"$work/check.log" 2>&1 ||
  { cat "$work/check.log" >&2; fail "configure against the prefix failed"; }

cache=$work/build/CMakeCache.txt
grep -q "^ns3_DIR:PATH=$work/prefix/" "$cache" || fail "ns-3 was not found in the prefix"
grep -q "^ZeroMQ_LIBRARY:FILEPATH=$work/prefix/" "$cache" || fail "libzmq was not found in the prefix"
grep -q "^GTest_DIR:PATH=$work/prefix/" "$cache" || fail "GoogleTest was not found in the prefix"
grep -q "^pkgcfg_lib_ZSTD_zstd:FILEPATH=$work/prefix/" "$cache" || fail "libzstd was not found in the prefix"
# Debian's ns-3 CMake files name /usr libraries and include folders; the rewrite moves them all.
targets=$work/prefix/usr/lib/x86_64-linux-gnu/cmake/ns3/ns3Targets.cmake
if grep -q '"/usr/\|;/usr/' "$targets"; then
  fail "ns3Targets.cmake still names /usr paths: $(grep -o '[";]/usr/[^";]*' "$targets" | sort -u | head -3)"
fi
grep -q "^- Torch_DIR:" "$work/report.md" || fail "the report lacks its header"
echo "ok: gradwire configures against $(ls "$work/debs" | wc -l) packages unpacked into a prefix"
