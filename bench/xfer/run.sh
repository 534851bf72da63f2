#!/usr/bin/env bash
# bench/xfer: one file disk to disk with `ferry send`, next to the limits of the machine and the
# bulk-transfer peers installed from Debian, on loopback and on the long-fat-network emulation
# (scripts/testbed/lfn.sh: two namespaces, veth, tbf, NFQUEUE delay).
#
#   bench/xfer/run.sh [--size 4G] [--paths "lo lfn2g lfn10g"] [--tools "..."] [--repeat 1]
#                     [--ferry BIN] [--out DIR] [--scratch DIR] [--iperf-seconds 15]
#                     [--ram auto|on|off] [--long-size 16G]
#
# Per path: iperf3 -P 8 memory to memory (the network limit; with the system's TCP congestion
# control and with cubic, the best counts), then each tool copies the same
# file from namespace A to namespace B (loopback: both ends in B, 127.0.0.1). Before each run the
# source's page cache is dropped; the time ends when the tool exited and the destination was
# fsynced; the destination's xxh128 must equal the source's. fio's O_DIRECT read of the source
# is the disk limit, with the write of a new file, and — source and destination on one device —
# both at once (a copy there shares the device; each alone overstates what it can do). On the
# LFN paths ferry runs once more with the kernel's default TCP buffer
# limits (tcp_rmem/tcp_wmem copied from the host into both namespaces). ferry, too, runs with
# the system's congestion control and with --congestion cubic.
# RAM-backed disk (--ram, default auto: when /dev/shm and memory have room for two copies): a
# loop device over a file in /dev/shm (direct I/O, ext4) holds a second copy of the source and
# a second destination; its fio limits and ferry's copies on it (rows ferry-ram) show ferry's
# own write path where the machine's disk is slower than the link. --long-size adds ferry-long
# rows: one longer file (e.g. 16G) to the real disk, so that ramp-up and steady state separate.
# Every ferry row also reports its steady-state rate (10%..90% of the bytes acknowledged, from
# its --json), and OUT/ferry-runs.jsonl keeps both ends' stage timing of every ferry copy.
# Tools: ferry xrdcp gridftp rsync aria2 (each skipped when not installed).
# Output: a table on stdout, DIR/xfer.json and DIR/xfer.png (gnuplot). Needs root.
# Every server runs inside the bench's namespaces, is recorded by PID and stopped by PID.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LFN="$ROOT/scripts/testbed/lfn.sh"
SIZE=4G PATHS="lo lfn2g lfn10g" TOOLS="ferry xrdcp gridftp rsync aria2" REPEAT=1
FERRY="" OUT="${TMPDIR:-/tmp}/fxf-bench-out" SCRATCH="${TMPDIR:-/tmp}/fxf-bench" IPERF_S=15
RAM=auto LONG_SIZE=""
TMO=${TMO:-240}
while [ $# -gt 0 ]; do
  case "$1" in
    --size) SIZE="$2"; shift 2 ;;
    --paths) PATHS="$2"; shift 2 ;;
    --tools) TOOLS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --ferry) FERRY="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --scratch) SCRATCH="$2"; shift 2 ;;
    --iperf-seconds) IPERF_S="$2"; shift 2 ;;
    --ram) RAM="$2"; shift 2 ;;
    --long-size) LONG_SIZE="$2"; shift 2 ;;
    *) sed -n '5,8p' "$0" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench/xfer: needs root (namespaces)" >&2; exit 77; }
if [ -z "$FERRY" ]; then
  for c in "$ROOT/build/release/bin/ferry" "$ROOT/build/dev/bin/ferry"; do
    [ -x "$c" ] && FERRY="$c" && break
  done
fi
[ -x "$FERRY" ] || { echo "bench/xfer: no ferry binary (make build, or --ferry BIN)" >&2; exit 1; }
for t in fio iperf3 xxhsum gnuplot python3; do
  command -v "$t" >/dev/null || { echo "bench/xfer: $t missing (scripts/install-deps.sh)" >&2; exit 1; }
done
has() { case " $TOOLS " in *" $1 "*) return 0 ;; esac; return 1; }
has xrdcp && ! command -v xrootd >/dev/null && TOOLS=${TOOLS/xrdcp/}
has gridftp && ! command -v globus-url-copy >/dev/null && TOOLS=${TOOLS/gridftp/}
has rsync && ! command -v rsync >/dev/null && TOOLS=${TOOLS/rsync/}
has aria2 && ! { command -v aria2c >/dev/null && command -v nginx >/dev/null; } && TOOLS=${TOOLS/aria2/}

BYTES=$(numfmt --from=iec "$SIZE")
SRC="$SCRATCH/src/data.bin" DST="$SCRATCH/dst" RUN="$SCRATCH/run"
NAME=fxf-bench NA=fxf-bench-a NB=fxf-bench-b IPA=10.213.250.1 IPB=10.213.250.2
export FERRY_LFN_DIR="$SCRATCH/lfn"
PIDS=()
mkdir -p "$SCRATCH/src" "$DST" "$RUN" "$OUT"
chmod 755 "$SCRATCH" "$SCRATCH/src"
chmod 1777 "$DST"
RESULTS="$RUN/results.tsv"
: >"$RESULTS"

stop_servers() {
  local p i
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for ((i = 0; i < 20; i++)); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.25
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  PIDS=()
}
# Two RAM-backed disks, one for the source and one for the destination: a loop device serves its
# requests from one kernel worker, so a source and a destination on one device would share it,
# where fio measures the read and the write each alone.
RAMIMG=/dev/shm/fxf-bench-ram.img RAMDIR="$SCRATCH/ram" RAMDEV=""
RAMIMG_SRC=/dev/shm/fxf-bench-ram-src.img RAMDIR_SRC="$SCRATCH/ram-src" RAMDEV_SRC=""
ram_down() {
  mountpoint -q "$RAMDIR" && umount "$RAMDIR"
  mountpoint -q "$RAMDIR_SRC" && umount "$RAMDIR_SRC"
  [ -n "$RAMDEV" ] && losetup -d "$RAMDEV" 2>/dev/null
  [ -n "$RAMDEV_SRC" ] && losetup -d "$RAMDEV_SRC" 2>/dev/null
  RAMDEV="" RAMDEV_SRC=""
  rm -f "$RAMIMG" "$RAMIMG_SRC"
}
# ram_disk IMG BYTES DIR: a loop device (direct I/O) over IMG in /dev/shm, ext4, mounted on DIR;
# prints the device.
ram_disk() {
  local dev
  rm -f "$1"
  truncate -s "$2" "$1" && dev=$(losetup --find --show --direct-io=on "$1") || return 1
  echo "$dev"
  mkfs.ext4 -q -E nodiscard "$dev" && mkdir -p "$3" && mount -o discard "$dev" "$3"
}
cleanup() {
  stop_servers
  bash "$LFN" down --name "$NAME" >/dev/null 2>&1
  rm -f "$DST/data.bin" "$DST/long.bin"
  ram_down
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ source and disk limit
if [ "$(stat -c %s "$SRC" 2>/dev/null)" != "$BYTES" ]; then
  echo "# writing $SIZE of random data to $SRC"
  head -c "$BYTES" /dev/urandom >"$SRC" || exit 1
fi
chmod 644 "$SRC"
SUM=$(xxhsum -H2 "$SRC" 2>/dev/null | cut -d' ' -f1)
echo "# source $SRC: $SIZE, xxh128 $SUM; ferry $FERRY"
# fio_read FILE / fio_write DIR: Gbit/s of an O_DIRECT read of FILE (64 MiB x 16 in flight) and
# of a new file of BYTES written O_DIRECT in DIR (4 MiB x 16 in flight, the receiver's pattern,
# fsynced at the end, as every copy below is).
fio_read() {
  dd if="$1" iflag=nocache count=0 status=none
  timeout 120 fio --name=r --filename="$1" --rw=read --bs=64M --iodepth=16 --ioengine=io_uring \
    --direct=1 --size="$BYTES" --runtime=20 --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"]*8/1e9))' ||
    echo 0
}
fio_write() {
  timeout 120 fio --name=w --filename="$1/.fio-write-limit" --rw=write --bs=4M --iodepth=16 \
    --ioengine=io_uring --direct=1 --size="$BYTES" --end_fsync=1 --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["jobs"][0]["write"]["bw_bytes"]*8/1e9))' ||
    echo 0
  rm -f "$1/.fio-write-limit"
}
# fio_copy FILE DIR: the lower of the read and write rates of both at once, when FILE and DIR
# are on one device (a copy there shares it between reading and writing); 0 otherwise.
fio_copy() {
  [ "$(stat -c %d "$1")" = "$(stat -c %d "$2")" ] || { echo 0; return; }
  dd if="$1" iflag=nocache count=0 status=none
  timeout 120 fio --output-format=json \
    --name=r --filename="$1" --rw=read --bs=64M --iodepth=16 --ioengine=io_uring --direct=1 \
    --size="$BYTES" --runtime=20 \
    --name=w --filename="$2/.fio-copy-limit" --rw=write --bs=4M --iodepth=16 --ioengine=io_uring \
    --direct=1 --size="$BYTES" --end_fsync=1 --runtime=20 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"]; print("%.3f" % (min(j[0]["read"]["bw_bytes"], j[1]["write"]["bw_bytes"])*8/1e9))' ||
    echo 0
  rm -f "$2/.fio-copy-limit"
}
DISK=$(fio_read "$SRC")
echo "# disk limit: fio O_DIRECT read, 64 MiB x 16 in flight: $DISK Gbit/s"
# On a virtio disk the write is often the lower of the two.
DISKW=$(fio_write "$DST")
echo "# disk limit: fio O_DIRECT write of a new file + fsync, 4 MiB x 16 in flight: $DISKW Gbit/s"
DISKC=$(fio_copy "$SRC" "$DST")
[ "$DISKC" != 0 ] && echo "# disk limit: source and destination on one device, fio read and write at once: $DISKC Gbit/s (the lower of the two)"

# The RAM-backed disks: the same two limits where no disk is slow, with ferry's write path on a
# block device all the same (ext4, O_DIRECT, fsync). Needs room for the source and one copy (or
# the long copy, which goes there when it fits: --long-size).
RAMR=0 RAMW=0 LONG_BYTES=0 LONG_TO_RAM=0
[ -n "$LONG_SIZE" ] && LONG_BYTES=$(numfmt --from=iec "$LONG_SIZE")
shm_free=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1)
mem_free=$(awk '/MemAvailable/{printf "%.0f", $2 * 1024}' /proc/meminfo)  # %d stops at 2^31-1 in mawk
ram_src_bytes=$((BYTES + (512 << 20)))
ram_dst_bytes=$((BYTES + (1 << 30)))
ram_long=$((LONG_BYTES + (1 << 30)))
fits() { [ "${shm_free:-0}" -gt "$1" ] && [ "${mem_free:-0}" -gt $(($1 + (4 << 30))) ]; }
if [ "$LONG_BYTES" -gt "$BYTES" ] && [ "$RAM" != off ] && fits $((ram_src_bytes + ram_long)); then
  ram_dst_bytes=$ram_long LONG_TO_RAM=1
fi
if [ "$RAM" = on ] || { [ "$RAM" = auto ] && fits $((ram_src_bytes + ram_dst_bytes)); }; then
  RAMDEV_SRC=$(ram_disk "$RAMIMG_SRC" "$ram_src_bytes" "$RAMDIR_SRC" | head -1)
  RAMDEV=$(ram_disk "$RAMIMG" "$ram_dst_bytes" "$RAMDIR" | head -1)
  if mountpoint -q "$RAMDIR_SRC" && mountpoint -q "$RAMDIR"; then
    mkdir -p "$RAMDIR_SRC/src" "$RAMDIR/dst"
    chmod 1777 "$RAMDIR/dst"
    cp "$SRC" "$RAMDIR_SRC/src/data.bin" && sync
    RAMR=$(fio_read "$RAMDIR_SRC/src/data.bin")
    RAMW=$(fio_write "$RAMDIR/dst")
    echo "# RAM-backed disks (source $RAMDEV_SRC, destination $RAMDEV, over /dev/shm, ext4): O_DIRECT read $RAMR, write $RAMW Gbit/s"
  else
    echo "# RAM-backed disk: could not be set up (loop device, mkfs.ext4 or mount failed)"
    ram_down
    LONG_TO_RAM=0
  fi
else
  echo "# RAM-backed disk: skipped (--ram $RAM; /dev/shm or memory has no room for 2 x $SIZE)"
  LONG_TO_RAM=0
fi

# The long copy's source: copies of the source one after the other (no new random data needed).
SRC_LONG="$SCRATCH/src/long.bin" SUM_LONG="" LONG_DST="$DST" LONG_PORT=7700 LONG_WHERE="the disk"
if [ "$LONG_TO_RAM" = 1 ]; then
  LONG_DST="$RAMDIR/dst" LONG_PORT=7704 LONG_WHERE="the RAM-backed disk"
fi
if [ -n "$LONG_SIZE" ]; then
  if [ "$(stat -c %s "$SRC_LONG" 2>/dev/null)" != "$LONG_BYTES" ]; then
    echo "# writing $LONG_SIZE to $SRC_LONG"
    rm -f "$SRC_LONG"
    # (cat ends on SIGPIPE once head has its bytes: check the size, not the pipeline's status)
    for ((k = 0; k * BYTES < LONG_BYTES; k++)); do cat "$SRC"; done | head -c "$LONG_BYTES" >"$SRC_LONG"
    [ "$(stat -c %s "$SRC_LONG" 2>/dev/null)" = "$LONG_BYTES" ] || exit 1
  fi
  chmod 644 "$SRC_LONG"
  SUM_LONG=$(xxhsum -H2 "$SRC_LONG" 2>/dev/null | cut -d' ' -f1)
  echo "# long source $SRC_LONG: $LONG_SIZE, xxh128 $SUM_LONG"
fi

# CPU seconds (user + system, io_uring workers included) of the ferry receivers so far.
RECV_PIDS=()
recv_cpu() {
  local p t=0
  for p in "${RECV_PIDS[@]}"; do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
cpu_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }

# ------------------------------------------------------------------ servers (inside B, nginx in A)
start_servers() { # PATH
  local p=$1 R="$RUN/srv"
  rm -rf "$R"
  mkdir -p "$R"
  chmod 755 "$R"
  printf '%s\n' "bench token $RANDOM$RANDOM" >"$R/token"
  ip netns exec $NB "$FERRY" recv --listen 0.0.0.0:7700 --root "$DST" --token-file "$R/token" \
    --json >"$R/ferry.out" 2>"$R/ferry.err" </dev/null &
  PIDS+=($!)
  RECV_PIDS=($!)
  if [ -n "$RAMDEV" ]; then
    ip netns exec $NB "$FERRY" recv --listen 0.0.0.0:7704 --root "$RAMDIR/dst" --token-file "$R/token" \
      --json >"$R/ferry-ram.out" 2>"$R/ferry-ram.err" </dev/null &
    PIDS+=($!)
    RECV_PIDS+=($!)
  fi
  # The same with nothing written: the network and ferry's own path without the destination disk.
  ip netns exec $NB "$FERRY" recv --listen 0.0.0.0:7702 --discard --token-file "$R/token" --json \
    >"$R/ferry-discard.out" 2>"$R/ferry-discard.err" </dev/null &
  PIDS+=($!)
  RECV_PIDS+=($!)
  if has xrdcp; then
    mkdir -p "$R/xrd"
    printf 'xrd.port 1094\nxrd.network nodnr\nall.export %s\nall.adminpath %s/xrd/admin\nall.pidpath %s/xrd\n' \
      "$DST" "$R" "$R" >"$R/xrd/xrootd.cfg"
    chown -R xrootd "$R/xrd" 2>/dev/null
    ip netns exec $NB xrootd -R xrootd -c "$R/xrd/xrootd.cfg" -l "$R/xrd/xrootd.log" -n fxfbench \
      >/dev/null 2>&1 </dev/null &
    PIDS+=($!)
  fi
  if has gridftp; then
    local data_if=$IPB
    [ "$p" = lo ] && data_if=127.0.0.1
    ip netns exec $NB env GLOBUS_USAGE_OPTOUT=1 globus-gridftp-server -aa -anonymous-user nobody \
      -p 2811 -data-interface $data_if -disable-usage-stats -logfile "$R/gridftp.log" \
      >/dev/null 2>&1 </dev/null &
    PIDS+=($!)
  fi
  if has rsync; then
    mkdir -p "$R/rsync"
    printf 'use chroot = no\npid file = %s/rsync/pid\nlog file = %s/rsync/log\n[dst]\n  path = %s\n  read only = false\n  uid = root\n  gid = root\n' \
      "$R" "$R" "$DST" >"$R/rsync/rsyncd.conf"
    ip netns exec $NB rsync --daemon --no-detach --config="$R/rsync/rsyncd.conf" --port=8730 \
      >/dev/null 2>&1 </dev/null &
    PIDS+=($!)
  fi
  if has aria2; then
    mkdir -p "$R/nginx"
    cat >"$R/nginx/nginx.conf" <<X
daemon off;
worker_processes 2;
user root;
pid $R/nginx/nginx.pid;
error_log $R/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off; sendfile on; tcp_nopush on;
  client_body_temp_path $R/nginx/body; proxy_temp_path $R/nginx/proxy;
  fastcgi_temp_path $R/nginx/fcgi; uwsgi_temp_path $R/nginx/uwsgi; scgi_temp_path $R/nginx/scgi;
  types { application/octet-stream bin; }
  server { listen 8080; root $SCRATCH/src; }
}
X
    local ns=$NA
    [ "$p" = lo ] && ns=$NB
    ip netns exec $ns nginx -c "$R/nginx/nginx.conf" -p "$R/nginx" >/dev/null 2>&1 </dev/null &
    PIDS+=($!)
  fi
  sleep 2
}

# ------------------------------------------------------------------ one measured copy
# run_case PATH TOOL OPTIONS NS CMD...   (CMD runs inside namespace NS)
# With NOFILE=1 the tool writes no file (ferry recv --discard): ok when it exits 0, since ferry
# checks every block and the file digest end to end itself.
# CASE_SRC, CASE_DST, CASE_BYTES and CASE_SUM name the copy (default: the source to $DST).
NOFILE=0 CASE_SRC="" CASE_DST="" CASE_BYTES="" CASE_SUM=""
run_case() {
  local path=$1 tool=$2 opts=$3 ns=$4
  shift 4
  local i src=${CASE_SRC:-$SRC} dstf=${CASE_DST:-$DST/data.bin} bytes=${CASE_BYTES:-$BYTES}
  local want=${CASE_SUM:-$SUM}
  for ((i = 0; i < REPEAT; i++)); do
    rm -f "$dstf"
    sync
    dd if="$src" iflag=nocache count=0 status=none
    for f in "$RUN"/srv/ferry*.out; do [ -f "$f" ] && : >"$f"; done
    local c0 c1 t0 t1 t2 rc
    c0=$(cpu_busy)
    local r0 r1
    r0=$(recv_cpu)
    t0=$(date +%s.%N)
    timeout "$TMO" ip netns exec "$ns" "$@" >"$RUN/last.out" 2>"$RUN/last.err"
    rc=$?
    t1=$(date +%s.%N)
    [ -f "$dstf" ] && sync "$dstf"
    t2=$(date +%s.%N)
    c1=$(cpu_busy)
    r1=$(recv_cpu)
    local got sum status=ok steady=-
    got=$(stat -c %s "$dstf" 2>/dev/null || echo 0)
    [ $rc = 124 ] && status=timeout
    [ $rc != 0 ] && [ $rc != 124 ] && status="rc=$rc"
    if [ "$tool" != "${tool#ferry}" ]; then
      # ferry's steady-state rate, and both ends' stage timing for the record.
      local sj rj
      sj=$(grep -a '^{' "$RUN/last.out" 2>/dev/null | tail -1)
      rj=$(cat "$RUN"/srv/ferry*.out 2>/dev/null | tr -d '\000' | grep -a '"event":"session"' | tail -1)
      steady=$(python3 -c 'import json,sys; print("%.3f" % json.loads(sys.stdin.read())["steady_gbit_per_s"])' \
        <<<"$sj" 2>/dev/null || echo -)
      # The receiver's CPU seconds per GB written (ticks of 1/CLK_TCK).
      printf '{"path":"%s","tool":"%s","options":"%s","load1":%s,"recv_cpu_s_per_gb":%s,"send":%s,"recv":%s}\n' \
        "$path" "$tool" "$opts" "$(cut -d' ' -f1 /proc/loadavg)" \
        "$(awk -v d=$((r1 - r0)) -v hz="$(getconf CLK_TCK)" -v b="$bytes" 'BEGIN{printf "%.3f", d / hz / (b / 1e9)}')" \
        "${sj:-null}" "${rj:-null}" >>"$OUT/ferry-runs.jsonl"
    fi
    if [ $NOFILE = 1 ]; then
      got=$bytes
      sum="digest checked by ferry"
      [ "$status" = ok ] || { sum=-; got=0; }
    elif [ "$got" = "$bytes" ]; then
      sum=$(xxhsum -H2 "$dstf" 2>/dev/null | cut -d' ' -f1)
      [ "$sum" = "$want" ] && sum=match || { sum=MISMATCH; status=bad; }
    else
      sum="size=$got"
      [ "$status" = ok ] && status=short
    fi
    if [ "$status" != ok ]; then
      # Keep what both ends said, for the next engineer (the next case overwrites them).
      local keep
      keep="$OUT/failed/$path-$tool-$(date +%H%M%S)"
      mkdir -p "$keep"
      cp "$RUN/last.out" "$RUN/last.err" "$keep/" 2>/dev/null
      cp "$RUN"/srv/*.out "$RUN"/srv/*.err "$keep/" 2>/dev/null
      echo "# $path $tool: $status; outputs kept in $keep" >&2
    fi
    python3 - "$path" "$tool" "$opts" "$status" "$t0" "$t1" "$t2" "$got" "$c0" "$c1" "$sum" "$steady" \
      "$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS" <<'PY'
import sys
p, tool, opts, st, t0, t1, t2, by, c0, c1, sm, steady, load = sys.argv[1:]
t0, t1, t2, by = float(t0), float(t1), float(t2), int(by)
b0, a0 = map(float, c0.split()); b1, a1 = map(float, c1.split())
cpu = 100.0 * (b1 - b0) / max(1.0, a1 - a0)
print(f"{p}\t{tool}\t{opts}\t{st}\t{t1-t0:.3f}\t{t2-t0:.3f}\t{by*8/(t2-t0)/1e9:.3f}\t{cpu:.0f}\t{sm}\t{steady}\t{load}")
PY
    tail -1 "$RESULTS" | awk -F'\t' '{printf "%-6s %-14s %-44s %-7s %7s %7s %8s %4s%% %-8s %7s %5s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
    [ "$status" = ok ] || tail -3 "$RUN/last.err" | sed 's/^/#   /'
  done
}

# TCP congestion controls to run iperf3 and ferry with: the system's default, and cubic when
# that is another one the kernel has (on BBR machines both tools are faster with cubic on the
# emulated path). Each tool's best run counts, so the network limit is iperf3's best.
SYS_CC=$(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null || echo "")
CCS=("")
grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null &&
  [ "$SYS_CC" != cubic ] && CCS+=(cubic)

# iperf_case PATH NS HOST CC [BYTES]: -t IPERF_S (the network limit, tool iperf3), or with
# BYTES -n BYTES (tool iperf3-n: the same bytes as one copy, ramp-up included; its own rate
# starts at its first byte, after its connections are set up).
iperf_case() {
  local path=$1 ns=$2 host=$3 cc=$4 n=${5:-} out g tool=iperf3 what
  local amount=(-t "$IPERF_S" -O 2)
  what="$IPERF_S s after 2 s omitted, memory to memory (network limit)"
  if [ -n "$n" ]; then
    tool=iperf3-n amount=(-n "$n") what="-n $n, memory to memory, rate from its first byte"
  fi
  ip netns exec "$NB" iperf3 -s -B "$host" -p 5401 -1 >/dev/null 2>&1 </dev/null &
  local spid=$!
  sleep 0.5
  out=$(timeout $((IPERF_S + 60)) ip netns exec "$ns" iperf3 -c "$host" -p 5401 "${amount[@]}" -P 8 \
    ${cc:+-C "$cc"} -J 2>/dev/null)
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  g=$(python3 -c 'import json,sys; print("%.3f" % (json.loads(sys.stdin.read())["end"]["sum_received"]["bits_per_second"]/1e9))' <<<"$out" 2>/dev/null || echo 0)
  printf '%s\t%s\t-P 8%s, %s\tok\t-\t-\t%s\t-\t-\t-\t%s\n' "$path" "$tool" "${cc:+ -C $cc}" "$what" "$g" \
    "$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS"
  printf '%-6s %-14s %-44s %-7s %7s %7s %8s\n' "$path" "$tool" "-P 8 ${cc:+-C $cc }${n:+-n $n }" ok - - "$g"
}

cases() { # PATH
  local p=$1 ns host
  if [ "$p" = lo ]; then ns=$NB host=127.0.0.1; else ns=$NA host=$IPB; fi
  local cc tok="$RUN/srv/token"
  for cc in "${CCS[@]}"; do
    iperf_case "$p" "$ns" "$host" "$cc"
  done
  if has ferry; then
    for cc in "${CCS[@]}"; do
      run_case "$p" ferry "${cc:+--congestion $cc, }streams from RTT and limits" "$ns" \
        "$FERRY" send "$SRC" "$host:7700" --token-file "$tok" --json ${cc:+--congestion "$cc"}
      # The same on the RAM-backed disk, source and destination (ferry's own write path).
      [ -n "$RAMDEV" ] && CASE_SRC="$RAMDIR_SRC/src/data.bin" CASE_DST="$RAMDIR/dst/data.bin" \
        run_case "$p" ferry-ram "${cc:+--congestion $cc, }RAM-backed disk at both ends" "$ns" \
        "$FERRY" send "$RAMDIR_SRC/src/data.bin" "$host:7704" --token-file "$tok" --json ${cc:+--congestion "$cc"}
    done
    if [ -n "$LONG_SIZE" ]; then
      for cc in "${CCS[@]}"; do
        CASE_SRC="$SRC_LONG" CASE_DST="$LONG_DST/long.bin" CASE_BYTES=$LONG_BYTES CASE_SUM=$SUM_LONG \
          run_case "$p" ferry-long "${cc:+--congestion $cc, }$LONG_SIZE to $LONG_WHERE" "$ns" \
          "$FERRY" send "$SRC_LONG" "$host:$LONG_PORT" --token-file "$tok" --json ${cc:+--congestion "$cc"}
      done
      rm -f "$LONG_DST/long.bin"
    fi
    # Without the destination disk, next to iperf3 moving the same bytes.
    for cc in "${CCS[@]}"; do
      iperf_case "$p" "$ns" "$host" "$cc" "$BYTES"
      NOFILE=1 run_case "$p" ferry-discard "${cc:+--congestion $cc, }receiver --discard (no destination disk)" \
        "$ns" "$FERRY" send "$SRC" "$host:7702" --token-file "$tok" --json ${cc:+--congestion "$cc"}
    done
    if [ "$p" != lo ]; then
      bash "$LFN" bufs default --name "$NAME" >/dev/null
      for cc in "${CCS[@]}"; do
        run_case "$p" ferry-defbuf "${cc:+--congestion $cc, }kernel default tcp_wmem/rmem" "$ns" \
          "$FERRY" send "$SRC" "$host:7700" --token-file "$tok" --json ${cc:+--congestion "$cc"}
      done
      bash "$LFN" bufs big --name "$NAME" >/dev/null
    fi
  fi
  if has xrdcp; then
    run_case "$p" xrdcp "--streams 8, 32 chunks x 16M in flight" "$ns" env XRD_CPPARALLELCHUNKS=32 \
      XRD_CPCHUNKSIZE=16777216 xrdcp -f --nopbar --streams 8 "$SRC" "root://$host:1094/$DST/data.bin"
  fi
  if has gridftp; then
    run_case "$p" globus-url-copy "-p 1 (stream mode)" "$ns" globus-url-copy "file://$SRC" "ftp://$host:2811$DST/data.bin"
    run_case "$p" globus-url-copy "-fast -p 8 -tcp-bs 16M -bs 4M" "$ns" globus-url-copy -fast -p 8 \
      -tcp-bs 16777216 -bs 4194304 "file://$SRC" "ftp://$host:2811$DST/data.bin"
  fi
  if has rsync; then
    run_case "$p" rsync "daemon, -W --inplace" "$ns" rsync -W --inplace "$SRC" "rsync://$host:8730/dst/data.bin"
  fi
  if has aria2; then
    local pull_ns=$NB src_host=$IPA
    [ "$p" = lo ] && src_host=127.0.0.1
    run_case "$p" aria2c "pull from nginx, -x16 -s16 -k64M" "$pull_ns" aria2c -q -x 16 -s 16 -k 64M \
      --file-allocation=none --allow-overwrite=true -d "$DST" -o data.bin "http://$src_host:8080/data.bin"
  fi
}

printf '%-6s %-14s %-44s %-7s %7s %7s %8s %5s %-8s %7s %5s\n' path tool options status tool_s total_s Gbit/s cpu checksum steady load
: >"$OUT/ferry-runs.jsonl"
for p in $PATHS; do
  bash "$LFN" down --name "$NAME" >/dev/null 2>&1
  case $p in
    lo) bash "$LFN" up --name "$NAME" --rtt 0ms --rate none --bufs big >/dev/null 2>&1 ;;
    lfn2g) bash "$LFN" up --name "$NAME" --rtt 100ms --rate 2gbit --bufs big >/dev/null 2>&1 ;;
    lfn10g) bash "$LFN" up --name "$NAME" --rtt 100ms --rate 10gbit --bufs big >/dev/null 2>&1 ;;
    *) echo "unknown path $p" >&2; continue ;;
  esac
  rc=$?
  [ $rc = 0 ] || { echo "bench/xfer: lfn.sh up failed ($rc)" >&2; exit $rc; }
  start_servers "$p"
  cases "$p"
  stop_servers
done

python3 "$HERE/report.py" "$RESULTS" "$OUT" "$DISK:$DISKW:$RAMR:$RAMW:$DISKC" "$BYTES" "$(uname -r)" "$(nproc)" \
  "$(cat /proc/loadavg)" "$LONG_BYTES"
gnuplot -e "datafile='$OUT/xfer.dat'; outfile='$OUT/xfer.png'" "$HERE/plot.gp" && echo "# plot: $OUT/xfer.png"
