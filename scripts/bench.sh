#!/usr/bin/env bash
# make bench: runs the benchmarks in bench/ and writes JSON + PNG into out/bench/.
# BENCH=name1,name2 selects benchmarks; each bench/<name>.sh is one benchmark driver.
set -euo pipefail
BUILD=${1:-build/release}
OUT=${BENCH_OUT:-out/bench}
mkdir -p "$OUT"
export FERRY_BUILD_DIR=$BUILD FERRY_BENCH_OUT=$OUT
for drv in bench/*.sh; do
  name=$(basename "$drv" .sh)
  [ "$name" = plot_bars ] && continue
  if [ -n "${BENCH:-}" ] && [[ ",$BENCH," != *",$name,"* ]]; then continue; fi
  echo "== bench $name"
  bash "$drv"
done
