#!/usr/bin/env bash
# bench/proxy_wan: ferry's site proxy over an emulated WAN, side by side with reading direct and
# with stock XCache (XrdPss + XrdPfc) default and tuned, in one invocation.
#
# Setup (scripts/testbed): an origin inside a network namespace behind ~40 ms RTT and 1 Gbit/s
# (tbf + NFQUEUE delayer); the ferry proxy (`ferry proxy run`, libXrdFerryProxy) and XCache on
# the near side (127.0.0.1), clients beside them.
# Workloads:
#   replay  the sparse pattern of bench/cache_wan (cache_wan_replay): 8 files x 200 MiB, 6% in
#           2-16 KiB chunks, synchronous 64-chunk vector reads, 4 threads
#   agc     `ferry analyze agc --threads 8` over a NanoAOD-like dataset of PROXY_WAN_AGC_FILES
#           (9) files made by `ferry gen nanoaod` (digests of every pass must agree)
#   multi   8 client processes at once, one file each (cache_wan_replay -t 1): aggregate
#           throughput through the cold proxy against the same processes reading direct
# Scenarios: direct; ferry proxy cold (fresh cache, proxy restarted) and warm; XCache default
# (128k blocks, prefetch 10) and tuned (4k, prefetch 0), cold and warm. Direct and proxy cold
# run PROXY_WAN_REPEAT times (3) next to each other in alternating order; ratios are medians of
# the per-round ratios. The machine is shared: each run records the CPU idle % of the second
# before it.
# Measured: wall time, bytes that crossed the WAN (rx_bytes of the host end of the veth, wire
# bytes), bytes and requests the proxy sent to the origin (its counters), disk footprint (du),
# the proxy's mean outstanding origin requests over the pass (its meter), CPU idle.
# Output: a table with the targets of issue 13 (PASS/FAIL) on stdout; proxy_wan.json and
# proxy_wan.png in $FERRY_BENCH_OUT/proxy_wan. Needs root; exits 77 where the machine does not
# allow namespaces.
# Env: FERRY_BUILD_DIR, PROXY_WAN_DATA (/tmp/ferry-proxy-wan-data, kept), PROXY_WAN_REPEAT,
# PROXY_WAN_RTT (40ms), PROXY_WAN_RATE (1gbit), PROXY_WAN_AGC_FILES (9), PROXY_WAN_AGC_EVENTS
# (1800000), PROXY_WAN_SKIP_XCACHE=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib/wan.sh
. "$ROOT/bench/lib/wan.sh"  # BUILD TB FERRY PY; the link's set-up, clean-up and meters
OUT="${FERRY_BENCH_OUT:-$ROOT/out/bench}/proxy_wan"
DATA="${PROXY_WAN_DATA:-/tmp/ferry-proxy-wan-data}"
REPEAT="${PROXY_WAN_REPEAT:-3}"
RTT="${PROXY_WAN_RTT:-40ms}"
RATE="${PROXY_WAN_RATE:-1gbit}"
AGC_FILES="${PROXY_WAN_AGC_FILES:-9}"
AGC_EVENTS="${PROXY_WAN_AGC_EVENTS:-1800000}"
REPLAY="$BUILD/bin/cache_wan_replay"
SHIM="$BUILD/lib/libferry_tb_bindshim.so"
WAN=ftb-pwb  # the test bed requires ftb-<1-8 chars>; "p" marks the proxy engineer's namespaces

for f in "$FERRY" "$REPLAY" "$BUILD/lib/libXrdFerryProxy-5.so" "$SHIM"; do
  [ -e "$f" ] || { echo "proxy_wan: $f missing (build ferry, XrdFerryProxy, cache_wan_replay)" >&2; exit 1; }
done
wan_require proxy_wan
PROXY_PID=""
PROXY_PORT=""

stop_proxy() {
  [ -n "$PROXY_PID" ] || return 0
  # `timeout` runs xrootd as its child: TERM goes to both; bounded wait, then KILL.
  kill -TERM "$PROXY_PID" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$PROXY_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$PROXY_PID" 2>/dev/null || true
  wait "$PROXY_PID" 2>/dev/null || true
  PROXY_PID=""
}
# stop_servers: stopped on exit by wan_cleanup, before the origin and the link.
stop_servers() {
  stop_proxy
  bash "$TB/xcache.sh" stop --name fpx-xc
}
wan_workdir /tmp/fpx-proxy-wan.XXXXXX

# ---- data, link, origin ----
mkdir -p "$DATA/agc"
chmod a+rx "$DATA" "$DATA/agc"
names=()
for ((i = 0; i < 8; i++)); do names+=("$(printf 'f%02d.bin' "$i")"); done
paths=()
for n in "${names[@]}"; do paths+=("$DATA/$n"); done
echo "== data: 8 x 200M in $DATA" >&2
bash "$TB/gendata.sh" --keep 200M "${paths[@]}" >&2
chmod a+r "${paths[@]}"
agc_stamp="$DATA/agc/made-with"
agc_want="events=$AGC_EVENTS files=$AGC_FILES auto_flush=10000 codec=zlib:1 seed=1"
if [ "$(cat "$agc_stamp" 2>/dev/null)" != "$agc_want" ]; then
  echo "== data: ferry gen nanoaod ($agc_want)" >&2
  rm -rf "$DATA/agc" && mkdir -p "$DATA/agc"
  "$FERRY" gen nanoaod --events "$AGC_EVENTS" --files "$AGC_FILES" --codec zlib:1 \
    --auto-flush 10000 --seed 1 --out "$DATA/agc" >&2
  echo "$agc_want" >"$agc_stamp"
fi
chmod -R a+rX "$DATA"
agc_names=()
for f in "$DATA"/agc/nanoaod_*.root; do agc_names+=("agc/$(basename "$f")"); done

wan_up
wan_origin "$DATA"
echo "== origin $ORIGIN" >&2
cat "${paths[@]}" "$DATA"/agc/*.root >/dev/null  # the origin's files in the page cache

# start_proxy CACHE: a fresh proxy (new process, so a cold cache is cold in memory too).
start_proxy() {
  stop_proxy
  local cache=$1 i
  PROXY_PORT="$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  mkdir -p "$WORK/admin-$PROXY_PORT"
  env FERRY_TB_BIND_ADDR=127.0.0.1 LD_PRELOAD="$SHIM" timeout -k 5 3600 "$FERRY" proxy run \
    --origin "$ORIGIN_HOSTPORT" --port "$PROXY_PORT" --dir "$cache" --host 127.0.0.1 \
    --admin "$WORK/admin-$PROXY_PORT" --log "$WORK/admin-$PROXY_PORT/xrootd.log" \
    --max-size 50G >/dev/null 2>&1 &
  PROXY_PID=$!
  for ((i = 0; i < 200; i++)); do
    timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PROXY_PORT" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "proxy_wan: the proxy did not start" >&2
  tail -20 "$WORK/admin-$PROXY_PORT/xrootd.log" >&2 || true
  exit 1
}

# proxy_json CACHE: the proxy's counters (cache stats, access summary, status file) as JSON.
proxy_json() {
  [ -d "$1" ] && "$FERRY" cache stats --dir "$1" --json 2>/dev/null || echo "{}"
}

# run WORKLOAD SCENARIO ROUND PREFIX CACHE: one pass; appends a JSON line to RUNS.
run() {
  local workload=$1 scenario=$2 round=$3 prefix=$4 cache=$5
  local idle rx0 rx1 t0 t1 out rc=0 before="{}" after="{}" disk=0
  idle="$(idle_pct)"
  [ "${scenario#proxy}" != "$scenario" ] && before="$(proxy_json "$cache")"
  rx0="$(rx_bytes)"
  t0=$(date +%s.%N)
  case "$workload" in
    replay)
      out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$NOPLUG" timeout 600 "$REPLAY" -t 4 \
        $([ "${scenario%-warm}" = "$scenario" ] && echo "-V $DATA") "$prefix" "${names[@]}")" || rc=$?
      ;;
    agc)
      local urls=()
      for n in "${agc_names[@]}"; do urls+=("$prefix/$n"); done
      out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$NOPLUG" timeout 900 "$FERRY" analyze agc \
        "${urls[@]}" --threads 8 --json)" || rc=$?
      ;;
    multi)
      local pids=() k outs=()
      for ((k = 0; k < 8; k++)); do
        env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$NOPLUG" timeout 600 "$REPLAY" -t 1 -s $((42 + k)) \
          "$prefix" "${names[$k]}" >"$WORK/multi-$k.json" &
        pids+=($!)
      done
      for k in "${pids[@]}"; do wait "$k" || rc=$?; done
      out="$($PY -c 'import json,sys
rs=[json.load(open(p)) for p in sys.argv[1:]]
print(json.dumps({"bytes": sum(r["bytes"] for r in rs), "vector_reads": sum(r["vector_reads"] for r in rs),
                  "processes": len(rs)}))' "$WORK"/multi-*.json)"
      ;;
  esac
  t1=$(date +%s.%N)
  rx1="$(rx_bytes)"
  [ "${scenario#proxy}" != "$scenario" ] && sleep 1.2 && after="$(proxy_json "$cache")"
  [ -n "$cache" ] && [ -d "$cache" ] && disk="$(du -s -B1 "$cache" | awk '{print $1}')"
  "$PY" - "$workload" "$scenario" "$round" "$rc" "$idle" "$rx0" "$rx1" "$t0" "$t1" "$disk" \
    "$out" "$before" "$after" <<'PY' >>"$RUNS"
import json, sys
(workload, scenario, rnd, rc, idle, rx0, rx1, t0, t1, disk, out, before, after) = sys.argv[1:14]
print(json.dumps({"workload": workload, "scenario": scenario, "round": int(rnd), "exit": int(rc),
                  "idle_pct": float(idle or 0), "wan_bytes": int(rx1) - int(rx0),
                  "process_s": float(t1) - float(t0), "disk_bytes": int(disk),
                  "result": json.loads(out) if out.strip() else {},
                  "proxy_before": json.loads(before), "proxy_after": json.loads(after)}))
PY
  echo "   $workload $scenario r$round: $(tail -1 "$RUNS" | cut -c1-150)" >&2
}

for workload in replay agc multi; do
  echo "== $workload: direct and ferry proxy, $REPEAT rounds" >&2
  for ((k = 1; k <= REPEAT; k++)); do
    cache="$WORK/proxy-$workload-$k"
    start_proxy "$cache"
    P="root://127.0.0.1:$PROXY_PORT/"
    if ((k % 2 == 1)); then
      run "$workload" direct "$k" "$ORIGIN" ""
      run "$workload" proxy-cold "$k" "$P" "$cache"
    else
      run "$workload" proxy-cold "$k" "$P" "$cache"
      run "$workload" direct "$k" "$ORIGIN" ""
    fi
    [ "$workload" != multi ] && run "$workload" proxy-warm "$k" "$P" "$cache"
    stop_proxy
    [ "$k" -lt "$REPEAT" ] && rm -rf "$cache"
  done
  "$FERRY" cache verify --dir "$WORK/proxy-$workload-$REPEAT" >&2
done

if [ "${PROXY_WAN_SKIP_XCACHE:-0}" != 1 ]; then
  for profile in default tuned; do
    for workload in replay agc; do
      echo "== XCache $profile: $workload" >&2
      xc="$WORK/xcache-$profile-$workload"
      XC_URL="$(bash "$TB/xcache.sh" start "$profile" --origin "$ORIGIN_HOSTPORT" \
        --cache-dir "$xc" --name fpx-xc)"
      run "$workload" "xcache-$profile-cold" 0 "${XC_URL%/}/" "$xc"
      run "$workload" "xcache-$profile-warm" 0 "${XC_URL%/}/" "$xc"
      bash "$TB/xcache.sh" stop --name fpx-xc >&2
    done
  done
fi

"$PY" "$ROOT/bench/proxy_wan_report.py" "$RUNS" "$OUT" \
  "{\"rtt\": \"$RTT\", \"rate\": \"$RATE\", \"repeat\": $REPEAT, \"agc_files\": ${#agc_names[@]}, \"agc_events\": $AGC_EVENTS}"
