#!/usr/bin/env bash
# bench/readahead_wan: the client cache's TTree-aware read-ahead (issue 14) over an emulated WAN,
# for clients that read one cluster at a time and wait, in one invocation.
#
# Setup (scripts/testbed, as bench/cache_wan): an origin inside a network namespace behind
# ~40 ms RTT and 1 Gbit/s; a second origin on 127.0.0.1 for the "local" baseline of the python
# client. Data: a NanoAOD-like AGC set made by `ferry gen nanoaod` (zlib-1 and LZMA-9 folders);
# default /srv/ferry-agc-bench (READAHEAD_WAN_DATA).
# Clients:
#   agc   `ferry analyze agc FILES --reads 0 --threads 1`: one cluster fetched, decoded, then
#         the next (ROOT's TTreeCache without prefetch does the same)
#   py    bench/readahead_client.py: a python XRootD.client script reading, per file, the header
#         and then each cluster's baskets of the AGC branches in one vector read, as uproot does
#   agc4  `ferry analyze agc --reads 4`: a client with read-ahead of its own
# Scenarios per client: local (agc on the local files; py through the 127.0.0.1 origin), direct
# over the WAN, cold through the cache with readahead = off, cold with readahead = auto, warm
# (the same pass again, new process). agc4: cold with and without ferry's read-ahead.
# Measured: wall time, bytes that crossed the WAN (rx_bytes of the veth), the cache's counters
# (prefetch_bytes, prefetch_unused_bytes, prefetch_hits, bytes_from_origin), CPU idle % before
# each run, the client logins the origin logged during it (one per connection). Targets of issue 14 printed with PASS/FAIL by bench/readahead_wan_report.py:
#   cold with read-ahead within 10% of max(bytes read / link rate, the same pass local), the link
#   rate being min(nominal, iperf3 through the emulated link in the same run);
#   prefetch_unused_bytes <= 2% of the bytes read; agc4 with ferry's read-ahead no slower than
#   without (within 5%).
# Output: table on stdout; readahead_wan.json and readahead_wan.png in
# $FERRY_BENCH_OUT/readahead_wan. Needs root; exits 77 where namespaces are not allowed.
# Env: FERRY_BUILD_DIR, READAHEAD_WAN_DATA, READAHEAD_WAN_RTT (40ms), READAHEAD_WAN_RATE (1gbit),
# READAHEAD_WAN_REPEAT (1), READAHEAD_WAN_FORMAT (ttree; rntuple: the RNTuple forms of the sets
# that bench/agc_passes writes, zlib1-rntuple and lzma9-rntuple, with the agc clients only: the
# python client's plans are TTree baskets; output in readahead_wan-rntuple), READAHEAD_WAN_OPENS
# (1: agc opens its files one after another, as a TChain does), READAHEAD_WAN_NEXT (auto | off:
# the plug-in's readahead_next, the next file opened ahead), READAHEAD_WAN_PLUGIN (the plug-in
# library; default the build's: a copy of another build for before/after runs).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib/wan.sh
. "$ROOT/bench/lib/wan.sh"  # BUILD TB FERRY PY; the link's set-up, clean-up and meters
FORMAT="${READAHEAD_WAN_FORMAT:-ttree}"
OPENS="${READAHEAD_WAN_OPENS:-1}"  # agc opens its files one after another, as a TChain
SUFFIX=""
[ "$FORMAT" = ttree ] || SUFFIX="-$FORMAT"
OUT="${FERRY_BENCH_OUT:-$ROOT/out/bench}/readahead_wan$SUFFIX"
DATA="${READAHEAD_WAN_DATA:-/srv/ferry-agc-bench}"
RTT="${READAHEAD_WAN_RTT:-40ms}"
RATE="${READAHEAD_WAN_RATE:-1gbit}"
REPEAT="${READAHEAD_WAN_REPEAT:-1}"
PLUGIN="${READAHEAD_WAN_PLUGIN:-$BUILD/lib/libXrdClFerry-5.so}"
CLIENT="$ROOT/bench/readahead_client.py"
WAN=ftb-frah
AGC_BRANCHES=(nJet Jet_pt Jet_eta Jet_phi Jet_mass Jet_btagCSVV2 nElectron Electron_pt
  Electron_eta Electron_phi Electron_cutBased nMuon Muon_pt Muon_eta Muon_phi Muon_tightId
  MET_pt MET_phi)

for f in "$FERRY" "$PLUGIN"; do
  [ -e "$f" ] || { echo "readahead_wan: $f missing (build ferry, XrdClFerry)" >&2; exit 1; }
done
wan_require readahead_wan
[ -d "$DATA" ] || { echo "readahead_wan: SKIP: no data in $DATA (bench/gen_bench.sh)" >&2; exit 77; }
# stop_servers: stopped on exit by wan_cleanup, before the origin and the link.
stop_servers() { bash "$TB/origin.sh" stop --name frah-lo; }
wan_workdir /tmp/fca-ra-wan.XXXXXX

# ---- data, plans, link, origins ----
rel=()
for sub in "zlib1$SUFFIX" "lzma9$SUFFIX"; do
  for f in "$DATA/$sub"/*.root; do [ -e "$f" ] && rel+=("$sub/$(basename "$f")"); done
done
[ ${#rel[@]} -gt 0 ] || { echo "readahead_wan: SKIP: no ROOT files in $DATA" >&2; exit 77; }
bargs=()
for b in "${AGC_BRANCHES[@]}"; do bargs+=(--branch "$b"); done
read_bytes=0
CLIENTS=(agc py)
if [ "$FORMAT" = ttree ]; then
  for r in "${rel[@]}"; do
    plan="$WORK/plan-${r//\//-}.json"
    "$FERRY" root baskets "$DATA/$r" "${bargs[@]}" >"$plan"
  done
else
  CLIENTS=(agc)
fi
DATA_BYTES="$(cd "$DATA" && du -cb "${rel[@]}" | tail -1 | cut -f1)"
echo "== data: ${#rel[@]} files, $DATA_BYTES bytes in $DATA" >&2
cat "${rel[@]/#/$DATA/}" >/dev/null  # in the page cache: every scenario alike
wan_up
wan_origin "$DATA"
LOCAL="$(bash "$TB/origin.sh" start --dir "$DATA" --name frah-lo)"
echo "== origins $ORIGIN (WAN), $LOCAL (local)" >&2

# The link's capacity as this machine delivers it, measured in this run: the delay emulator is
# a user-space program on the same cores, so the nominal rate is an upper bound that a loaded
# 2-core machine may not reach. iperf3 (-R: the origin's side sends, as in a pass, 4 streams,
# 5 s) from inside the namespace; the report uses min(nominal, measured).
LINK_BPS=0
if command -v iperf3 >/dev/null; then
  nshost="${ORIGIN#root://}"; nshost="${nshost%%:*}"
  ip netns exec "$WAN" timeout 30 iperf3 -s -B "$nshost" -p 5411 -1 >/dev/null 2>&1 </dev/null &
  iperf_pid=$!
  for _ in $(seq 50); do
    ip netns exec "$WAN" ss -ltn 2>/dev/null | grep -q ":5411 " && break
    sleep 0.1
  done
  # The link sampled as in the passes: their transfer phases are compared with iperf3's on the
  # same counter (wire bytes; iperf3's own figure counts payload, ~4.5% less).
  wan_sample_start "$WORK/iperf-link.txt"
  LINK_BPS="$(timeout 30 iperf3 -c "$nshost" -p 5411 -R -P 4 -t 5 --json 2>/dev/null |
    "$PY" -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))' \
    2>/dev/null || echo 0)"
  wan_sample_stop
  wait "$iperf_pid" 2>/dev/null || true
fi
echo "== link measured by iperf3 -R -P 4: $LINK_BPS bit/s" >&2

# conf DIR CACHE READAHEAD
conf() {
  mkdir -p "$1"
  printf 'url = root://*\nlib = %s\nenable = true\ndir = %s\nreplica = off\nreadahead = %s\nreadahead_next = %s\n' \
    "$PLUGIN" "$2" "$3" "${READAHEAD_WAN_NEXT:-auto}" >"$1/ferry.conf"
}

# Client logins the WAN origin logged so far (xrootd logs one per connection): a pass that
# opened a connection per file would log in once per file (issue 38).
origin_logins() {
  grep -a -c 'XrootdXeq: .* login$' "$FERRY_TB_DIR/origin-$WAN/var/xrootd.log" 2>/dev/null || true
}

# run LABEL CLIENT PREFIX CONF_DIR CACHE_DIR [ROUND]: one pass; appends a JSON line.
run() {
  local label=$1 client=$2 prefix=$3 confdir=$4 cache=$5 round=${6:-1}
  local idle rx0 rx1 t0 t1 out rc=0 args=() logins0
  logins0="$(origin_logins)"
  case "$client" in
    agc | agc4)
      local reads=0
      [ "$client" = agc4 ] && reads=4
      for r in "${rel[@]}"; do
        if [ "$prefix" = file ]; then args+=("$DATA/$r"); else args+=("$prefix/$r"); fi
      done
      idle="$(idle_pct)"; rx0="$(rx_bytes)"; wan_sample_start "$WORK/link.txt"; t0=$(date +%s.%N)
      out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$confdir" timeout 1200 "$FERRY" analyze agc \
        "${args[@]}" --reads "$reads" --threads 1 --opens "$OPENS" --json)" || rc=$?
      ;;
    py)
      for r in "${rel[@]}"; do args+=("$WORK/plan-${r//\//-}.json" "$prefix/$r"); done
      idle="$(idle_pct)"; rx0="$(rx_bytes)"; wan_sample_start "$WORK/link.txt"; t0=$(date +%s.%N)
      out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$confdir" timeout 1200 "$PY" "$CLIENT" \
        "${args[@]}")" || rc=$?
      ;;
  esac
  t1=$(date +%s.%N)
  wan_sample_stop
  rx1="$(rx_bytes)"
  local stats="{}"
  if [ -n "$cache" ] && [ -d "$cache" ]; then
    stats="$("$FERRY" cache stats --dir "$cache" --json)"
  fi
  "$PY" - "$label" "$client" "$rc" "$idle" "$rx0" "$rx1" "$t0" "$t1" "$out" "$stats" "$round" \
    "$WORK/link.txt" "$(($(origin_logins) - logins0))" <<'PY' >>"$RUNS"
import json, sys
label, client, rc, idle, rx0, rx1, t0, t1, out, stats, rnd, link, logins = sys.argv[1:14]
try:
    samples = [[float(x) for x in line.split()] for line in open(link) if line.strip()]
except OSError:
    samples = []
try:
    r = json.loads(out) if out.strip() else {}
except ValueError:
    r = {}
print(json.dumps({"label": label, "client": client, "round": int(rnd), "exit": int(rc),
                  "idle_pct": float(idle or 0), "wan_bytes": int(rx1) - int(rx0),
                  "seconds": float(t1) - float(t0), "out": r, "origin_logins": int(logins),
                  "cache_stats": json.loads(stats), "link_samples": samples}))
PY
  echo "   $label: $(tail -1 "$RUNS" | cut -c1-200)" >&2
}

for ((k = 1; k <= REPEAT; k++)); do
  for client in "${CLIENTS[@]}"; do
    echo "== $client, round $k" >&2
    if [ "$client" = agc ]; then
      run "$client-local" "$client" file "$NOPLUG" "" "$k"
    else
      run "$client-local" "$client" "$LOCAL" "$NOPLUG" "" "$k"
    fi
    run "$client-direct" "$client" "$ORIGIN" "$NOPLUG" "" "$k"
    conf "$WORK/conf-off" "$WORK/cache-off" off
    run "$client-cold-noahead" "$client" "$ORIGIN" "$WORK/conf-off" "$WORK/cache-off" "$k"
    conf "$WORK/conf-on" "$WORK/cache-on" auto
    run "$client-cold-ahead" "$client" "$ORIGIN" "$WORK/conf-on" "$WORK/cache-on" "$k"
    run "$client-warm" "$client" "$ORIGIN" "$WORK/conf-on" "$WORK/cache-on" "$k"
    rm -rf "$WORK/cache-off" "$WORK/cache-on"
  done
  echo "== agc --reads 4, round $k" >&2
  run "agc4-direct" agc4 "$ORIGIN" "$NOPLUG" "" "$k"
  conf "$WORK/conf-off" "$WORK/cache-off" off
  run "agc4-cold-noahead" agc4 "$ORIGIN" "$WORK/conf-off" "$WORK/cache-off" "$k"
  conf "$WORK/conf-on" "$WORK/cache-on" auto
  run "agc4-cold-ahead" agc4 "$ORIGIN" "$WORK/conf-on" "$WORK/cache-on" "$k"
  rm -rf "$WORK/cache-off" "$WORK/cache-on"
done

"$PY" "$ROOT/bench/readahead_wan_report.py" "$RUNS" "$OUT" \
  "{\"data\": \"$DATA\", \"format\": \"$FORMAT\", \"files\": ${#rel[@]}, \"data_bytes\": $DATA_BYTES, \"rtt\": \"$RTT\", \"rate\": \"$RATE\", \"measured_bps\": $LINK_BPS, \"opens\": $OPENS, \"iperf_link_samples\": \"$WORK/iperf-link.txt\", \"repeat\": $REPEAT}"
