#!/usr/bin/env bash
# Installs jsroot (the ROOT project's JavaScript reader, the independent reader of ferry's
# tests) once into CACHE_DIR and copies the checker beside it.
#
# usage: jsroot_install.sh CACHE_DIR    prints the path of jsroot_check.mjs to run with node
# (jsroot_rntuple_check.mjs, the RNTuple checker, lies beside it)
# Exit 77 when node is missing or npm cannot reach the registry (tests then skip).
set -euo pipefail
cache=$1
here=$(cd "$(dirname "$0")" && pwd)
jsroot_version=7.11.2

command -v node >/dev/null || { echo "node not installed: skipping" >&2; exit 77; }
mkdir -p "$cache"
(
  flock -w 600 9 || exit 1
  if [[ ! -f "$cache/node_modules/jsroot/package.json" ]]; then
    command -v npm >/dev/null || { echo "npm not installed: skipping" >&2; exit 77; }
    if ! timeout 600 npm install "jsroot@$jsroot_version" --ignore-scripts --no-audit --no-fund \
        --prefix "$cache" >"$cache/npm.log" 2>&1; then
      echo "npm install jsroot failed (registry unreachable?): skipping" >&2
      tail -5 "$cache/npm.log" >&2
      exit 77
    fi
  fi
  # The checkers are resolved next to node_modules so that `import 'jsroot'` finds the package.
  cp "$here/../rootwrite/jsroot_check.mjs" "$cache/jsroot_check.mjs"
  cp "$here/../rootwrite/jsroot_rntuple_check.mjs" "$cache/jsroot_rntuple_check.mjs"
) 9>"$cache/.lock"
echo "$cache/jsroot_check.mjs"
