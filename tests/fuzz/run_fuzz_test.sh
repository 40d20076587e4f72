#!/bin/sh
# Runs one fuzz target as a ctest test: a fresh copy of its seed corpus in the build folder
# (the repository's corpus is never written), a bounded time, and libFuzzer's exit status, so
# a crash, a sanitizer report or an uncaught exception fails the test. A crashing input is
# kept in <work>/artifacts/.
#   run_fuzz_test.sh FUZZER SEED_CORPUS WORK_DIR SECONDS [libFuzzer flags...]
set -eu
fuzzer=$1 seeds=$2 work=$3 seconds=$4
shift 4
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp -R "$seeds"/. "$work/corpus/"
# -timeout: a slower input is a hang (the slowest real ones, 10000-run sweeps, take a few
# seconds). -rss_limit_mb: LibTorch alone is ~300 MB; an input that makes a parser allocate
# gigabytes is a finding.
exec "$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus"
