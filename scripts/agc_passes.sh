#!/usr/bin/env bash
# agc_passes.sh: the measurement behind `make demo` and bench/agc_passes — the AGC ttbar
# analysis (`ferry analyze agc`) over a generated NanoAOD-like dataset served by a real xrootd
# origin, pass after pass:
#
#   local   the files read from the local disk (the limit a cache can approach)
#   direct  root:// from the origin, no cache
#   cold    root:// through the ferry cache, empty (it fills)      [when ferry cache exists]
#   warm    root:// through the ferry cache, filled                 [when ferry cache exists]
#   shared1 warm, the same cache made a group cache: each file's first open asks the origin
#   shared  warm in the group cache once every file is confirmed (issue 30: <= 2% over warm)
#   building  warm, while `ferry cache replica build --background` runs beside it
#   replica root:// through the ferry cache's replica tier (built after the warm passes)
#   autofill  cold again, in a fresh cache with replica = auto: the replica builds while the pass
#           fills (issue 27); then the time from the pass's end until every file's replica
#           serves (stage 1 or 2) is recorded, and, after afterfill, the stage each file reached
#   afterfill the pass right after autofill, on that replica
#   inorder a cold pass (fresh cache) of a client that decodes its files in order:
#           `--threads 1 --reads 0 --opens 1`, as a TChain; against the limit L such a client can
#           reach (scripts/inorder_limit.py), computed from
#   inlocal the same in-order client on the local files (its per-file CPU)      [behind the WAN]
#
# The origin runs behind the test bed's WAN emulation (scripts/testbed/wan.sh: namespace,
# 40 ms RTT, 1 Gbit/s) or, where namespaces are not permitted, on 127.0.0.1 (said in the output).
# Output folder: summary.txt (the tables), summary.json, observables_*.png, wall_times.png,
# cpu_split.png, gen_*.json (the generator's reports), runs/ (each run's `ferry analyze agc
# --json`, link bytes, cache counters before/after, load average). Exit 3 when the histogram
# digests differ between passes.
# Everything else (data unless --data-dir, cache, origin, namespace) is removed at exit.
#
# usage: agc_passes.sh --ferry BIN --out DIR [--events N] [--files F]
#                      [--codecs "lzma:9[:EVENTS[:FILES[:FORMAT]]] zlib:1[:...]"] [--threads T] [--reads R]
#                      [--repeat K] [--no-wan] [--data-dir DIR] [--title TEXT]
#   --codecs        the sets to generate (in parallel), each with its own event and file counts
#                   or --events/--files, and format: ttree (the default) or rntuple
#   --data-dir DIR  keep the generated data in DIR and reuse it when its parameters match
#   --repeat K      run local, direct and warm K times (cold: K fresh caches); the table shows
#                   the median wall time
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
TB="$ROOT/scripts/testbed"
PY=/usr/bin/python3

T0=$(date +%s)
say() { printf '%s\n' "agc: $*" >&2; }
die() {
  printf '%s\n' "agc: ERROR: $*" >&2
  exit 1
}
elapsed() { echo $(($(date +%s) - T0)); }

FERRY="" OUT="" EVENTS=400000 FILES=4 CODECS="lzma:9 zlib:1" THREADS="$(nproc)" READS=16
REPEAT=1 NO_WAN=0 DATA_DIR="" TITLE="ferry analyze agc"
usage() {
  sed -n '/^# usage:/,/^#   --repeat/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --ferry) FERRY="${2:?}"; shift 2 ;;
    --out) OUT="${2:?}"; shift 2 ;;
    --events) EVENTS="${2:?}"; shift 2 ;;
    --files) FILES="${2:?}"; shift 2 ;;
    --codecs) CODECS="${2:?}"; shift 2 ;;
    --threads) THREADS="${2:?}"; shift 2 ;;
    --reads) READS="${2:?}"; shift 2 ;;
    --repeat) REPEAT="${2:?}"; shift 2 ;;
    --no-wan) NO_WAN=1; shift ;;
    --data-dir) DATA_DIR="${2:?}"; shift 2 ;;
    --title) TITLE="${2:?}"; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$FERRY" ] && [ -n "$OUT" ] || usage
for n in "$EVENTS" "$FILES" "$THREADS" "$READS" "$REPEAT"; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || die "counts must be positive integers"
done
FERRY="$(realpath "$FERRY")"
DATA_SRC="${FERRY_ROOT_DATA_DIR:-$ROOT/data/root}"
TEMPLATE="$DATA_SRC/nanoAOD_2015_CMS_Open_Data_ttbar.root"


[ -x "$FERRY" ] || die "no ferry binary at $FERRY"
[ -f "$TEMPLATE" ] || die "$TEMPLATE not found (the real ROOT files live in data/root)"
[ -x "$PY" ] || die "$PY is missing (apt-get install python3)"
command -v xrootd >/dev/null || die "xrootd is not installed (scripts/install-deps.sh)"

# Scratch (world-readable: xrootd runs as the xrootd account and must read the data).
WORK="$(mktemp -d /tmp/ferry-agc.XXXXXX)"
chmod 0755 "$WORK"
export FERRY_TB_DIR="$WORK/tb"
WAN_NAME="" ORIGIN_NAME="" CACHE_ON=0 OWN_ORIGIN_PID=""
cleanup() {
  local rc=$?
  set +e
  [ "$CACHE_ON" = 1 ] && cache_disable
  [ -n "$ORIGIN_NAME" ] && bash "$TB/origin.sh" stop --name "$ORIGIN_NAME" >/dev/null 2>&1
  if [ -n "$OWN_ORIGIN_PID" ]; then
    kill -TERM "$OWN_ORIGIN_PID" 2>/dev/null
    for ((i = 0; i < 50; i++)); do kill -0 "$OWN_ORIGIN_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$OWN_ORIGIN_PID" 2>/dev/null
  fi
  [ -n "$WAN_NAME" ] && bash "$TB/wan.sh" down --name "$WAN_NAME" >/dev/null 2>&1
  rm -rf "$WORK"
  [ $rc = 0 ] || say "stopped after $(elapsed) s (exit $rc)"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$OUT"
rm -rf "$OUT/runs"
rm -f "$OUT"/*.json "$OUT"/*.png "$OUT"/summary.txt
mkdir -p "$OUT/runs"
say "output $OUT, scratch $WORK"

# ---- the ferry cache (XrdCl plug-in), when built ---------------------------------------------
# `ferry cache enable` writes its conf file under $HOME/.xrootd/client.plugins.d, which XrdCl
# reads; a private HOME keeps that (and any cache the user enabled) out of everyone else's way,
# and XRD_PLUGINCONFDIR makes sure XrdCl looks exactly there.
export HOME="$WORK/home"
mkdir -p "$HOME/.xrootd/client.plugins.d"
export XRD_PLUGINCONFDIR="$HOME/.xrootd/client.plugins.d"
PLUGIN_LIB="${FERRY_PLUGIN_LIB:-$(dirname "$(dirname "$FERRY")")/lib/libXrdClFerry-5.so}"
HAVE_CACHE=0 CACHE_DIR=""
if ! "$FERRY" cache --help >/dev/null 2>&1; then
  say "'ferry cache' is not built: no cache passes"
elif [ ! -f "$PLUGIN_LIB" ]; then
  say "the cache plug-in $PLUGIN_LIB is missing (build target XrdClFerry): no cache passes"
else
  HAVE_CACHE=1
fi
cache_enable() {  # DIR [--shared GROUP]
  CACHE_DIR="$1"
  shift
  # replica = manual: the cold and warm passes measure the byte tier, and the replica is built
  # (and timed) between the passes, not by a background builder whenever a pass ends.
  # AGC_BENCH_CACHE_SET="KEY=VALUE ...": more cache settings (e.g. replica_codec=lz4).
  local extra=()
  for kv in ${AGC_BENCH_CACHE_SET:-}; do extra+=(--set "$kv"); done
  "$FERRY" cache enable --dir "$CACHE_DIR" --lib "$PLUGIN_LIB" --set replica=manual "${extra[@]}" "$@" \
    >"$WORK/cache-enable.log" 2>&1 ||
    die "ferry cache enable failed: $(tail -n 3 "$WORK/cache-enable.log")"
  CACHE_ON=1
}
cache_disable() {
  "$FERRY" cache disable >/dev/null 2>&1 || true
  CACHE_ON=0
}
cache_stats() {
  if [ -n "$CACHE_DIR" ] && [ -d "$CACHE_DIR" ]; then
    "$FERRY" cache stats --dir "$CACHE_DIR" --json 2>/dev/null || echo '{}'
  else
    echo '{}'
  fi
}

# Plug-in conf files outside our private HOME that XrdCl also reads (the system directory and
# the account's real home): an enabled one would put "direct" passes through someone's cache.
real_home="$(getent passwd "$(id -un)" | cut -d: -f6)"
for conf in /etc/xrootd/client.plugins.d/*.conf "$real_home"/.xrootd/client.plugins.d/*.conf; do
  [ -f "$conf" ] || continue
  if grep -Eq '^[[:space:]]*enable[[:space:]]*=[[:space:]]*(true|1|yes)' "$conf"; then
    say "WARNING: $conf enables an XrdCl plug-in for every client on this machine; passes may go through it"
  fi
done

# ---- the dataset -----------------------------------------------------------------------------
SETS=()
declare -A SET_DIR SET_LABEL
DATA_ROOT="${DATA_DIR:-$WORK/data}"
mkdir -p "$DATA_ROOT"
if "$FERRY" gen --help >/dev/null 2>&1; then
  pids=()
  for spec in $CODECS; do
    IFS=: read -r algo level set_events set_files set_format <<<"$spec"
    set_events="${set_events:-$EVENTS}" set_files="${set_files:-$FILES}"
    set_format="${set_format:-ttree}"
    set_name="$algo$level"
    [ "$set_format" = ttree ] || set_name="$set_name-$set_format"
    dir="$DATA_ROOT/$set_name"
    # The generator's model is part of the stamp: data kept by --data-dir from before the object
    # model (issue 18) is made again.
    stamp="events=$set_events files=$set_files codec=$algo:$level seed=5 mode=object template=$(cksum <"$TEMPLATE" | cut -d' ' -f1)"
    [ "$set_format" = ttree ] || stamp="$stamp format=$set_format"
    SETS+=("$set_name")
    SET_DIR[$set_name]="$dir"
    SET_LABEL[$set_name]="$algo-$level"
    [ "$set_format" = ttree ] || SET_LABEL[$set_name]="$algo-$level-$set_format"
    if [ -f "$dir/.agc-params" ] && [ "$(cat "$dir/.agc-params")" = "$stamp" ]; then
      say "$set_name: reusing $dir"
      cp "$dir/.agc-gen.json" "$OUT/gen_$set_name.json" 2>/dev/null || true
      continue
    fi
    rm -rf "$dir"
    say "$set_name: generating $set_events events in $set_files files ($(elapsed) s)"
    (
      "$FERRY" gen nanoaod --template "$TEMPLATE" --events "$set_events" --files "$set_files" \
        --codec "$algo:$level" --seed 5 --mode object --format "$set_format" --out "$dir" \
        --json >"$OUT/gen_$set_name.json" \
        2>"$WORK/gen_$set_name.err" || exit 1
      cp "$OUT/gen_$set_name.json" "$dir/.agc-gen.json"
      echo "$stamp" >"$dir/.agc-params"
    ) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || die "ferry gen nanoaod failed: $(cat "$WORK"/gen_*.err 2>/dev/null | tail -n 3)"
  done
  for s in "${SETS[@]}"; do
    say "$s: $("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%d events, %.1f MB, %.1f s to generate" % (d["events"], d["bytes"]/1e6, d["seconds"]))' "$OUT/gen_$s.json" 2>/dev/null || echo "(no report)")"
  done
else
  say "'ferry gen' is not built yet: the dataset is copies of the real NanoAOD files"
  dir="$DATA_ROOT/real"
  mkdir -p "$dir"
  for i in $(seq -w 0 7); do
    cp "$TEMPLATE" "$dir/ttbar_$i.root"
    cp "$DATA_SRC/nano_dy.root" "$dir/dy_$i.root"
  done
  SETS+=(real)
  SET_DIR[real]="$dir"
  SET_LABEL[real]="real-nanoaod-x8"
fi
chmod -R a+rX "$DATA_ROOT"
case "$DATA_ROOT" in
  /root/*) die "--data-dir under /root cannot be served (the xrootd account cannot traverse /root)" ;;
esac

# ---- the origin ------------------------------------------------------------------------------
# Without root the test bed scripts cannot run (xrootd -R, namespaces): start xrootd as this
# user on 127.0.0.1 (bind shim compiled here), under `timeout`, recorded by PID.
start_own_origin() {
  local run="$WORK/own-origin" port="" i p
  mkdir -p "$run/admin"
  command -v cc >/dev/null || die "no C compiler for the bind shim (apt-get install gcc)"
  cc -O2 -shared -fPIC -o "$run/bindshim.so" "$TB/tools/bindshim.c" -ldl || die "cannot build the bind shim"
  for ((i = 0; i < 50; i++)); do
    p=$((20000 + RANDOM % 10000))
    if ! ss -Htln 2>/dev/null | awk '{print $4}' | grep -q ":$p\$"; then port=$p; break; fi
  done
  [ -n "$port" ] || die "no free TCP port"
  printf 'xrd.port %s\nall.export / r/o\noss.localroot %s\nall.adminpath %s\nall.pidpath %s\n' \
    "$port" "$DATA_ROOT" "$run/admin" "$run" >"$run/xrootd.cfg"
  FERRY_TB_BIND_ADDR=127.0.0.1 LD_PRELOAD="$run/bindshim.so" \
    timeout 21600 xrootd -c "$run/xrootd.cfg" -l "$run/xrootd.log" -s "$run/xrootd.pid" \
    >"$run/stdout.log" 2>&1 </dev/null &
  OWN_ORIGIN_PID=$!
  for ((i = 0; i < 200; i++)); do
    if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
      URL="root://127.0.0.1:$port/"
      return 0
    fi
    kill -0 "$OWN_ORIGIN_PID" 2>/dev/null || break
    sleep 0.1
  done
  die "xrootd did not start: $(tail -n 3 "$run/stdout.log" "$run/xrootd.log" 2>/dev/null)"
}

WHERE=""
# The emulated link, given to the test bed and to the summary's in-order limit L alike.
WAN_RTT_MS=40
WAN_MBIT=1000
if [ "$NO_WAN" = 1 ]; then
  WHERE="on 127.0.0.1, without WAN emulation (--no-wan)"
elif [ "$(id -u)" != 0 ]; then
  WHERE="on 127.0.0.1, without WAN emulation (network namespaces need root)"
else
  name="ftb-agc$(($$ % 100000))"
  if addr="$(bash "$TB/wan.sh" up --rtt "${WAN_RTT_MS}ms" --rate "${WAN_MBIT}mbit" --name "$name" \
    2>"$WORK/wan.err")"; then
    WAN_NAME="$name"
    WHERE="behind the WAN emulation: namespace $name at $addr, $WAN_RTT_MS ms RTT, $WAN_MBIT Mbit/s"
  else
    WHERE="on 127.0.0.1, without WAN emulation: $(tail -n 1 "$WORK/wan.err" | sed 's/^ftb: //')"
  fi
fi
if [ -n "$WAN_NAME" ]; then
  ORIGIN_NAME="$WAN_NAME"
  URL="$(bash "$TB/origin.sh" start --netns "$WAN_NAME" --name "$ORIGIN_NAME" --dir "$DATA_ROOT" 2>>"$WORK/origin.err")" ||
    die "the origin did not start: $(tail -n 3 "$WORK/origin.err")"
elif [ "$(id -u)" != 0 ]; then
  start_own_origin
else
  ORIGIN_NAME="agc$(($$ % 100000))"
  URL="$(bash "$TB/origin.sh" start --name "$ORIGIN_NAME" --dir "$DATA_ROOT" 2>>"$WORK/origin.err")" ||
    die "the origin did not start: $(tail -n 3 "$WORK/origin.err")"
fi
URL="${URL%/}"
say "xrootd origin $URL, $WHERE"

# Bytes that crossed the emulated link towards the host (host end of the veth pair).
wire_rx() {
  if [ -n "$WAN_NAME" ]; then cat "/sys/class/net/$WAN_NAME-h/statistics/rx_bytes"; else echo 0; fi
}

# ---- the passes ------------------------------------------------------------------------------
# Sectors read from every disk since boot (/proc/diskstats; partitions left out): a pass that
# reads any is reading what the page cache no longer holds (a VM host's proactive reclaim drops
# cold page-cache pages, the replica's among them).
disk_read_sectors() {
  awk '$3 ~ /^((s|v|xv)d[a-z]+|nvme[0-9]+n[0-9]+|mmcblk[0-9]+)$/ {s += $6} END {print s + 0}' /proc/diskstats
}

# run_pass SET PASS RUN SOURCES...: $OUT/runs/SET_PASS_RUN.json (+ .wire: link bytes, .cache0/1:
# cache counters before and after, .load: the machine's 1-minute load average before the run,
# .diskread: MB the machine's disks read during the run, anyone's).
run_pass() {
  local set_name="$1" pass="$2" run="$3"
  shift 3
  local base="$OUT/runs/${set_name}_${pass}_$run" rx0 rx1 plot=()
  if [ "$pass" = local ] && [ "$run" = 1 ]; then plot=(--plot "$OUT/observables_$set_name.png"); fi
  say "$set_name: $pass pass $run/$REPEAT over $# files ($(elapsed) s)"
  local cached=0 builder="" shape=(--threads "$THREADS" --reads "$READS")
  [ "$pass" = local ] || [ "$pass" = direct ] || [ "$pass" = inlocal ] || cached=1
  case "$pass" in inorder | inlocal) shape=(--threads 1 --reads 0 --opens 1) ;; esac
  if [ "$cached" = 1 ]; then cache_stats >"$base.cache0"; fi
  cut -d' ' -f1 /proc/loadavg >"$base.load"
  local dr0
  dr0="$(disk_read_sectors)"
  rx0="$(wire_rx)"
  if [ "$pass" = building ]; then
    # The replica builds beside the pass, as replica = auto does (idle CPU and I/O priority).
    "$FERRY" cache replica build --dir "$CACHE_DIR" --background --json >"$base.build" 2>"$base.build.err" &
    builder=$!
  fi
  "$FERRY" analyze agc "$@" "${shape[@]}" --json "${plot[@]}" \
    >"$base.json" 2>"$base.err" || die "ferry analyze agc failed ($set_name $pass): $(tail -n 3 "$base.err")"
  date +%s.%N >"$base.end"
  echo $(($(disk_read_sectors) - dr0)) | awk '{printf "%.1f\n", $1 * 512 / 1e6}' >"$base.diskread"
  rx1="$(wire_rx)"
  echo $((rx1 - rx0)) >"$base.wire"
  if [ -n "$builder" ]; then wait "$builder" || die "the background replica build failed"; fi
  if [ "$cached" = 1 ]; then cache_stats >"$base.cache1"; fi
  rm -f "$base.err"
}

# poll_replicas SET RUN ready|stage2: polls `ferry cache replica status` every 20 ms (one
# process) until every file of the cache is
#   ready:  served by a replica (stage 1 or 2, no basket missing; a file whose stage-2
#           re-encoding holds it is ready: its stage-1 replica serves), at most 600 s;
#           $OUT/runs/SET_autofill_RUN.ready gets the seconds from the end of the autofill pass
#           ("-1": not in time, or a file's stage 2 ended partial: no later build fills it
#           without another pass, so the poll stops there) and .stages {"at_ready": each file's
#           state, stage, stage_why, missing_baskets, reason}; when not ready, .status.json
#           keeps the whole `replica status` (the cache itself is removed at exit);
#   stage2: re-encoded (stage 2, built), at most 120 s; .stages gains "final" (each file's state,
#           stage, stage_why) and "stage2_after_fill_s" (from the end of the autofill pass; null:
#           not in time).
poll_replicas() {
  local base="$OUT/runs/${1}_autofill_$2"
  "$PY" - "$FERRY" "$CACHE_DIR" "$(cat "$base.end")" "$base" "$3" <<'PY'
import json, subprocess, sys, time
ferry, cache, t_end, base, what = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]

def status():
    p = subprocess.run([ferry, "cache", "replica", "status", "--dir", cache, "--json"],
                       capture_output=True, text=True)
    return json.loads(p.stdout)["files"] if p.returncode == 0 else []

def done(files):
    if what == "ready":
        return bool(files) and all(f["stage"] >= 1 and f["missing_baskets"] == 0
                                   and f["state"] in ("built", "building") for f in files)
    return bool(files) and all(f["stage"] == 2 and f["state"] == "built" for f in files)

def stuck(files):
    return any(f["state"] == "partial" and f["stage"] == 2 for f in files)

deadline = time.time() + (600 if what == "ready" else 120)
files = status()
while not done(files) and not stuck(files) and time.time() < deadline:
    time.sleep(0.02)
    files = status()
wait = time.time() - t_end if done(files) else -1
stages = {f["url"].rsplit("/", 1)[-1]: {k: f.get(k) for k in ("state", "stage", "stage_why",
                                                              "missing_baskets", "reason")}
          for f in files}
if wait < 0:
    with open(base + ".status.json", "w") as f:
        json.dump(files, f, indent=1)
if what == "ready":
    open(base + ".ready", "w").write("%.3f\n" % wait)
    d = {"at_ready": stages}
else:
    with open(base + ".stages") as f:
        d = json.load(f)
    d.update({"final": stages, "stage2_after_fill_s": None if wait < 0 else round(wait, 3)})
with open(base + ".stages", "w") as f:
    json.dump(d, f)
PY
}

# stage1_copy SET RUN: the memory of a stage-1 build: a copy of the current (warm, replica-less)
# cache relocated by `ferry cache replica build --stage 1 --json` (its peak_rss_bytes against the
# hot bytes, baskets_original_bytes), into $OUT/runs/SET_stage1_RUN.json; the copy is removed.
stage1_copy() {
  local copy="$WORK/stage1-copy"
  rm -rf "$copy"
  cp -a "$CACHE_DIR" "$copy"
  "$FERRY" cache replica build --dir "$copy" --stage 1 --json >"$OUT/runs/${1}_stage1_$2.json" \
    2>/dev/null || say "$1: the stage-1 build of the copy failed"
  rm -rf "$copy"
}

# build_replica SET RUN: builds (or finishes: releases what the byte tier no longer needs) the
# replica of the current cache, timed; $OUT/runs/SET_build_RUN.json, .disk0/.disk1 (cache disk
# bytes before and after).
build_replica() {
  local base="$OUT/runs/${1}_build_$2" t0 t1
  cache_stats >"$base.cache0"
  t0=$(date +%s.%N)
  "$FERRY" cache replica build --dir "$CACHE_DIR" --json >"$base.json" 2>"$base.err" ||
    die "ferry cache replica build failed: $(tail -n 3 "$base.err")"
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' >"$base.wall"
  cache_stats >"$base.cache1"
  rm -f "$base.err"
}

PASSES=(local direct)
[ "$HAVE_CACHE" = 1 ] && PASSES+=(cold warm shared1 shared building replica autofill afterfill)
# The in-order limit needs the link's rate and round trip: behind the WAN emulation only.
[ "$HAVE_CACHE" = 1 ] && [ -n "$WAN_NAME" ] && PASSES+=(inorder inlocal)
for s in "${SETS[@]}"; do
  files=() urls=()
  while IFS= read -r f; do
    files+=("$f")
    urls+=("$URL//${f#"$DATA_ROOT/"}")
  done < <(find "${SET_DIR[$s]}" -name '*.root' | sort)
  [ ${#files[@]} -gt 0 ] || die "no .root files in ${SET_DIR[$s]}"
  # An unrecorded local pass first, so every recorded pass finds the same page cache (the
  # origin serves the same files from this host's memory too).
  say "$s: warm-up pass over ${#files[@]} files ($(elapsed) s)"
  "$FERRY" analyze agc "${files[@]}" --threads "$THREADS" --reads "$READS" --json >/dev/null ||
    die "ferry analyze agc failed on the local files of $s"
  # Repeat k runs the passes it compares next to each other, in alternating order, so that a
  # change in the machine's load (others share it) hits both sides of a ratio alike:
  #   odd k:  direct, cold, warm, local      even k: cold, direct, local, warm
  # (cold fills a fresh cache; warm reads that same cache).
  for ((k = 1; k <= REPEAT; k++)); do
    if [ "$HAVE_CACHE" = 1 ]; then
      cache_disable
      if ((k % 2 == 1)); then order=(direct cold warm local); else order=(cold direct local warm); fi
    else
      if ((k % 2 == 1)); then order=(direct local); else order=(local direct); fi
    fi
    for ps in "${order[@]}"; do
      case "$ps" in
        local) run_pass "$s" local "$k" "${files[@]}" ;;
        direct)
          # No plug-in for direct passes, even between a cold and a warm pass.
          if [ "$CACHE_ON" = 1 ]; then
            mv "$XRD_PLUGINCONFDIR/ferry-cache.conf" "$WORK/ferry-cache.conf.off"
          fi
          run_pass "$s" direct "$k" "${urls[@]}"
          if [ -f "$WORK/ferry-cache.conf.off" ]; then
            mv "$WORK/ferry-cache.conf.off" "$XRD_PLUGINCONFDIR/ferry-cache.conf"
          fi
          ;;
        cold)
          cache_enable "$WORK/cache-$s-$k"
          run_pass "$s" cold "$k" "${urls[@]}"
          ;;
        warm) run_pass "$s" warm "$k" "${urls[@]}" ;;
      esac
    done
    if [ "$HAVE_CACHE" = 1 ]; then
      # The same filled cache as a group cache (of this account's group): the first pass asks
      # the origin once per file, the next one is the steady state; then private again.
      cache_enable "$WORK/cache-$s-$k" --shared "$(id -gn)"
      rm -rf "$WORK/cache-$s-$k/users"
      run_pass "$s" shared1 "$k" "${urls[@]}"
      run_pass "$s" shared "$k" "${urls[@]}"
      # The replica: a warm pass while it builds in the background, then the build once more
      # in the foreground (it releases the byte tier the first one could not while the pass
      # had the files open, and is timed), then a pass on the replica.
      cache_enable "$WORK/cache-$s-$k"
      stage1_copy "$s" "$k"
      run_pass "$s" building "$k" "${urls[@]}"
      build_replica "$s" "$k"
      run_pass "$s" replica "$k" "${urls[@]}"
      # The first pass again, with replica = auto: how long after it the replica is ready, and
      # the pass that follows.
      cache_enable "$WORK/cache-$s-$k-auto" --set replica=auto
      run_pass "$s" autofill "$k" "${urls[@]}"
      poll_replicas "$s" "$k" ready
      run_pass "$s" afterfill "$k" "${urls[@]}"
      poll_replicas "$s" "$k" stage2
      cache_disable
      rm -rf "$WORK/cache-$s-$k-auto"
      if [ -n "$WAN_NAME" ]; then
        # The in-order client, cold (read-ahead and the next files opened ahead: the defaults),
        # then on the local files for its per-file CPU.
        cache_enable "$WORK/cache-$s-$k-inorder"
        run_pass "$s" inorder "$k" "${urls[@]}"
        cache_disable
        rm -rf "$WORK/cache-$s-$k-inorder"
        run_pass "$s" inlocal "$k" "${files[@]}"
      fi
    fi
    # The fill of repeat k is no longer needed.
    if [ "$HAVE_CACHE" = 1 ]; then
      cache_disable
      if [ "$k" != "$REPEAT" ]; then
        rm -rf "$WORK/cache-$s-$k"
        timeout 120 sync || true  # the deletion's writes do not spill into the next pass
      fi
    fi
  done
done

# ---- summary: table, JSON, plots, digest check -----------------------------------------------
for s in "${SETS[@]}"; do printf '%s\t%s\n' "$s" "${SET_LABEL[$s]}"; done >"$WORK/sets"
set +e
"$PY" "$HERE/agc_summary.py" --out "$OUT" --sets "$WORK/sets" --passes "${PASSES[*]}" \
  --repeat "$REPEAT" --where "$WHERE" --mode "$([ -n "$WAN_NAME" ] && echo wan || echo loopback)" \
  --title "$TITLE" --bars "$WORK/bars.dat" --cpu "$WORK/cpu.dat" \
  $([ -n "$WAN_NAME" ] && echo "--link-bytes-per-s $((WAN_MBIT * 125000)) --rtt-s $(awk "BEGIN {print $WAN_RTT_MS / 1000}")")
summary_rc=$?
set -e
[ -f "$WORK/bars.dat" ] && bash "$ROOT/bench/plot_bars.sh" "$TITLE: wall time per pass (median of $REPEAT)" \
  "seconds" "$WORK/bars.dat" "$OUT/wall_times.png" >/dev/null 2>&1
[ -f "$WORK/cpu.dat" ] && bash "$ROOT/bench/plot_bars.sh" "$TITLE: CPU seconds per pass (median)" \
  "seconds" "$WORK/cpu.dat" "$OUT/cpu_split.png" >/dev/null 2>&1
echo "origin: $WHERE"
echo "output: $OUT"
say "done in $(elapsed) s"
exit $summary_rc
