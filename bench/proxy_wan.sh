#!/usr/bin/env bash
# bench/proxy_wan: ferry's site proxy over an emulated WAN, side by side with reading direct and
# with stock XCache (XrdPss + XrdPfc) default and tuned, in one invocation.
#
# Setup (scripts/testbed): an origin inside a network namespace behind ~40 ms RTT and 1 Gbit/s
# (tbf + NFQUEUE delayer); the ferry proxy (`ferry proxy run`, libXrdFerryProxy) and XCache on
# the near side (127.0.0.1), clients beside them.
# Workloads:
#   replay  the sparse pattern of bench/cache_wan (cache_wan_replay): 8 files x 200 MiB, 6% in
#           2-16 KiB chunks, synchronous 64-chunk vector reads, 4 threads; each warm pass beside
#           one through a plain xrootd serving the same files from local disk (scenario
#           plain-local, alternating): the CPU floor of anything serving kXR_readv inside
#           XrdXrootd, which copies every segment through a buffer (no sendfile for readv)
#   agc     `ferry analyze agc --threads 8` over a NanoAOD-like dataset of PROXY_WAN_AGC_FILES
#           (9) files made by `ferry gen nanoaod` (digests of every pass must agree)
#   multi   8 client processes at once, one file each (cache_wan_replay -t 1): aggregate
#           throughput through the cold proxy against the same processes reading direct
#   xrdcp   whole-file copies of 3 of the replay's files (xrdcp to /dev/null, one after the
#           other): through the cold proxy (copies served through, copy_cache_fraction) against
#           direct; then warm, through a proxy whose cache holds the files whole (filled with
#           --copy-cache-fraction 1), against a plain xrootd serving the same files from local
#           disk (scenario plain-local), alternating
#   multi-warm  multi against a warm proxy and against warm XCache (both profiles), after one
#           filling pass each
#   agc-local   the AGC pass reading the files from local disk (scenario local): the limit of a
#           cache on the same host
# Warm passes: PROXY_WAN_WARM (5) for each of ferry and XCache (ferry's replay and agc: spread
# over the rounds), medians. For every pass through a server (proxy, XCache, plain xrootd) the
# CPU seconds of its processes and the read syscalls of its xrootd (/proc/PID/io syscr:
# bench/lib/proc_cost.py) are recorded: CPU seconds per warm GB served (replay) and warm disk
# reads per basket (the replay's chunks; the socket reads of the requests count too, about 2 per
# 64-chunk vector read) against XCache's.
#   https-multi, https-single (with --https, below): the replay's chunks read with curl
# Scenarios: direct; ferry proxy cold (fresh cache, proxy restarted) and warm; XCache default
# (128k blocks, prefetch 10) and tuned (4k, prefetch 0), cold and warm. Direct and proxy cold
# run PROXY_WAN_REPEAT times (3) next to each other in alternating order; ratios are medians of
# the per-round ratios. The machine is shared: each run records the CPU idle % of the second
# before it.
# Measured: wall time, bytes that crossed the WAN (rx_bytes of the host end of the veth, wire
# bytes), bytes and requests the proxy sent to the origin (its counters), disk footprint (du),
# the proxy's mean outstanding origin requests over the pass (its meter), CPU idle.
# Output: a table with the targets of issue 13 (PASS/FAIL) on stdout; proxy_wan.json and
# proxy_wan.png in $FERRY_BENCH_OUT/proxy_wan (or a folder named by the options, below). Needs
# root; exits 77 where the machine does not allow namespaces.
#
# usage: proxy_wan.sh [--auth sss] [--https] [--workloads LIST]
#   --auth sss   the same passes with authentication everywhere: the origin admits only sss
#                users and authorises with an authdb (the bench's client key and the proxy's
#                own), the proxy runs with `--auth sss:KEYTAB --authdb FILE --origin-credentials
#                sss:KEYTAB`, and every client (direct or through the proxy) presents its own
#                sss key. XCache is skipped (the test bed's has no origin credentials). The
#                report puts the ratios beside those of the last run without --auth
#                (proxy_wan/proxy_wan.json, or proxy_wan-https/ with --https) if there is one.
#   --https      adds the HTTPS pass (workloads https-multi and https-single): the origin also
#                serves XrdHttp over TLS, the proxy runs with `--https PORT --cert --key` (a
#                throwaway CA and certificate made with openssl), and bench/proxy_wan_https.py
#                reads the replay's pattern with curl: every chunk, 64 ranges per GET
#                (multipart/byteranges), or every 16th chunk, one range per GET; 4 curl
#                processes, each over one kept-alive connection; direct from the origin over
#                HTTPS, and through the proxy cold and warm. HTTPS clients are anonymous: with
#                --auth sss as well, both authdbs grant `u *` read of the data.
#   --workloads LIST  comma-separated subset of replay,agc,multi,xrdcp,multi-warm,agc-local,
#                https-multi,https-single ("https" = both HTTPS workloads; default: all but the
#                HTTPS ones, plus https with --https). A quick check: --workloads
#                xrdcp,agc-local with PROXY_WAN_REPEAT=1 PROXY_WAN_WARM=1 PROXY_WAN_SKIP_XCACHE=1.
# Results go to proxy_wan, proxy_wan-sss, proxy_wan-https or proxy_wan-sss-https under
# $FERRY_BENCH_OUT, so runs of each kind stay side by side.
# Env: FERRY_BUILD_DIR, PROXY_WAN_DATA (/tmp/ferry-proxy-wan-data, kept), PROXY_WAN_REPEAT,
# PROXY_WAN_WARM (5), PROXY_WAN_RTT (40ms), PROXY_WAN_RATE (1gbit), PROXY_WAN_AGC_FILES (9), PROXY_WAN_AGC_EVENTS
# (1800000), PROXY_WAN_SKIP_XCACHE=1, PROXY_WAN_PROXY_ARGS (more `ferry proxy run` options, e.g.
# "--channels 4 --set ahead_fetches=8" to compare settings); the options as PROXY_WAN_AUTH=sss, PROXY_WAN_HTTPS=1 and
# PROXY_WAN_WORKLOADS=LIST (so `make bench BENCH=proxy_wan PROXY_WAN_AUTH=sss` works).
set -euo pipefail
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
AUTH="${PROXY_WAN_AUTH:-}"
HTTPS="${PROXY_WAN_HTTPS:-0}"
WORKLOADS="${PROXY_WAN_WORKLOADS:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --auth) AUTH="${2:?--auth needs sss}"; shift 2 ;;
    --https) HTTPS=1; shift ;;
    --workloads) WORKLOADS="${2:?--workloads needs a list}"; shift 2 ;;
    -h | --help) usage ;;
    *) echo "proxy_wan: unknown option $1" >&2; usage ;;
  esac
done
case "$AUTH" in
  "" | none) AUTH="" ;;
  sss) ;;
  *) echo "proxy_wan: --auth $AUTH: only sss is measured" >&2; exit 2 ;;
esac
[ "$HTTPS" = 1 ] || HTTPS=0
HTTPS_TAG=""  # a failing $(...) in an assignment would end the script (set -e)
if [ "$HTTPS" = 1 ]; then HTTPS_TAG=-https; fi
[ -n "$WORKLOADS" ] || WORKLOADS="replay,agc,multi,xrdcp,multi-warm,agc-local${HTTPS_TAG:+,https}"
WORKLOADS="${WORKLOADS//https-multi/HM}"
WORKLOADS="${WORKLOADS//https-single/HS}"
WORKLOADS="${WORKLOADS//https/https-multi,https-single}"
WORKLOADS="${WORKLOADS//HM/https-multi}"
WORKLOADS="${WORKLOADS//HS/https-single}"
IFS=, read -r -a workloads <<<"$WORKLOADS"
for w in "${workloads[@]}"; do
  case "$w" in
    replay | agc | multi | xrdcp | multi-warm | agc-local) ;;
    https-multi | https-single)
      [ "$HTTPS" = 1 ] || { echo "proxy_wan: workload $w needs --https" >&2; exit 2; } ;;
    *) echo "proxy_wan: unknown workload $w" >&2; usage ;;
  esac
done
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib/wan.sh
. "$ROOT/bench/lib/wan.sh"  # BUILD TB FERRY PY; the link's set-up, clean-up and meters
OUT="${FERRY_BENCH_OUT:-$ROOT/out/bench}/proxy_wan${AUTH:+-$AUTH}$HTTPS_TAG"
# --auth compares with the last run of the same options without it
BASELINE="${FERRY_BENCH_OUT:-$ROOT/out/bench}/proxy_wan$HTTPS_TAG/proxy_wan.json"
DATA="${PROXY_WAN_DATA:-/tmp/ferry-proxy-wan-data}"
REPEAT="${PROXY_WAN_REPEAT:-3}"
WARM="${PROXY_WAN_WARM:-5}"
WARM_PER_ROUND=$(((WARM + REPEAT - 1) / REPEAT))  # ferry's replay and agc warm passes
RTT="${PROXY_WAN_RTT:-40ms}"
RATE="${PROXY_WAN_RATE:-1gbit}"
AGC_FILES="${PROXY_WAN_AGC_FILES:-9}"
AGC_EVENTS="${PROXY_WAN_AGC_EVENTS:-1800000}"
REPLAY="$BUILD/bin/cache_wan_replay"
SHIM="$BUILD/lib/libferry_tb_bindshim.so"
WAN=ftb-pwb  # the test bed requires ftb-<1-8 chars>; "p" marks the proxy engineer's namespaces
ORIGIN_HTTPS_PORT=8443  # inside the namespace, which has nothing else listening

for f in "$FERRY" "$REPLAY" "$BUILD/lib/libXrdFerryProxy-5.so" "$SHIM"; do
  [ -e "$f" ] || { echo "proxy_wan: $f missing (build ferry, XrdFerryProxy, cache_wan_replay)" >&2; exit 1; }
done
wan_require proxy_wan
if [ -n "$AUTH" ]; then
  command -v xrdsssadmin >/dev/null ||
    { echo "proxy_wan: SKIP: --auth sss needs xrdsssadmin" >&2; exit 77; }
fi
if [ "$HTTPS" = 1 ]; then
  for t in openssl curl; do
    command -v $t >/dev/null || { echo "proxy_wan: SKIP: --https needs $t" >&2; exit 77; }
  done
fi
PROXY_PID=""
PROXY_PORT=""
PROXY_HTTPS_PORT=""
PROXY_SEC=()   # the proxy's --auth/--authdb/--origin-credentials (with --auth)
PROXY_EXTRA=() # more options of the next start_proxy (the xrdcp warm phase)
CLIENT_ENV=()  # what every xroot client adds to its environment (its own sss key)
ORIGIN_EXTRA=""

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
  bash "$TB/origin.sh" stop --name fpx-plain
}
# The processes whose cost a pass records (proc_cost.py): set before each run.
SERVER_PIDS=""
xcache_pid() { cat "$FERRY_TB_DIR/xcache-fpx-xc/xrootd.pid.ours" 2>/dev/null || true; }
plain_pid() { cat "$FERRY_TB_DIR/origin-fpx-plain/xrootd.pid.ours" 2>/dev/null || true; }
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

# ---- security: sss keys and authdbs (--auth), a CA and a certificate (--https) ----
# One keytab made at once (keys made one by one can share a key number): the bench's client
# key and the proxy's own. The origin gets the whole keytab; the proxy's --auth keytab holds
# only the client's line, its --origin-credentials only its own; the client presents its own.
KEYS="$WORK/keys"
mkdir -p "$KEYS"
chmod 755 "$KEYS"
: >"$WORK/origin-extra.cfg"
if [ -n "$AUTH" ] || [ "$HTTPS" = 1 ]; then
  ORIGIN_EXTRA="$WORK/origin-extra.cfg"
fi
anyone=""
[ "$HTTPS" = 1 ] && anyone="u * / rl"  # HTTPS clients of the bench are anonymous
if [ -n "$AUTH" ]; then
  for u in pwbench ferryproxy; do
    xrdsssadmin -k "$u" -u "$u" -g bench add "$KEYS/all.kt" </dev/null >/dev/null 2>&1 ||
      { echo "proxy_wan: xrdsssadmin could not add $u's key" >&2; exit 1; }
  done
  grep ' u:pwbench ' "$KEYS/all.kt" >"$KEYS/client.kt"
  grep ' u:ferryproxy ' "$KEYS/all.kt" >"$KEYS/proxy.kt"
  printf 'u pwbench / rl\nu ferryproxy / rl\n%s\n' "$anyone" >"$KEYS/origin.authdb"
  printf 'u pwbench / rl\n%s\n' "$anyone" >"$KEYS/proxy.authdb"
  chmod 600 "$KEYS"/*.kt
  chmod 644 "$KEYS"/*.authdb
  chown xrootd: "$KEYS/all.kt"  # the origin reads it as xrootd; the proxy copies its own
  cat >>"$ORIGIN_EXTRA" <<CFG
xrootd.seclib libXrdSec.so
sec.protocol sss -s $KEYS/all.kt
sec.protbind * only sss
acc.authdb $KEYS/origin.authdb
ofs.authorize
CFG
  PROXY_SEC=(--auth "sss:$KEYS/client.kt" --authdb "$KEYS/proxy.authdb"
             --origin-credentials "sss:$KEYS/proxy.kt")
  CLIENT_ENV=(XrdSecPROTOCOL=sss "XrdSecSSSKT=$KEYS/client.kt")
fi
if [ "$HTTPS" = 1 ]; then
  # A throwaway CA and a certificate for both ends: the proxy (127.0.0.1) and the origin
  # (the namespace's address).
  TLS="$WORK/tls"
  mkdir -p "$TLS"
  chmod 755 "$TLS"
  NS_ADDR="$(ip netns exec "$WAN" ip -4 -o addr show scope global |
    awk '{split($4,a,"/"); print a[1]; exit}')"
  printf 'subjectAltName=IP:127.0.0.1,IP:%s\nextendedKeyUsage=serverAuth\n' "$NS_ADDR" \
    >"$TLS/san.ext"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TLS/ca.key" -out "$TLS/ca.pem" -days 2 \
    -subj "/CN=proxy_wan bench CA" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$TLS/server.key" -out "$TLS/server.csr" \
    -subj "/CN=127.0.0.1" 2>/dev/null
  openssl x509 -req -in "$TLS/server.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" \
    -CAcreateserial -out "$TLS/server.pem" -days 2 -extfile "$TLS/san.ext" 2>/dev/null
  chown xrootd: "$TLS/server.pem" "$TLS/server.key"
  chmod 600 "$TLS/server.key"
  cat >>"$ORIGIN_EXTRA" <<CFG
xrd.protocol XrdHttp:$ORIGIN_HTTPS_PORT libXrdHttp.so
xrd.tls $TLS/server.pem $TLS/server.key
xrd.tlsca noverify
CFG
fi
wan_origin "$DATA" "$ORIGIN_EXTRA"
echo "== origin $ORIGIN${AUTH:+ (sss)}" >&2
if [ "$HTTPS" = 1 ]; then
  ORIGIN_HTTPS="https://$NS_ADDR:$ORIGIN_HTTPS_PORT/"
  echo "== origin over HTTPS: $ORIGIN_HTTPS" >&2
fi
cat "${paths[@]}" "$DATA"/agc/*.root >/dev/null  # the origin's files in the page cache

free_port() {
  $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_proxy CACHE [https]: a fresh proxy (new process, so a cold cache is cold in memory too),
# with the security options of the run; "https" adds XrdHttp on PROXY_HTTPS_PORT.
start_proxy() {
  stop_proxy
  local cache=$1 i port extra=("${PROXY_SEC[@]}" "${PROXY_EXTRA[@]}")
  # shellcheck disable=SC2206  # PROXY_WAN_PROXY_ARGS is a list of options, split on spaces
  extra+=(${PROXY_WAN_PROXY_ARGS:-})
  PROXY_PORT="$(free_port)"
  PROXY_HTTPS_PORT=""
  if [ "${2:-}" = https ]; then
    PROXY_HTTPS_PORT="$(free_port)"
    extra+=(--https "$PROXY_HTTPS_PORT" --cert "$TLS/server.pem" --key "$TLS/server.key")
  fi
  mkdir -p "$WORK/admin-$PROXY_PORT"
  env FERRY_TB_BIND_ADDR=127.0.0.1 LD_PRELOAD="$SHIM" timeout -k 5 3600 "$FERRY" proxy run \
    --origin "$ORIGIN_HOSTPORT" --port "$PROXY_PORT" --dir "$cache" --host 127.0.0.1 \
    --admin "$WORK/admin-$PROXY_PORT" --log "$WORK/admin-$PROXY_PORT/xrootd.log" \
    --max-size 50G "${extra[@]}" >"$WORK/admin-$PROXY_PORT/stdout.log" 2>&1 &
  PROXY_PID=$!
  for port in $PROXY_PORT $PROXY_HTTPS_PORT; do
    for ((i = 0; i < 200; i++)); do
      timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && continue 2
      sleep 0.1
    done
    echo "proxy_wan: the proxy did not open port $port" >&2
    tail -20 "$WORK/admin-$PROXY_PORT/xrootd.log" "$WORK/admin-$PROXY_PORT/stdout.log" >&2 || true
    exit 1
  done
}

# proxy_json CACHE: the proxy's counters (cache stats, access summary, status file) as JSON.
proxy_json() {
  [ -d "$1" ] && "$FERRY" cache stats --dir "$1" --json 2>/dev/null || echo "{}"
}

# client CMD...: an xroot client without a cache plug-in, with its sss key under --auth.
client() { env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$NOPLUG" "${CLIENT_ENV[@]}" "$@"; }

# run WORKLOAD SCENARIO ROUND PREFIX CACHE: one pass; appends a JSON line to RUNS.
run() {
  local workload=$1 scenario=$2 round=$3 prefix=$4 cache=$5
  local idle rx0 rx1 t0 t1 out rc=0 before="{}" after="{}" disk=0 cost0="{}" cost1="{}"
  idle="$(idle_pct)"
  [ "${scenario#proxy}" != "$scenario" ] && before="$(proxy_json "$cache")"
  # shellcheck disable=SC2086  # a list of PIDs
  [ -n "$SERVER_PIDS" ] && cost0="$("$PY" "$ROOT/bench/lib/proc_cost.py" $SERVER_PIDS)"
  rx0="$(rx_bytes)"
  t0=$(date +%s.%N)
  case "$workload" in
    replay)
      # Cold passes check every chunk against the files; warm ones (and the floor's) do not.
      out="$(client timeout 600 "$REPLAY" -t 4 $(case "$scenario" in *-warm | plain-local) ;;
        *) echo "-V $DATA" ;; esac) "$prefix" "${names[@]}")" || rc=$?
      ;;
    agc)
      local urls=()
      for n in "${agc_names[@]}"; do urls+=("$prefix/$n"); done
      out="$(client timeout 900 "$FERRY" analyze agc \
        "${urls[@]}" --threads 8 --json)" || rc=$?
      ;;
    xrdcp)
      local n bytes=0
      for n in "${names[@]:0:3}"; do
        client timeout 600 xrdcp -f "$prefix/$n" /dev/null >&2 || rc=$?
        bytes=$((bytes + $(stat -c %s "$DATA/$n")))
      done
      out="{\"bytes\": $bytes, \"files\": 3}"
      ;;
    multi)
      local pids=() k outs=()
      for ((k = 0; k < 8; k++)); do
        client timeout 600 "$REPLAY" -t 1 -s $((42 + k)) \
          "$prefix" "${names[$k]}" >"$WORK/multi-$k.json" &
        pids+=($!)
      done
      for k in "${pids[@]}"; do wait "$k" || rc=$?; done
      out="$($PY -c 'import json,sys
rs=[json.load(open(p)) for p in sys.argv[1:]]
print(json.dumps({"bytes": sum(r["bytes"] for r in rs), "vector_reads": sum(r["vector_reads"] for r in rs),
                  "processes": len(rs)}))' "$WORK"/multi-*.json)"
      ;;
    https-multi | https-single)
      out="$(timeout 1200 "$PY" "$ROOT/bench/proxy_wan_https.py" "${workload#https-}" "$prefix" \
        "$TLS/ca.pem" "$DATA" "${names[@]}")" || rc=$?
      ;;
  esac
  t1=$(date +%s.%N)
  rx1="$(rx_bytes)"
  # shellcheck disable=SC2086
  [ -n "$SERVER_PIDS" ] && cost1="$("$PY" "$ROOT/bench/lib/proc_cost.py" $SERVER_PIDS)"
  [ "${scenario#proxy}" != "$scenario" ] && sleep 1.2 && after="$(proxy_json "$cache")"
  [ -n "$cache" ] && [ -d "$cache" ] && disk="$(du -s -B1 "$cache" | awk '{print $1}')"
  ROOT="$ROOT" "$PY" - "$workload" "$scenario" "$round" "$rc" "$idle" "$rx0" "$rx1" "$t0" "$t1" "$disk" \
    "$out" "$before" "$after" "$cost0" "$cost1" <<'PY' >>"$RUNS"
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "bench", "lib"))
from proc_cost import pass_cpu_s
(workload, scenario, rnd, rc, idle, rx0, rx1, t0, t1, disk, out, before, after, c0,
 c1) = sys.argv[1:16]
c0, c1 = json.loads(c0), json.loads(c1)
cost = ({"cpu_s": round(pass_cpu_s(c0, c1), 4), "syscr": c1["syscr"] - c0["syscr"]}
        if c0 and c1 else None)
print(json.dumps({"workload": workload, "scenario": scenario, "round": int(rnd), "exit": int(rc),
                  "idle_pct": float(idle or 0), "wan_bytes": int(rx1) - int(rx0),
                  "process_s": float(t1) - float(t0), "disk_bytes": int(disk),
                  "result": json.loads(out) if out.strip() else {},
                  "server_cost": cost,
                  "proxy_before": json.loads(before), "proxy_after": json.loads(after)}))
PY
  echo "   $workload $scenario r$round: $(tail -1 "$RUNS" | cut -c1-150)" >&2
}

has_workload() { [[ ",$WORKLOADS," == *",$1,"* ]]; }

# Direct against the cold proxy, REPEAT rounds next to each other in alternating order, each with
# a fresh cache and proxy; the replay's, agc's and HTTPS's warm passes follow each cold one.
for workload in "${workloads[@]}"; do
  case "$workload" in multi-warm | agc-local) continue ;; esac
  echo "== $workload: direct and ferry proxy, $REPEAT rounds${AUTH:+, auth $AUTH}" >&2
  for ((k = 1; k <= REPEAT; k++)); do
    cache="$WORK/proxy-$workload-$k"
    if [ "${workload#https-}" != "$workload" ]; then
      start_proxy "$cache" https
      P="https://127.0.0.1:$PROXY_HTTPS_PORT/"
      D="$ORIGIN_HTTPS"
    else
      start_proxy "$cache"
      P="root://127.0.0.1:$PROXY_PORT/"
      D="$ORIGIN"
    fi
    if ((k % 2 == 1)); then
      SERVER_PIDS="" run "$workload" direct "$k" "$D" ""
      SERVER_PIDS="$PROXY_PID" run "$workload" proxy-cold "$k" "$P" "$cache"
    else
      SERVER_PIDS="$PROXY_PID" run "$workload" proxy-cold "$k" "$P" "$cache"
      SERVER_PIDS="" run "$workload" direct "$k" "$D" ""
    fi
    case "$workload" in
      multi | xrdcp) ;;  # their warm passes: multi-warm, and the xrdcp warm phase below
      replay)
        PLAIN="$(bash "$TB/origin.sh" start --dir "$DATA" --name fpx-plain)"
        for ((w = 1; w <= WARM_PER_ROUND; w++)); do
          if (((k + w) % 2 == 0)); then
            SERVER_PIDS="$(plain_pid)" run replay plain-local "$k" "$PLAIN" ""
            SERVER_PIDS="$PROXY_PID" run replay proxy-warm "$k" "$P" "$cache"
          else
            SERVER_PIDS="$PROXY_PID" run replay proxy-warm "$k" "$P" "$cache"
            SERVER_PIDS="$(plain_pid)" run replay plain-local "$k" "$PLAIN" ""
          fi
        done
        ;;
      *)
        for ((w = 1; w <= WARM_PER_ROUND; w++)); do
          SERVER_PIDS="$PROXY_PID" run "$workload" proxy-warm "$k" "$P" "$cache"
        done
        ;;
    esac
    stop_proxy
    [ "$k" -lt "$REPEAT" ] && rm -rf "$cache"
  done
  "$FERRY" cache verify --dir "$WORK/proxy-$workload-$REPEAT" >&2
done

# Warm copies: a proxy whose cache holds the files whole (a copy through the default proxy keeps
# only copy_cache_fraction of them) against a plain xrootd serving them from local disk.
if has_workload xrdcp; then
  echo "== xrdcp warm: ferry proxy (--copy-cache-fraction 1) and a plain xrootd, $WARM passes" >&2
  PLAIN="$(bash "$TB/origin.sh" start --dir "$DATA" --name fpx-plain)"
  cache="$WORK/proxy-xrdcp-warm"
  PROXY_EXTRA=(--copy-cache-fraction 1)
  start_proxy "$cache"
  PROXY_EXTRA=()
  P="root://127.0.0.1:$PROXY_PORT/"
  SERVER_PIDS="$PROXY_PID" run xrdcp proxy-fill 0 "$P" "$cache"
  for ((w = 1; w <= WARM; w++)); do
    if ((w % 2 == 1)); then
      SERVER_PIDS="$(plain_pid)" run xrdcp plain-local "$w" "$PLAIN" ""
      SERVER_PIDS="$PROXY_PID" run xrdcp proxy-warm "$w" "$P" "$cache"
    else
      SERVER_PIDS="$PROXY_PID" run xrdcp proxy-warm "$w" "$P" "$cache"
      SERVER_PIDS="$(plain_pid)" run xrdcp plain-local "$w" "$PLAIN" ""
    fi
  done
  stop_proxy
  bash "$TB/origin.sh" stop --name fpx-plain >&2
fi

# 8 replay processes at once against a warm proxy (XCache's: below).
if has_workload multi-warm; then
  echo "== multi-warm: ferry proxy, 1 filling pass and $WARM warm passes" >&2
  cache="$WORK/proxy-multi-warm"
  start_proxy "$cache"
  P="root://127.0.0.1:$PROXY_PORT/"
  SERVER_PIDS="$PROXY_PID" run multi proxy-fill 0 "$P" "$cache"
  for ((w = 1; w <= WARM; w++)); do
    SERVER_PIDS="$PROXY_PID" run multi proxy-warm "$w" "$P" "$cache"
  done
  stop_proxy
fi

# The limit of a cache on the same host: AGC reading the files from local disk (page cache warm).
if has_workload agc-local; then
  echo "== agc-local: the AGC pass over the local files, $WARM passes" >&2
  for ((w = 1; w <= WARM; w++)); do
    SERVER_PIDS="" run agc local "$w" "$DATA" ""
  done
fi

if [ -n "$AUTH" ]; then
  echo "== XCache skipped with --auth (the test bed's XCache has no origin credentials)" >&2
elif [ "${PROXY_WAN_SKIP_XCACHE:-0}" != 1 ]; then
  for profile in default tuned; do
    for workload in replay agc multi-warm; do
      has_workload "$workload" || continue
      w_name="${workload%-warm}"
      echo "== XCache $profile: $w_name, 1 cold and $WARM warm passes" >&2
      xc="$WORK/xcache-$profile-$workload"
      XC_URL="$(bash "$TB/xcache.sh" start "$profile" --origin "$ORIGIN_HOSTPORT" \
        --cache-dir "$xc" --name fpx-xc)"
      SERVER_PIDS="$(xcache_pid)" run "$w_name" "xcache-$profile-cold" 0 "${XC_URL%/}/" "$xc"
      for ((w = 1; w <= WARM; w++)); do
        SERVER_PIDS="$(xcache_pid)" run "$w_name" "xcache-$profile-warm" "$w" "${XC_URL%/}/" "$xc"
      done
      bash "$TB/xcache.sh" stop --name fpx-xc >&2
      rm -rf "$xc"
    done
  done
fi

baseline=""
[ -n "$AUTH" ] && [ -f "$BASELINE" ] && baseline="$BASELINE"
config="$("$PY" - "$RTT" "$RATE" "$REPEAT" "${#agc_names[@]}" "$AGC_EVENTS" "${AUTH:-none}" \
  "$HTTPS" "$WORKLOADS" "$(uptime | sed 's/.*load average: //')" "$baseline" <<'PY'
import json, sys
(rtt, rate, repeat, files, events, auth, https, workloads, load, baseline) = sys.argv[1:11]
print(json.dumps({"rtt": rtt, "rate": rate, "repeat": int(repeat), "agc_files": int(files),
                  "agc_events": int(events), "auth": auth, "https": https == "1",
                  "workloads": workloads, "load": load, "baseline": baseline}))
PY
)"
"$PY" "$ROOT/bench/proxy_wan_report.py" "$RUNS" "$OUT" "$config"
