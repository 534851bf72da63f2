#!/usr/bin/env bash
# bench/cache_wan: the ferry client cache over an emulated WAN, side by side with reading direct
# and with stock XCache (XrdPss + XrdPfc), in one invocation.
#
# Setup: the project's test bed (scripts/testbed): a network namespace behind a veth pair with
# ~40 ms RTT and 1 Gbit/s (tbf + NFQUEUE delayer), a plain xrootd origin inside it serving
# 8 files x 200 MiB of pseudo-random data. Workload (bench/cache_wan_replay.cc): a sparse,
# ROOT-like pattern — about 6% of each file in chunks of 2-16 KiB, read in file order with
# synchronous vector reads of 64 chunks, 4 threads over the 8 files.
#
# Scenarios: direct; ferry cold (empty cache) and warm (the same reads again, new process);
# XCache default (128k blocks, prefetch 10) cold and warm; XCache tuned (4k blocks, prefetch 0)
# cold and warm. Direct and ferry are repeated CACHE_WAN_REPEAT times (default 5): each round
# runs direct and ferry cold next to each other, in alternating order, and ratios are medians of
# the per-round ratios (this machine is shared; load drifts between rounds). Cold runs compare
# every chunk with the origin's files.
# Measured: wall time (the replayer's, open of the first file to close of the last), bytes
# that crossed the WAN (rx_bytes of the host end of the veth: wire bytes), origin requests,
# disk footprint of the cache (allocated blocks); ratios against direct and against bytes
# requested. Targets are printed with PASS/FAIL.
#
# Output: a table on stdout; JSON and PNGs in $FERRY_BENCH_OUT/cache_wan. Needs root
# (namespaces, xrootd -R); exits 77 where the machine does not allow it.
# Env: FERRY_BUILD_DIR (build with the plug-in and cache_wan_replay), CACHE_WAN_DATA (default
# /tmp/ferry-cache-wan-data, kept for the next run), CACHE_WAN_REPEAT, CACHE_WAN_FILES (8),
# CACHE_WAN_SIZE (200M), CACHE_WAN_RTT (40ms), CACHE_WAN_RATE (1gbit), CACHE_WAN_SKIP_XCACHE=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib/wan.sh
. "$ROOT/bench/lib/wan.sh"  # BUILD TB FERRY PY; the link's set-up, clean-up and meters
OUT="${FERRY_BENCH_OUT:-$ROOT/out/bench}/cache_wan"
DATA="${CACHE_WAN_DATA:-/tmp/ferry-cache-wan-data}"
REPEAT="${CACHE_WAN_REPEAT:-5}"
NFILES="${CACHE_WAN_FILES:-8}"
SIZE="${CACHE_WAN_SIZE:-200M}"
RTT="${CACHE_WAN_RTT:-40ms}"
RATE="${CACHE_WAN_RATE:-1gbit}"
THREADS=4
REPLAY="$BUILD/bin/cache_wan_replay"
PLUGIN="$BUILD/lib/libXrdClFerry-5.so"
WAN=ftb-fcab  # the test bed requires ftb-<1-8 chars>; "fca" marks this benchmark's namespace

for f in "$FERRY" "$REPLAY" "$PLUGIN"; do
  [ -e "$f" ] || { echo "cache_wan: $f missing (build ferry, XrdClFerry, cache_wan_replay)" >&2; exit 1; }
done
wan_require cache_wan
# stop_servers: stopped on exit by wan_cleanup, before the origin and the link.
stop_servers() { bash "$TB/xcache.sh" stop --name fca-xc; }
wan_workdir /tmp/fca-cache-wan.XXXXXX

# ---- data, link, origin ----
names=()
for ((i = 0; i < NFILES; i++)); do names+=("$(printf 'f%02d.bin' "$i")"); done
mkdir -p "$DATA"
chmod a+rx "$DATA"
paths=()
for n in "${names[@]}"; do paths+=("$DATA/$n"); done
echo "== data: $NFILES x $SIZE in $DATA" >&2
bash "$TB/gendata.sh" --keep "$SIZE" "${paths[@]}" >&2
chmod a+r "${paths[@]}"
wan_up
wan_origin "$DATA"
echo "== origin $ORIGIN" >&2
cat "${paths[@]}" >/dev/null  # the origin's files in the page cache: every scenario alike

# run LABEL KIND URL_PREFIX CONF_DIR CACHE_DIR VERIFY [ROUND]: one replay; appends a JSON line.
run() {
  local label=$1 kind=$2 prefix=$3 conf=$4 cache=$5 verify=$6 round=${7:-0}
  local idle rx0 rx1 t0 t1 out rc=0 vargs=()
  [ "$verify" = 1 ] && vargs=(-V "$DATA")
  idle="$(idle_pct)"
  rx0="$(rx_bytes)"
  t0=$(date +%s.%N)
  out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$conf" timeout 300 "$REPLAY" -t "$THREADS" \
    "${vargs[@]}" "$prefix" "${names[@]}")" || rc=$?
  t1=$(date +%s.%N)
  rx1="$(rx_bytes)"
  local stats="{}" disk=0
  if [ "$kind" = ferry ]; then
    stats="$("$FERRY" cache stats --dir "$cache" --json)"
  fi
  if [ -n "$cache" ] && [ -d "$cache" ]; then
    disk="$(du -s -B1 "$cache" | awk '{print $1}')"
  fi
  "$PY" - "$label" "$kind" "$rc" "$idle" "$rx0" "$rx1" "$t0" "$t1" "$disk" "$out" "$stats" "$round" <<'PY' >>"$RUNS"
import json, sys
label, kind, rc, idle, rx0, rx1, t0, t1, disk, out, stats, rnd = sys.argv[1:13]
r = json.loads(out) if out.strip() else {}
print(json.dumps({"label": label, "kind": kind, "round": int(rnd), "exit": int(rc),
                  "idle_pct": float(idle or 0),
                  "wan_bytes": int(rx1) - int(rx0), "process_s": float(t1) - float(t0),
                  "disk_bytes": int(disk), "replay": r, "cache_stats": json.loads(stats)}))
PY
  echo "   $label: $(tail -1 "$RUNS" | cut -c1-160)" >&2
}

# ferry_conf DIR CACHE: an XrdCl plug-in conf dir for the ferry cache.
ferry_conf() {
  mkdir -p "$1"
  printf 'url = root://*\nlib = %s\nenable = true\ndir = %s\n' "$PLUGIN" "$2" >"$1/ferry.conf"
}

# xcache_settle DIR: XCache writes blocks and block maps after the client closed; wait until the
# cache directory stops growing (bounded) so its footprint is final.
xcache_settle() {
  local prev=-1 now i
  for ((i = 0; i < 60; i++)); do
    now="$(du -s -B1 "$1" | awk '{print $1}')"
    [ "$now" = "$prev" ] && break
    prev=$now
    sleep 1
  done
}

echo "== direct and ferry, $REPEAT rounds" >&2
for ((k = 1; k <= REPEAT; k++)); do
  cache="$WORK/ferry-$k"
  ferry_conf "$WORK/conf-$k" "$cache"
  if ((k % 2 == 1)); then
    run "direct" direct "$ORIGIN" "$NOPLUG" "" 1 "$k"
    run "ferry-cold" ferry "$ORIGIN" "$WORK/conf-$k" "$cache" 1 "$k"
  else
    run "ferry-cold" ferry "$ORIGIN" "$WORK/conf-$k" "$cache" 1 "$k"
    run "direct" direct "$ORIGIN" "$NOPLUG" "" 1 "$k"
  fi
  run "ferry-warm" ferry "$ORIGIN" "$WORK/conf-$k" "$cache" 0 "$k"
  [ "$k" = 1 ] && run "ferry-warm-verified" ferry "$ORIGIN" "$WORK/conf-$k" "$cache" 1 "$k"
  if [ "$k" -lt "$REPEAT" ]; then rm -rf "$cache"; fi
done
"$FERRY" cache verify --dir "$WORK/ferry-$REPEAT" >&2

if [ "${CACHE_WAN_SKIP_XCACHE:-0}" != 1 ]; then
  for profile in default tuned; do
    echo "== XCache $profile" >&2
    xc="$WORK/xcache-$profile"
    XC_URL="$(bash "$TB/xcache.sh" start "$profile" --origin "$ORIGIN_HOSTPORT" --cache-dir "$xc" \
      --name fca-xc)"
    run "xcache-$profile-cold" xcache "$XC_URL" "$NOPLUG" "$xc" 1
    xcache_settle "$xc"
    run "xcache-$profile-warm" xcache "$XC_URL" "$NOPLUG" "$xc" 0
    xcache_settle "$xc"
    disk="$(du -s -B1 "$xc" | awk '{print $1}')"
    echo "{\"label\": \"xcache-$profile-disk\", \"disk_bytes\": $disk}" >>"$RUNS"
    bash "$TB/xcache.sh" stop --name fca-xc >&2
  done
fi

"$PY" "$ROOT/bench/cache_wan_report.py" "$RUNS" "$OUT" \
  "{\"files\": $NFILES, \"size\": \"$SIZE\", \"rtt\": \"$RTT\", \"rate\": \"$RATE\", \"threads\": $THREADS, \"repeat\": $REPEAT}"
