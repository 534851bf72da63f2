# shellcheck shell=bash
# bench/lib/wan.sh: what the benchmarks over an emulated WAN (bench/cache_wan.sh,
# bench/proxy_wan.sh, bench/readahead_wan.sh) share, so that they set up, measure and clean up
# the link alike and their numbers compare. Sourced, not run:
#
#   ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
#   . "$ROOT/bench/lib/wan.sh"     # BUILD TB FERRY PY from ROOT (FERRY_BUILD_DIR)
#   WAN=ftb-xyz RTT=40ms RATE=1gbit OUT=...
#   wan_require NAME               # exit 77 (SKIP) without root or xrootd
#   stop_servers() { ...; }        # optional: its own servers (proxy, XCache), stopped on exit
#   wan_workdir /tmp/NAME.XXXXXX   # OUT, WORK, FERRY_TB_DIR, RUNS, NOPLUG; trap wan_cleanup EXIT
#   wan_up; wan_origin "$DATA"     # the link; ORIGIN, ORIGIN_HOSTPORT inside it
#   idle="$(idle_pct)"; rx0="$(rx_bytes)"; ...; rx1="$(rx_bytes)"
#
# Each benchmark keeps its own data, scenarios, JSON lines and report.

# For the benchmark that sources this file (hence shellcheck's SC2034, "unused", below).
BUILD="$(realpath "${FERRY_BUILD_DIR:-$ROOT/build/release}")"
TB="$ROOT/scripts/testbed"
# shellcheck disable=SC2034
FERRY="$BUILD/bin/ferry"
# shellcheck disable=SC2034
PY=/usr/bin/python3

# wan_require NAME: exits 77 (SKIP, the project's "cannot run here") where the machine cannot
# run a WAN benchmark: namespaces and `xrootd -R` need root.
wan_require() {
  [ "$(id -u)" = 0 ] || { echo "$1: SKIP: needs root" >&2; exit 77; }
  command -v xrootd >/dev/null || { echo "$1: SKIP: xrootd not installed" >&2; exit 77; }
}

# wan_workdir TEMPLATE: makes OUT and a world-readable work dir WORK (from the mktemp
# TEMPLATE; xrootd runs as its own account) holding the test bed's state (FERRY_TB_DIR, so
# wan_cleanup finds its PIDs), the JSON lines of the runs (RUNS, emptied) and NOPLUG, an
# empty XrdCl plug-in conf dir for clients that must not load a plug-in. From then on,
# wan_cleanup runs on exit.
wan_workdir() {
  mkdir -p "$OUT"
  WORK="$(mktemp -d "$1")"
  trap wan_cleanup EXIT
  chmod 755 "$WORK"
  export FERRY_TB_DIR="$WORK/tb"
  mkdir -p "$FERRY_TB_DIR"
  RUNS="$WORK/runs.jsonl"
  : >"$RUNS"
  NOPLUG="$WORK/noplugins"
  mkdir -p "$NOPLUG"
}

# wan_cleanup (the EXIT trap): stops the benchmark's own servers (its stop_servers, if it
# defines one), the origin inside the namespace, takes the link down and removes WORK. It
# never fails: an exit on error must still clean up all it can.
wan_cleanup() {
  if declare -F stop_servers >/dev/null; then stop_servers >/dev/null 2>&1 || true; fi
  bash "$TB/origin.sh" stop --name "$WAN" >/dev/null 2>&1 || true
  bash "$TB/wan.sh" down --name "$WAN" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}

# wan_up: the namespace WAN behind a link of RTT and RATE; exits 77 where namespaces are not
# allowed.
wan_up() {
  echo "== WAN: rtt $RTT, rate $RATE" >&2
  bash "$TB/wan.sh" up --name "$WAN" --rtt "$RTT" --rate "$RATE" >/dev/null || {
    rc=$?; [ $rc = 77 ] && exit 77; exit $rc; }
}

# wan_origin DIR [EXTRA_CFG]: an xrootd origin serving DIR inside the namespace: ORIGIN
# (root://HOST:PORT/) and ORIGIN_HOSTPORT (for a proxy's --origin). Plain, or with the
# directives in EXTRA_CFG added (security, a second protocol: origin.sh --extra).
wan_origin() {
  local extra=()
  [ -z "${2:-}" ] || extra=(--extra "$2")
  ORIGIN="$(bash "$TB/origin.sh" start --netns "$WAN" --dir "$1" --name "$WAN" "${extra[@]}")"
  ORIGIN_HOSTPORT="${ORIGIN#root://}"
  ORIGIN_HOSTPORT="${ORIGIN_HOSTPORT%/}"
}

# rx_bytes: bytes received so far by the host end of the link, i.e. what came from the origin
# over the WAN, on the wire (read it before and after a run).
rx_bytes() { bash "$TB/wan.sh" bytes --name "$WAN" | sed -n 's/.*rx_bytes=\([0-9]*\).*/\1/p'; }

# wan_sample_start FILE / wan_sample_stop: the link's received bytes sampled every 20 ms
# (bench/lib/link_sampler.py) from start to stop, into FILE ("seconds bytes" lines).
SAMPLER_PID=""
wan_sample_start() {
  "$PY" "$ROOT/bench/lib/link_sampler.py" "/sys/class/net/$WAN-h/statistics/rx_bytes" "$1" 3600 &
  SAMPLER_PID=$!
}
wan_sample_stop() {
  [ -n "$SAMPLER_PID" ] || return 0
  kill -TERM "$SAMPLER_PID" 2>/dev/null || true
  wait "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=""
}

# idle_pct: CPU idle % over the second before a run: the machine is shared, and a run with
# little idle CPU is slowed by others.
idle_pct() { vmstat 1 2 | tail -1 | awk '{print $15}'; }
