#!/usr/bin/env bash
# bench/encrypted_cache: warm passes through an encrypted ferry client cache against the same
# passes through a plain one, and through a site proxy run with --encrypt-key against the same
# proxy without it (issue 42: encrypted warm at most 1.05x plain), in one invocation.
#
# Setup: a plain xrootd origin on 127.0.0.1 (scripts/testbed/origin.sh; warm passes never
# reach it, so no WAN is emulated) serving two data sets, and two caches filled through the
# real XrdCl plug-in from it, one plain and one with cache_key_file (a 32-byte key, mode 0600);
# and two `ferry proxy run` in front of the same origin on 127.0.0.1 (the test bed's bind
# shim), each with its own cache, one of them with `--encrypt-key` (the same key file), both
# with `--set replica=off` as the client caches, read by clients without a plug-in:
#   replay  ENC_FILES x ENC_SIZE (8 x 200M) of pseudo-random data, read with the sparse,
#           ROOT-like pattern of bench/cache_wan.sh (bench/cache_wan_replay.cc: ~6% of each
#           file in chunks of 2-16 KiB, vector reads of 64 chunks, 4 threads);
#   agc     `ferry analyze agc` over a generated NanoAOD-like set (ferry gen, zlib-1,
#           ENC_AGC_EVENTS in ENC_AGC_FILES files; ENC_AGC_EVENTS=0 skips it).
# Each workload fills every cache (cold, each chunk compared with the origin's file), runs
# untimed passes through each until one is all hits (they store what the fill dropped), then
# runs warm passes in rounds,
# each kind once per round (plain, encrypted, proxy-plain, proxy-encrypted; agc: replica and
# replica-encrypted too)
# ENC_REPEAT times (default 7), each in a new client process; the order within a round
# alternates. Ratios are medians of the per-round ratios (encrypted / plain of the same round),
# beside the ratio of the medians.
# Measured per pass: wall time (the replay's own; agc: the process's), CPU seconds of the
# reading process (user + sys), for a proxy pass also those of the proxy's processes (xrootd
# and its supervisor: bench/lib/proc_cost.py, read before and after), bytes served, and the
# cache's counters (hits, crc_failures, origin_requests: a warm pass must add no origin request
# and no failure). Then
# bin/page_seal_bench: the per-page check itself (CRC32C against the AES-GCM open, and the bare
# libcrypto cipher) on one core, and `openssl speed -evp aes-256-gcm` (the machine's ceiling);
# with AGC data, bin/replica_read_bench on its first file: a warm read of a replica's extents
# through the cache's read path, plain against sealed, CPU per byte.
#
# Output: a table on stdout (targets with PASS/FAIL); JSON and a PNG in
# $FERRY_BENCH_OUT/encrypted_cache. Needs root (xrootd runs with -R); exits 77 without it.
# Env: FERRY_BUILD_DIR, ENC_DATA (default /tmp/ferry-encrypted-cache-data, kept for the next
# run), ENC_REPEAT (7), ENC_FILES (8), ENC_SIZE (200M), ENC_THREADS (4), ENC_AGC_EVENTS
# (400000), ENC_AGC_FILES (4), ENC_SKIP_SPEED=1 (no openssl speed), ENC_PROXY=0 (no proxy pair),
# ENC_SETTLE (6: the most untimed passes per cache), ENC_PERF=1 (after the warm rounds, one more
# pass of each kind under `perf record`: the reading process, or a proxy's xrootd; where the
# CPU went, by library and by symbol, in $OUT/perf-WORKLOAD-KIND.{dso,sym}.txt).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib/wan.sh
. "$ROOT/bench/lib/wan.sh"  # BUILD TB FERRY PY, wan_require, wan_workdir, idle_pct
OUT="${FERRY_BENCH_OUT:-$ROOT/out/bench}/encrypted_cache"
DATA="${ENC_DATA:-/tmp/ferry-encrypted-cache-data}"
REPEAT="${ENC_REPEAT:-7}"
NFILES="${ENC_FILES:-8}"
SIZE="${ENC_SIZE:-200M}"
THREADS="${ENC_THREADS:-4}"
AGC_EVENTS="${ENC_AGC_EVENTS:-400000}"
AGC_FILES="${ENC_AGC_FILES:-4}"
REPLAY="$BUILD/bin/cache_wan_replay"
SEALBENCH="$BUILD/bin/page_seal_bench"
RRBENCH="$BUILD/bin/replica_read_bench"
PLUGIN="$BUILD/lib/libXrdClFerry-5.so"
PROXY_LIB="$BUILD/lib/libXrdFerryProxy-5.so"
SHIM="$BUILD/lib/libferry_tb_bindshim.so"
WAN=fenc  # the origin's name in the test bed's state dir (no namespace: 127.0.0.1)
PROXY="${ENC_PROXY:-1}"

need=("$FERRY" "$REPLAY" "$SEALBENCH" "$RRBENCH" "$PLUGIN")
[ "$PROXY" = 1 ] && need+=("$PROXY_LIB" "$SHIM")
for f in "${need[@]}"; do
  [ -e "$f" ] || { echo "encrypted_cache: $f missing (build ferry, XrdClFerry, XrdFerryProxy, ferry_tb_bindshim, cache_wan_replay, page_seal_bench, replica_read_bench)" >&2; exit 1; }
done
wan_require encrypted_cache
# The proxies, stopped by wan_cleanup on exit (before the origin).
declare -A PROXY_PID=() PROXY_PORT=()
stop_servers() {
  local k
  for k in "${!PROXY_PID[@]}"; do
    # `timeout` runs `ferry proxy run` as its child: TERM goes to both; bounded wait, then KILL.
    kill -TERM "${PROXY_PID[$k]}" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "${PROXY_PID[$k]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "${PROXY_PID[$k]}" 2>/dev/null || true
    wait "${PROXY_PID[$k]}" 2>/dev/null || true
  done
  PROXY_PID=()
}
wan_workdir /tmp/fenc-bench.XXXXXX  # OUT WORK FERRY_TB_DIR RUNS NOPLUG; wan_cleanup on exit
rm -f "$OUT"/perf-*.txt  # an earlier run's profiles (ENC_PERF)

load1() { cut -d' ' -f1 /proc/loadavg; }
LOAD_BEFORE="$(uptime)"
echo "== $LOAD_BEFORE" >&2

# ---- data ----
names=()
for ((i = 0; i < NFILES; i++)); do names+=("$(printf 'replay/f%02d.bin' "$i")"); done
mkdir -p "$DATA/replay"
chmod a+rx "$DATA" "$DATA/replay"
paths=()
for n in "${names[@]}"; do paths+=("$DATA/$n"); done
echo "== replay data: $NFILES x $SIZE in $DATA/replay" >&2
bash "$TB/gendata.sh" --keep "$SIZE" "${paths[@]}" >&2
chmod a+r "${paths[@]}"
agc_names=()
if [ "$AGC_EVENTS" -gt 0 ]; then
  agc_dir="$DATA/agc"
  stamp="events=$AGC_EVENTS files=$AGC_FILES codec=zlib:1 seed=5 mode=object"
  if [ ! -f "$agc_dir/.params" ] || [ "$(cat "$agc_dir/.params")" != "$stamp" ]; then
    echo "== agc data: generating $AGC_EVENTS events in $AGC_FILES files" >&2
    rm -rf "$agc_dir"
    "$FERRY" gen nanoaod --events "$AGC_EVENTS" --files "$AGC_FILES" --codec zlib:1 --seed 5 \
      --mode object --out "$agc_dir" --json >"$WORK/gen.json"
    echo "$stamp" >"$agc_dir/.params"
  fi
  chmod -R a+rX "$agc_dir"
  while IFS= read -r f; do agc_names+=("agc/$(basename "$f")"); done \
    < <(find "$agc_dir" -maxdepth 1 -name '*.root' | sort)
  echo "== agc data: ${#agc_names[@]} files, $(du -sh "$agc_dir" | cut -f1) in $agc_dir" >&2
fi

ORIGIN="$(bash "$TB/origin.sh" start --dir "$DATA" --name "$WAN")"
ORIGIN="${ORIGIN%/}"
echo "== origin $ORIGIN" >&2
cat "${paths[@]}" >/dev/null  # the origin's files in the page cache: both caches fill alike

# ---- two caches, one plug-in ----
KEY="$WORK/master.key"
head -c 32 /dev/urandom >"$KEY"
chmod 600 "$KEY"
# conf KIND: the XrdCl plug-in conf dir of cache KIND, its cache in $WORK/cache-KIND:
#   plain      no key, replica = off: the same byte tier as the encrypted cache, unencrypted
#   encrypted  cache_key_file, replica = off: the byte tier, encrypted (its sealed replica is
#              not measured here)
#   replica    no key, replica = auto (the default: what an unencrypted cache serves AGC from)
#   replica-encrypted  cache_key_file, replica = auto: AGC from a sealed replica
conf() {
  local d="$WORK/conf-$1"
  mkdir -p "$d"
  printf 'url = root://*\nlib = %s\nenable = true\ndir = %s\n' "$PLUGIN" "$WORK/cache-$1" \
    >"$d/ferry.conf"
  case "$1" in
    plain) echo "replica = off" >>"$d/ferry.conf" ;;
    encrypted) printf 'cache_key_file = %s\nreplica = off\n' "$KEY" >>"$d/ferry.conf" ;;
    replica-encrypted) printf 'cache_key_file = %s\n' "$KEY" >>"$d/ferry.conf" ;;
  esac
}
conf plain
conf encrypted
conf replica
conf replica-encrypted

# start_proxy KIND [OPTION...]: `ferry proxy run` in front of the origin, its cache in
# $WORK/cache-KIND (proxy-plain, proxy-encrypted), listening on 127.0.0.1 only.
start_proxy() {
  local kind=$1 port admin i
  shift
  port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  admin="$WORK/admin-$kind"
  mkdir -p "$admin"
  env FERRY_TB_BIND_ADDR=127.0.0.1 LD_PRELOAD="$SHIM" timeout -k 5 7200 "$FERRY" proxy run \
    --origin "${ORIGIN#root://}" --port "$port" --dir "$WORK/cache-$kind" --host 127.0.0.1 \
    --admin "$admin" --log "$admin/xrootd.log" --max-size 50G --set replica=off "$@" \
    >"$admin/stdout.log" 2>&1 &
  PROXY_PID[$kind]=$!
  PROXY_PORT[$kind]=$port
  for ((i = 0; i < 200; i++)); do
    timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "encrypted_cache: the $kind proxy did not open port $port" >&2
  tail -20 "$admin/xrootd.log" "$admin/stdout.log" >&2 || true
  exit 1
}
if [ "$PROXY" = 1 ]; then
  start_proxy proxy-plain
  start_proxy proxy-encrypted --encrypt-key "$KEY"
  echo "== proxies: plain 127.0.0.1:${PROXY_PORT[proxy-plain]}, encrypted 127.0.0.1:${PROXY_PORT[proxy-encrypted]}" >&2
fi

# xrootd_of PID: the xrootd process under PID (a proxy's `timeout`, `ferry proxy run`).
xrootd_of() {
  local p c
  for p in $(pgrep -P "$1"); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = xrootd ] && { echo "$p"; return 0; }
    c="$(xrootd_of "$p")" && { echo "$c"; return 0; }
  done
  return 1
}

# run WORKLOAD KIND PASS ROUND: one pass of WORKLOAD (replay | agc) through cache KIND (a
# client cache's plug-in conf, or a proxy: KIND proxy-*); PASS cold (verifies the bytes), warm,
# or perf (recorded into PERF_OUT). Appends a JSON line to RUNS.
run() {
  local workload=$1 kind=$2 pass=$3 round=$4 idle load t0 t1 out rc=0 vargs=() pre=()
  local cache="$WORK/cache-$kind" stats0 stats1 tfile="$WORK/time.out"
  local confdir="$WORK/conf-$kind" prefix="$ORIGIN/" cost0="{}" cost1="{}" perf_pid=""
  if [ "${kind#proxy-}" != "$kind" ]; then
    confdir="$NOPLUG"
    prefix="root://127.0.0.1:${PROXY_PORT[$kind]}/"
    if [ "$pass" = perf ]; then
      perf record -q -o "$PERF_OUT" -p "$(xrootd_of "${PROXY_PID[$kind]}")" 2>/dev/null &
      perf_pid=$!
      sleep 1  # perf attaches
    fi
  elif [ "$pass" = perf ]; then
    pre=(perf record -q -o "$PERF_OUT" --)
  fi
  idle="$(idle_pct)"
  load="$(load1)"
  stats0="$("$FERRY" cache stats --dir "$cache" --json 2>/dev/null || echo '{}')"
  [ -z "${PROXY_PID[$kind]:-}" ] || cost0="$("$PY" "$ROOT/bench/lib/proc_cost.py" "${PROXY_PID[$kind]}")"
  t0=$(date +%s.%N)
  if [ "$workload" = replay ]; then
    [ "$pass" = cold ] && vargs=(-V "$DATA")
    out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$confdir" timeout 600 "${pre[@]}" "$REPLAY" \
      -t "$THREADS" "${vargs[@]}" "$prefix" "${names[@]}")" || rc=$?
    echo "{}" >"$tfile"
  else
    local urls=()
    for n in "${agc_names[@]}"; do urls+=("$prefix/$n"); done
    # CPU of the process and its threads: GNU time's user + sys.
    out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$confdir" timeout 600 \
      /usr/bin/time -f '{"user_s": %U, "sys_s": %S}' -o "$tfile" \
      "${pre[@]}" "$FERRY" analyze agc "${urls[@]}" --json)" || rc=$?
  fi
  t1=$(date +%s.%N)
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
  fi
  [ -z "${PROXY_PID[$kind]:-}" ] || cost1="$("$PY" "$ROOT/bench/lib/proc_cost.py" "${PROXY_PID[$kind]}")"
  # A proxy writes its counters every second (a client cache when its process ends).
  [ -z "${PROXY_PID[$kind]:-}" ] || sleep 1.2
  stats1="$("$FERRY" cache stats --dir "$cache" --json 2>/dev/null || echo '{}')"
  "$PY" - "$workload" "$kind" "$pass" "$round" "$rc" "$idle" "$load" "$t0" "$t1" "$out" \
    "$stats0" "$stats1" "$(cat "$tfile")" "$cost0" "$cost1" <<'PY' >>"$RUNS"
import json, sys
(workload, kind, pazz, rnd, rc, idle, load, t0, t1, out, s0, s1, tm, c0, c1) = sys.argv[1:16]
r = json.loads(out) if out.strip().startswith("{") else {}
s0, s1, tm = json.loads(s0), json.loads(s1), json.loads(tm or "{}")
c0, c1 = json.loads(c0), json.loads(c1)
# The proxy's processes (xrootd and `ferry proxy run`); null for a client cache.
server_cpu = c1["cpu_s"] - c0["cpu_s"] if "cpu_s" in c1 and "cpu_s" in c0 else None
delta = {k: s1[k] - s0.get(k, 0) for k in ("hits", "misses", "crc_failures", "origin_requests",
                                             "bytes_from_origin", "bytes_from_cache",
                                             "writes_dropped", "replica_faults",
                                             "bytes_from_replica")
         if isinstance(s1.get(k), (int, float))}
process_s = float(t1) - float(t0)
if workload == "replay":
    wall, cpu, nbytes = r.get("wall_s"), r.get("cpu_s"), r.get("bytes")
else:
    wall, cpu = process_s, tm.get("user_s", 0) + tm.get("sys_s", 0)
    nbytes = (delta.get("bytes_from_cache", 0) + delta.get("bytes_from_origin", 0)
              + delta.get("bytes_from_replica", 0))
print(json.dumps({"workload": workload, "kind": kind, "pass": pazz, "round": int(rnd),
                  "exit": int(rc), "idle_pct": float(idle or 0), "load1": float(load),
                  "wall_s": wall, "cpu_s": cpu, "server_cpu_s": server_cpu, "bytes": nbytes,
                  "process_s": process_s,
                  "cache": delta, "out": r if workload == "replay" else {}}))
PY
  echo "   $workload $kind $pass $round: $(tail -1 "$RUNS" | cut -c1-200)" >&2
}

workloads=(replay)
[ "${#agc_names[@]}" -gt 0 ] && workloads+=(agc)
for w in "${workloads[@]}"; do
  kinds=(plain encrypted)
  [ "$PROXY" = 1 ] && kinds+=(proxy-plain proxy-encrypted)
  # The replica tier builds only from ROOT files: two more caches for AGC alone.
  [ "$w" = agc ] && kinds+=(replica replica-encrypted)
  echo "== $w: fill the caches (${kinds[*]})" >&2
  for c in "${kinds[@]}"; do run "$w" "$c" cold 0; done
  if [ "$w" = agc ]; then
    # The replica passes serve from replicas: built here (the conf names the key of the sealed
    # one), not left to the background builder.
    for c in replica replica-encrypted; do
      "$FERRY" cache replica build --conf-dir "$WORK/conf-$c" >/dev/null 2>&1 || true
    done
  fi
  # Passes before the timed ones: what a fill left unstored (write-behind drops when it falls
  # behind: writes_dropped; sealing is the slower write, and a loaded machine drops more) is
  # fetched and stored, until a pass asks the origin nothing and drops nothing (at most
  # ENC_SETTLE passes, default 6), so that every timed pass is all hits.
  for c in "${kinds[@]}"; do
    for ((k = 1; k <= ${ENC_SETTLE:-6}; k++)); do
      run "$w" "$c" settle 0
      tail -1 "$RUNS" | "$PY" -c 'import json, sys
c = json.loads(sys.stdin.read())["cache"]
sys.exit(0 if c.get("origin_requests", 1) == 0 and c.get("writes_dropped", 1) == 0 else 1)' && break
    done
  done
  echo "== $w: $REPEAT warm rounds, alternating" >&2
  for ((k = 1; k <= REPEAT; k++)); do
    order=("${kinds[@]}")
    if ((k % 2 == 0)); then order=(); for ((j = ${#kinds[@]} - 1; j >= 0; j--)); do order+=("${kinds[j]}"); done; fi
    for c in "${order[@]}"; do run "$w" "$c" warm "$k"; done
  done
  if [ "${ENC_PERF:-0}" = 1 ]; then
    for c in "${kinds[@]}"; do
      PERF_OUT="$WORK/perf.data" run "$w" "$c" perf 0
      perf report -i "$WORK/perf.data" --sort dso --stdio 2>/dev/null | grep -v '^#' \
        | grep -v '^$' | head -12 >"$OUT/perf-$w-$c.dso.txt" || true
      perf report -i "$WORK/perf.data" --sort dso,sym --stdio 2>/dev/null | grep -v '^#' \
        | grep -v '^$' | head -30 >"$OUT/perf-$w-$c.sym.txt" || true
      rm -f "$WORK/perf.data"
    done
  fi
done
"$FERRY" cache verify --dir "$WORK/cache-plain" >&2
disk_plain="$(du -s -B1 "$WORK/cache-plain" | awk '{print $1}')"
disk_enc="$(du -s -B1 "$WORK/cache-encrypted" | awk '{print $1}')"
[ "$PROXY" = 1 ] && "$FERRY" cache verify --dir "$WORK/cache-proxy-plain" >&2

echo "== page_seal_bench (one core)" >&2
"$SEALBENCH" >"$WORK/seal.json"
echo "{}" >"$WORK/replica_read.json"
if [ "${#agc_names[@]}" -gt 0 ]; then
  echo "== replica_read_bench ($DATA/${agc_names[0]})" >&2
  "$RRBENCH" "$DATA/${agc_names[0]}" -r 7 -n 3 >"$WORK/replica_read.json" ||
    echo "{}" >"$WORK/replica_read.json"
fi
: >"$WORK/speed.txt"
if [ "${ENC_SKIP_SPEED:-0}" != 1 ]; then
  echo "== openssl speed -evp aes-256-gcm" >&2
  openssl speed -seconds 1 -bytes 4096 -evp aes-256-gcm 2>/dev/null | tail -1 >>"$WORK/speed.txt" || true
  openssl speed -seconds 1 -bytes 65536 -evp aes-256-gcm 2>/dev/null | tail -1 >>"$WORK/speed.txt" || true
fi
LOAD_AFTER="$(uptime)"
echo "== $LOAD_AFTER" >&2

"$PY" "$ROOT/bench/encrypted_cache_report.py" "$RUNS" "$OUT" "$("$PY" - "$NFILES" "$SIZE" \
  "$THREADS" "$REPEAT" "$AGC_EVENTS" "${#agc_names[@]}" "$LOAD_BEFORE" "$LOAD_AFTER" \
  "$disk_plain" "$disk_enc" "$WORK/seal.json" "$WORK/speed.txt" "$WORK/replica_read.json" <<'PY'
import json, sys
a = sys.argv[1:]
speed = [l.split() for l in open(a[11]) if l.strip()]
print(json.dumps({"files": int(a[0]), "size": a[1], "threads": int(a[2]), "repeat": int(a[3]),
                  "agc_events": int(a[4]), "agc_files": int(a[5]), "uptime_before": a[6].strip(),
                  "uptime_after": a[7].strip(), "disk_plain": int(a[8]),
                  "disk_encrypted": int(a[9]), "page_seal_bench": json.load(open(a[10])),
                  "openssl_speed": [{"line": " ".join(s)} for s in speed],
                  "replica_read_bench": json.load(open(a[12]))}))
PY
)"
