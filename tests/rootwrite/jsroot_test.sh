#!/usr/bin/env bash
# Independent-reader check of files ferry writes: jsroot (the ROOT project's JavaScript reader)
# reads every branch of the writer's fixture files (every codec, big form, clusters, two trees)
# and of a small `ferry gen nanoaod` dataset, plus relocated copies of those and of the real files
# (baskets re-encoded and moved as the replica tier serves them), and must see the values
# `ferry root dump` prints. It also reads the RNTuples ferry writes (the sample under every
# codec, a `gen nanoaod --format rntuple` dataset), and relocated copies of them (every page
# re-encoded and moved as the replica tier serves them), to the values ferry's reader reads.
#
# usage: jsroot_test.sh FERRY FIXTURES_TOOL CACHE_DIR [ROOT_DATA_DIR]
# jsroot is installed once into CACHE_DIR (npm install --ignore-scripts) and reused; the test
# exits 77 (skipped) when node is missing or npm cannot reach the registry.
set -euo pipefail
ferry=$1
fixtures=$2
cache=$3
data=${4:-}
here=$(cd "$(dirname "$0")" && pwd)

checker=$(bash "$here/../testing/jsroot_install.sh" "$cache") || exit $?
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fixtures" "$tmp" ${data:+"$data"} >/dev/null
files=()
relocated_real=()
for f in "$tmp"/*.root; do
  if [[ "$f" == */relocated-* && -n "$data" && -f "$data/${f##*/relocated-}" ]]; then
    relocated_real+=("$f")
  else
    files+=("$f")
  fi
done
template="$data/nanoAOD_2015_CMS_Open_Data_ttbar.root"
if [[ -n "$data" && -f "$template" ]] && "$ferry" gen --help >/dev/null 2>&1; then
  "$ferry" gen nanoaod --template "$template" --events 600 --files 2 --codec zstd:3 \
    --out "$tmp/gen" --seed 5 >/dev/null
  files+=("$tmp"/gen/*.root)
fi
# jsroot's optional zstd module prints its whole source on some errors: keep lines short.
timeout 900 node "$checker" "$ferry" "${files[@]}" 2>&1 | cut -c1-400
rc=${PIPESTATUS[0]}
rntuples=("$tmp"/rntuple/*.root)
if [[ -n "$data" && -f "$template" ]] && "$ferry" gen nanoaod --help 2>&1 | grep -q -- --format; then
  "$ferry" gen nanoaod --template "$template" --events 600 --files 1 --codec zstd:3 \
    --format rntuple --out "$tmp/gen-rntuple" --seed 5 >/dev/null
  rntuples+=("$tmp"/gen-rntuple/*.root)
  for f in "$tmp"/gen-rntuple/*.root; do
    "$fixtures" --relocate-rntuples "$f" "$tmp/gen-rntuple" >/dev/null
  done
  rntuples+=("$tmp"/gen-rntuple/relocated-*.root)
fi
timeout 900 node "$(dirname "$checker")/jsroot_rntuple_check.mjs" "$fixtures" "${rntuples[@]}" \
  2>&1 | cut -c1-400
[[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
# Real files: jsroot cannot read some of them (leaf lists, object branches, jagged baskets
# without offsets), so a relocated copy must read exactly as its original does, mismatches and
# all, with every value the same.
for f in "${relocated_real[@]}"; do
  orig="$data/${f##*/relocated-}"
  a=$(timeout 300 node "$checker" "$ferry" "$orig" 2>&1 | cut -c1-400 \
      | sed "s|$orig||g" || true)
  b=$(timeout 300 node "$checker" "$ferry" "$f" 2>&1 | cut -c1-400 | sed "s|$f||g" \
      || true)
  if [[ "$a" != "$b" ]]; then
    echo "MISMATCH: jsroot reads $f differently from $orig"
    diff <(echo "$a") <(echo "$b") | head -20
    rc=1
  else
    echo "$f: read as its original ($(echo "$b" | tail -1))"
  fi
done
exit "$rc"
