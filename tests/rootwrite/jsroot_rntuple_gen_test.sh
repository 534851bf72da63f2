#!/usr/bin/env bash
# jsroot (an independent reader) reads `ferry gen nanoaod --format rntuple` datasets of EVENTS
# events, one per codec, to the values ferry's reader reads (jsroot_rntuple_check.mjs: every
# top-level scalar field, entry by entry). `make test-long` runs it at 100,000 events for each
# codec; rootwrite_jsroot covers a small dataset in `make test`.
#
# usage: jsroot_rntuple_gen_test.sh FERRY FIXTURES_TOOL CACHE_DIR ROOT_DATA_DIR EVENTS CODEC...
# Exits 77 (skipped) when node is missing, npm cannot reach the registry, or the template is
# missing.
set -euo pipefail
ferry=$1
fixtures=$2
cache=$3
data=$4
events=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
template="$data/nanoAOD_2015_CMS_Open_Data_ttbar.root"
[[ -f "$template" ]] || { echo "no template $template"; exit 77; }
checker=$(bash "$here/../testing/jsroot_install.sh" "$cache") || exit $?
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
for codec in "$@"; do
  out="$tmp/${codec/:/}"
  "$ferry" gen nanoaod --template "$template" --events "$events" --files 1 --codec "$codec" \
    --format rntuple --out "$out" --seed 7 >/dev/null
  echo "== $codec: $events events, $(du -h "$out"/*.root | cut -f1)"
  # jsroot's optional zstd module prints its whole source on some errors: keep lines short.
  timeout 3000 node "$(dirname "$checker")/jsroot_rntuple_check.mjs" "$fixtures" "$out"/*.root \
    2>&1 | cut -c1-400 | tail -5
  [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
  rm -rf "$out"
done
exit "$rc"
