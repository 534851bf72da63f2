#!/usr/bin/env bash
# Runs each libFuzzer target for FUZZ_SECONDS (default 60) seeded from its corpus and the real
# ROOT files (RNTuple files for rntuple_fuzz); new interesting inputs go to build/fuzz/corpus-<target>, crashes to
# build/fuzz/crashes. Copy minimised reproducers into fuzz/corpus/<target>/ to keep them.
set -euo pipefail
BUILD=${1:-build/fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
DATA=${FERRY_ROOT_DATA_DIR:-data/root}
RNTUPLE_DATA=${FERRY_RNTUPLE_DATA_DIR:-data/rntuple}
mkdir -p "$BUILD/crashes"
for bin in "$BUILD"/fuzz/*_fuzz; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  seed="fuzz/corpus/${name%_fuzz}"
  work="$BUILD/corpus-$name"
  mkdir -p "$work"
  extra=()
  if [ "$name" = rootio_fuzz ] && [ -d "$DATA" ]; then extra+=("$DATA"); fi
  if [ "$name" = rntuple_fuzz ] && [ -d "$RNTUPLE_DATA" ]; then extra+=("$RNTUPLE_DATA"); fi
  echo "== $name for ${SECONDS_EACH}s"
  "$bin" "$work" "$seed" "${extra[@]}" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -artifact_prefix="$BUILD/crashes/$name-" -print_final_stats=1 2>&1 | tail -15
done
