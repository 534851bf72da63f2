#!/usr/bin/env bash
# bench/store/run.sh: the event store against ferry's TTree reader (basket traversal as ROOT's
# GetEntry loop does it, and a TTreeCache-like cluster read) and jsroot, on one generated
# NanoAOD-like file of EVENTS events (issue 6). Writes $OUT/store.json (everything measured)
# and $OUT/store_*.png.
#
# Environment: FERRY_BUILD_DIR (a release build with bin/ferry and bin/store_bench),
# FERRY_BENCH_OUT, EVENTS (2000000), PICKS (2000), BASELINE_PICKS (200, the slow baselines run
# on the first ones of the same scattered list), STRACE_PICKS (50), JSROOT_PICKS (5),
# CODECS (zstd:2,zstd:3,lz4,zlib:1), STORE_BENCH_INPUT (an existing file to use instead), REUSE=1
# (keep the stores and conversion figures of an earlier run in the same FERRY_BENCH_OUT),
# WAN=0 to skip (6), the remote picks over the emulated WAN (WAN_RTT 40ms, WAN_RATE 1gbit,
# REMOTE_BASELINE_PICKS 2: ferry's TTree reader takes ~40 s per event there); the origin serves
# FERRY_BENCH_OUT, so the input is hard-linked (or copied) into it when it lies elsewhere.
set -euo pipefail
BUILD=${FERRY_BUILD_DIR:-build/release}
OUT=${FERRY_BENCH_OUT:-out/bench/store}
EVENTS=${EVENTS:-2000000}
PICKS=${PICKS:-2000}
BASE=${BASELINE_PICKS:-200}
SPICKS=${STRACE_PICKS:-50}
JSPICKS=${JSROOT_PICKS:-5}
CODECS=${CODECS:-zstd:2,zstd:3,lz4,zlib:1}
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
FIRST_CODEC=${CODECS%%,*}
STORE="$OUT/work/store-${FIRST_CODEC/:/-}"  # store_bench's folder of the first codec

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

# (6) Remote picks over the emulated WAN: the store and the ROOT file served by a real xrootd
# origin inside a namespace behind 40 ms / 1 Gbit/s (scripts/testbed), XRootD requests counted.
: > "$OUT/store-remote.json"
if [ "${WAN:-1}" = 1 ] && command -v xrootd > /dev/null && [ "$(id -u)" = 0 ]; then
  TB=$(cd "$HERE/../../scripts/testbed" && pwd)
  export FERRY_TB_DIR=$(mktemp -d /tmp/ferry-tb.XXXXXX)
  NS=ftb-sbench
  cleanup() {
    bash "$TB/origin.sh" stop --name "$NS" > /dev/null 2>&1 || true
    bash "$TB/wan.sh" down --name "$NS" > /dev/null 2>&1 || true
    rm -rf "$FERRY_TB_DIR"
  }
  trap cleanup EXIT
  SERVE=$(realpath "$OUT")
  RIN=$(realpath "$INPUT")
  case "$RIN" in
    "$SERVE"/*) ;;
    *) ln -f "$RIN" "$SERVE/remote-input.root" 2> /dev/null || cp "$RIN" "$SERVE/remote-input.root"
       RIN="$SERVE/remote-input.root" ;;
  esac
  chmod a+rx "$SERVE" "$SERVE/work" "$(realpath "$STORE")" && chmod -R a+r "$(realpath "$STORE")" "$RIN"
  if bash "$TB/wan.sh" up --name "$NS" --rtt "${WAN_RTT:-40ms}" --rate "${WAN_RATE:-1gbit}" > /dev/null; then
    URL=$(bash "$TB/origin.sh" start --netns "$NS" --dir "$SERVE" --name "$NS")
    "$BENCH" remote --root "$INPUT" --store-url "$URL/${STORE_REL:-$(realpath --relative-to="$SERVE" "$STORE")}" \
      --root-url "$URL/$(realpath --relative-to="$SERVE" "$RIN")" --json "$OUT/store-remote.json" \
      --picks "$PICKS" --baseline-picks "${REMOTE_BASELINE_PICKS:-2}" || echo "remote picks failed" >&2
  else
    echo "wan.sh could not make the namespace: remote picks skipped" >&2
  fi
  cleanup
  trap - EXIT
fi

/usr/bin/python3 "$HERE/report.py" "$OUT"
