#!/usr/bin/env bash
# bench/encrypted_cache: warm passes through an encrypted ferry client cache against the same
# passes through a plain one (issue 42: encrypted warm at most 1.05x plain), in one invocation.
#
# Setup: a plain xrootd origin on 127.0.0.1 (scripts/testbed/origin.sh; warm passes never
# reach it, so no WAN is emulated) serving two data sets, and two caches filled through the
# real XrdCl plug-in from it, one plain and one with cache_key_file (a 32-byte key, mode 0600):
#   replay  ENC_FILES x ENC_SIZE (8 x 200M) of pseudo-random data, read with the sparse,
#           ROOT-like pattern of bench/cache_wan.sh (bench/cache_wan_replay.cc: ~6% of each
#           file in chunks of 2-16 KiB, vector reads of 64 chunks, 4 threads);
#   agc     `ferry analyze agc` over a generated NanoAOD-like set (ferry gen, zlib-1,
#           ENC_AGC_EVENTS in ENC_AGC_FILES files; ENC_AGC_EVENTS=0 skips it).
# Each workload fills both caches (cold, each chunk compared with the origin's file), runs one
# untimed pass through each (it stores what the fill dropped), then runs warm passes alternately, plain and encrypted ENC_REPEAT times each (default 7), each in a new
# process; the order within a round alternates. Ratios are medians of the per-round ratios
# (encrypted / plain of the same round), beside the ratio of the medians.
# Measured per pass: wall time (the replay's own; agc: the process's), CPU seconds of the
# reading process (user + sys), bytes served, and the cache's counters (hits, crc_failures,
# origin_requests: a warm pass must add no origin request and no failure). Then
# bin/page_seal_bench: the per-page check itself (CRC32C against the AES-GCM open, and the bare
# libcrypto cipher) on one core, and `openssl speed -evp aes-256-gcm` (the machine's ceiling).
#
# Output: a table on stdout (targets with PASS/FAIL); JSON and a PNG in
# $FERRY_BENCH_OUT/encrypted_cache. Needs root (xrootd runs with -R); exits 77 without it.
# Env: FERRY_BUILD_DIR, ENC_DATA (default /tmp/ferry-encrypted-cache-data, kept for the next
# run), ENC_REPEAT (7), ENC_FILES (8), ENC_SIZE (200M), ENC_THREADS (4), ENC_AGC_EVENTS
# (400000), ENC_AGC_FILES (4), ENC_SKIP_SPEED=1 (no openssl speed).
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
PLUGIN="$BUILD/lib/libXrdClFerry-5.so"
WAN=fenc  # the origin's name in the test bed's state dir (no namespace: 127.0.0.1)

for f in "$FERRY" "$REPLAY" "$SEALBENCH" "$PLUGIN"; do
  [ -e "$f" ] || { echo "encrypted_cache: $f missing (build ferry, XrdClFerry, cache_wan_replay, page_seal_bench)" >&2; exit 1; }
done
wan_require encrypted_cache
wan_workdir /tmp/fenc-bench.XXXXXX  # OUT WORK FERRY_TB_DIR RUNS NOPLUG; wan_cleanup on exit

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
conf() {
  local d="$WORK/conf-$1"
  mkdir -p "$d"
  printf 'url = root://*\nlib = %s\nenable = true\ndir = %s\n' "$PLUGIN" "$WORK/cache-$1" \
    >"$d/ferry.conf"
  case "$1" in
    plain) echo "replica = off" >>"$d/ferry.conf" ;;
    encrypted) printf 'cache_key_file = %s\nreplica = off\n' "$KEY" >>"$d/ferry.conf" ;;
  esac
}
conf plain
conf encrypted
conf replica

# run WORKLOAD KIND PASS ROUND: one pass of WORKLOAD (replay | agc) through cache KIND; PASS
# cold (verifies the bytes) or warm. Appends a JSON line to RUNS.
run() {
  local workload=$1 kind=$2 pass=$3 round=$4 idle load t0 t1 out rc=0 vargs=()
  local cpu0 cpu1 cache="$WORK/cache-$kind" stats0 stats1 tfile="$WORK/time.out"
  idle="$(idle_pct)"
  load="$(load1)"
  stats0="$("$FERRY" cache stats --dir "$cache" --json 2>/dev/null || echo '{}')"
  t0=$(date +%s.%N)
  if [ "$workload" = replay ]; then
    [ "$pass" = cold ] && vargs=(-V "$DATA")
    out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$WORK/conf-$kind" timeout 600 "$REPLAY" \
      -t "$THREADS" "${vargs[@]}" "$ORIGIN/" "${names[@]}")" || rc=$?
    echo "{}" >"$tfile"
  else
    local urls=()
    for n in "${agc_names[@]}"; do urls+=("$ORIGIN//$n"); done
    # CPU of the process and its threads: GNU time's user + sys.
    out="$(env -u XRD_PLUGIN XRD_PLUGINCONFDIR="$WORK/conf-$kind" timeout 600 \
      /usr/bin/time -f '{"user_s": %U, "sys_s": %S}' -o "$tfile" \
      "$FERRY" analyze agc "${urls[@]}" --json)" || rc=$?
  fi
  t1=$(date +%s.%N)
  stats1="$("$FERRY" cache stats --dir "$cache" --json 2>/dev/null || echo '{}')"
  "$PY" - "$workload" "$kind" "$pass" "$round" "$rc" "$idle" "$load" "$t0" "$t1" "$out" \
    "$stats0" "$stats1" "$(cat "$tfile")" <<'PY' >>"$RUNS"
import json, sys
(workload, kind, pazz, rnd, rc, idle, load, t0, t1, out, s0, s1, tm) = sys.argv[1:14]
r = json.loads(out) if out.strip().startswith("{") else {}
s0, s1, tm = json.loads(s0), json.loads(s1), json.loads(tm or "{}")
delta = {k: s1[k] - s0.get(k, 0) for k in ("hits", "misses", "crc_failures", "origin_requests",
                                             "bytes_from_origin", "bytes_from_cache",
                                             "writes_dropped")
         if isinstance(s1.get(k), (int, float))}
process_s = float(t1) - float(t0)
if workload == "replay":
    wall, cpu, nbytes = r.get("wall_s"), r.get("cpu_s"), r.get("bytes")
else:
    wall, cpu = process_s, tm.get("user_s", 0) + tm.get("sys_s", 0)
    nbytes = delta.get("bytes_from_cache", 0) + delta.get("bytes_from_origin", 0)
print(json.dumps({"workload": workload, "kind": kind, "pass": pazz, "round": int(rnd),
                  "exit": int(rc), "idle_pct": float(idle or 0), "load1": float(load),
                  "wall_s": wall, "cpu_s": cpu, "bytes": nbytes, "process_s": process_s,
                  "cache": delta, "out": r if workload == "replay" else {}}))
PY
  echo "   $workload $kind $pass $round: $(tail -1 "$RUNS" | cut -c1-200)" >&2
}

workloads=(replay)
[ "${#agc_names[@]}" -gt 0 ] && workloads+=(agc)
for w in "${workloads[@]}"; do
  kinds=(plain encrypted)
  # The replica tier builds only from ROOT files: a third cache for AGC alone.
  [ "$w" = agc ] && kinds+=(replica)
  echo "== $w: fill the caches (${kinds[*]})" >&2
  for c in "${kinds[@]}"; do run "$w" "$c" cold 0; done
  if [ "$w" = agc ]; then
    # The replica pass serves from replicas: wait until the background builder made them.
    "$FERRY" cache replica build --dir "$WORK/cache-replica" >/dev/null 2>&1 || true
  fi
  # One pass each before the timed ones: what a fill left unstored (write-behind drops when it
  # falls behind: writes_dropped) is fetched and stored, so that every timed pass is all hits.
  for c in "${kinds[@]}"; do run "$w" "$c" settle 0; done
  echo "== $w: $REPEAT warm rounds, alternating" >&2
  for ((k = 1; k <= REPEAT; k++)); do
    order=("${kinds[@]}")
    if ((k % 2 == 0)); then order=(); for ((j = ${#kinds[@]} - 1; j >= 0; j--)); do order+=("${kinds[j]}"); done; fi
    for c in "${order[@]}"; do run "$w" "$c" warm "$k"; done
  done
done
"$FERRY" cache verify --dir "$WORK/cache-plain" >&2
disk_plain="$(du -s -B1 "$WORK/cache-plain" | awk '{print $1}')"
disk_enc="$(du -s -B1 "$WORK/cache-encrypted" | awk '{print $1}')"

echo "== page_seal_bench (one core)" >&2
"$SEALBENCH" >"$WORK/seal.json"
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
  "$disk_plain" "$disk_enc" "$WORK/seal.json" "$WORK/speed.txt" <<'PY'
import json, sys
a = sys.argv[1:]
speed = [l.split() for l in open(a[11]) if l.strip()]
print(json.dumps({"files": int(a[0]), "size": a[1], "threads": int(a[2]), "repeat": int(a[3]),
                  "agc_events": int(a[4]), "agc_files": int(a[5]), "uptime_before": a[6].strip(),
                  "uptime_after": a[7].strip(), "disk_plain": int(a[8]),
                  "disk_encrypted": int(a[9]), "page_seal_bench": json.load(open(a[10])),
                  "openssl_speed": [{"line": " ".join(s)} for s in speed]}))
PY
)"
