#!/usr/bin/env bash
# bench/store/run.sh: the event store against ferry's TTree reader (basket traversal as ROOT's
# GetEntry loop does it, and a TTreeCache-like cluster read) and jsroot, on one generated
# NanoAOD-like file of EVENTS events (issue 6). Writes $OUT/store.json (everything measured)
# and $OUT/store_*.png.
#
# Environment: FERRY_BUILD_DIR (a release build with bin/ferry and bin/store_bench),
# FERRY_BENCH_OUT, EVENTS (2000000), PICKS (2000), BASELINE_PICKS (200, the slow baselines run
# on the first ones of the same scattered list), STRACE_PICKS (50), JSROOT_PICKS (5),
# CODECS (zstd:3,lz4,zlib:1), STORE_BENCH_INPUT (an existing file to use instead), REUSE=1
# (keep the stores and conversion figures of an earlier run in the same FERRY_BENCH_OUT).
set -euo pipefail
BUILD=${FERRY_BUILD_DIR:-build/release}
OUT=${FERRY_BENCH_OUT:-out/bench/store}
EVENTS=${EVENTS:-2000000}
PICKS=${PICKS:-2000}
BASE=${BASELINE_PICKS:-200}
SPICKS=${STRACE_PICKS:-50}
JSPICKS=${JSROOT_PICKS:-5}
CODECS=${CODECS:-zstd:3,lz4,zlib:1}
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH="$BUILD/bin/store_bench"
mkdir -p "$OUT"

INPUT=${STORE_BENCH_INPUT:-$OUT/gen/nanoaod_0000.root}
if [ ! -f "$INPUT" ]; then
  if "$BUILD/bin/ferry" gen --help >/dev/null 2>&1; then
    FERRY_PROGRESS=0 "$BUILD/bin/ferry" gen nanoaod --events "$EVENTS" --out "$OUT/gen" --json > "$OUT/gen.json"
  else
    "$BENCH" make-input --template "${FERRY_ROOT_DATA_DIR:-data/root}/nano_dy.root" \
      --events "$EVENTS" --out "$INPUT"
  fi
fi

"$BENCH" run --root "$INPUT" --work "$OUT/work" --json "$OUT/store-run.json" --picks "$PICKS" \
  --baseline-picks "$BASE" --codecs "$CODECS" --reuse "${REUSE:-0}"
STORE="$OUT/work/store-${CODECS%%:*}"
STORE="${STORE%%,*}"

# Read system calls per event: strace -c of pick-only runs, minus a run that picks nothing
# (opening the file and reading run/lumi/event to build the list cost the same in both).
syscalls() {  # mode picks -> number of read-family system calls
  strace -f -c -e trace=read,pread64,readv,preadv,preadv2 -o "$OUT/strace.tmp" \
    "$BENCH" pick --root "$INPUT" --store "$STORE" --mode "$1" --picks "$2" > /dev/null
  awk '$NF ~ /^(read|pread64|readv|preadv|preadv2)$/ {n += $4} END {print n + 0}' "$OUT/strace.tmp"
}
: > "$OUT/syscalls.txt"
if command -v strace > /dev/null; then
  for m in pread:$PICKS mmap:$PICKS basket:$SPICKS cluster:$SPICKS; do
    zero=$(syscalls "${m%%:*}" 0)
    n=$(syscalls "${m%%:*}" "${m##*:}")
    echo "${m%%:*} ${m##*:} $((n - zero))" >> "$OUT/syscalls.txt"
  done
fi

# jsroot (npm package, installed into a folder this benchmark owns).
JS="$OUT/jsroot"
: > "$OUT/jsroot.json"
if command -v node > /dev/null; then
  if [ ! -d "$JS/node_modules/jsroot" ]; then
    mkdir -p "$JS" && (cd "$JS" && npm install jsroot --ignore-scripts --no-audit --no-fund > npm.log 2>&1) || true
  fi
  if [ -d "$JS/node_modules/jsroot" ]; then
    cp "$HERE/jsroot_bench.mjs" "$JS/"
    # Absolute paths before the cd (INPUT and OUT may be relative to the caller's directory).
    input_abs=$(realpath "$INPUT")
    picks_abs=$(realpath "$OUT/work/picks.txt")
    (cd "$JS" && node jsroot_bench.mjs "$input_abs" "$picks_abs" "$JSPICKS") \
      > "$OUT/jsroot.json" || echo "jsroot run failed" >&2
  fi
fi

/usr/bin/python3 "$HERE/report.py" "$OUT"
