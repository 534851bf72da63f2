#!/usr/bin/env bash
# make demo: the analysis ferry exists for, measured (about 5 minutes here).
#
# 1. generates a NanoAOD-like dataset with `ferry gen nanoaod` from the real 2015 CMS ttbar
#    NanoAOD file: an LZMA-9 set and a zlib-1 set of several files each;
# 2. starts a real xrootd origin behind the test bed's WAN emulation (network namespace, ~40 ms
#    RTT, 1 Gbit/s) or, where namespaces are not permitted, on 127.0.0.1 — and says which;
# 3. runs the AGC ttbar analysis (`ferry analyze agc`) on each set: on the local files (the
#    limit), direct from the origin, through the ferry cache cold (it fills) and warm;
# 4. prints one table (wall time, bytes from origin, origin requests, bytes read as % of the
#    dataset, fill overhead, warm speedup), writes JSON and PNG plots, and checks that the
#    histogram digests are identical across all passes;
# 5. stops everything it started and leaves nothing behind but its output folder.
# The machinery is scripts/agc_passes.sh (bench/agc_passes.sh runs it at a larger scale).
#
# Usage: scripts/demo.sh [FERRY_BINARY]   (the Makefile passes build/release/bin/ferry)
# Environment: FERRY_DEMO_OUT (default out/demo), FERRY_DEMO_LZMA_EVENTS (default 24000 in 2
# files, ~22 MB: LZMA-9 costs ~25 ms of encoder set-up per basket on top of ~0.5 MB/s here, so
# this set stays small), FERRY_DEMO_ZLIB_EVENTS (default 1000000 in 5 files, ~1.3 GB; generated
# alongside), FERRY_DEMO_REPEAT (runs per pass, default 3), FERRY_DEMO_THREADS,
# FERRY_DEMO_NO_WAN=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FERRY="${1:-$ROOT/build/release/bin/ferry}"
OUT="${FERRY_DEMO_OUT:-$ROOT/out/demo}"
args=(--ferry "$FERRY" --out "$OUT" --title "make demo"
  --codecs "lzma:9:${FERRY_DEMO_LZMA_EVENTS:-24000}:2 zlib:1:${FERRY_DEMO_ZLIB_EVENTS:-1000000}:5"
  --repeat "${FERRY_DEMO_REPEAT:-3}"
  --threads "${FERRY_DEMO_THREADS:-$(nproc)}")
[ "${FERRY_DEMO_NO_WAN:-0}" = 1 ] && args+=(--no-wan)
rm -rf "$OUT"
exec bash "$ROOT/scripts/agc_passes.sh" "${args[@]}"
