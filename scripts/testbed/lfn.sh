#!/usr/bin/env bash
# ferry test bed: a long fat network between two network namespaces, for `ferry send` and the
# bulk-transfer peers it is measured against (bench/xfer). wan.sh links the host to one
# namespace; this links two namespaces so that both ends have their own TCP buffer sysctls
# and nothing global is touched.
#
#   lfn.sh up     [--rtt 100ms] [--rate 2gbit|none] [--bufs big|default] [--name fxf-lfn]
#   lfn.sh bufs   big|default [--name fxf-lfn]
#   lfn.sh down   [--name fxf-lfn]
#   lfn.sh status [--name fxf-lfn]
#   lfn.sh a|b    [--name fxf-lfn] -- CMD...    run CMD in namespace NAME-a / NAME-b
#
#   NAME-a (10.213.250.1) ==veth== NAME-b (10.213.250.2)
#
# Rate: tbf on the egress of both veth ends; burst 1 ms at the rate (>= 256 KiB, so whole
# 64 KiB GSO packets pass), queue 25 ms at the rate. Delay: the kernel has no sch_netem, so
# each namespace sends the packets entering its veth (iptables mangle PREROUTING -> NFQUEUE
# --queue-bypass) to tools/nfqdelay.c, which releases them RTT/2 later; the delay sits after
# the bottleneck, on the receive side, so TCP small queues do not throttle the sender.
# Buffers: net.ipv4.tcp_rmem/tcp_wmem inside both namespaces: "big" lets autotuning reach
# 256 MiB, "default" copies the host's values (an untuned machine). net.core.*mem_max are
# global and left alone (ferry and iperf3 rely on autotuning).
# State (delayer PIDs, logs) in $FERRY_LFN_DIR (default /tmp/fxf-lfn-NAME). Exit 77 when the
# machine does not allow namespaces, veth, tbf or NFQUEUE.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

usage() {
  sed -n '7,11p' "${BASH_SOURCE[0]}" | sed 's/^#  //' >&2
  exit 2
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
rtt="100ms" rate="2gbit" bufs="big" name="fxf-lfn"
while [ $# -gt 0 ]; do
  case "$1" in
    --rtt) rtt="${2:?}"; shift 2 ;;
    --rate) rate="${2:?}"; shift 2 ;;
    --bufs) bufs="${2:?}"; shift 2 ;;
    --name) name="${2:?}"; shift 2 ;;
    --) shift; break ;;
    big | default) [ "$cmd" = bufs ] || usage; bufs="$1"; shift ;;
    *) usage ;;
  esac
done
[[ "$name" =~ ^fxf-[a-z0-9]{1,6}$ ]] || ftb_die "--name must be fxf- followed by 1-6 of [a-z0-9]"
NA="$name-a" NB="$name-b" VA="${name#fxf-}va" VB="${name#fxf-}vb"
IPA=10.213.250.1 IPB=10.213.250.2
ST="${FERRY_LFN_DIR:-${TMPDIR:-/tmp}/fxf-lfn-${name#fxf-}}"
COMMENT="ferry-lfn:$name"
BIG=268435456

ns_exists() { ip netns list | awk '{print $1}' | grep -qx -- "$1"; }
pick_iptables() {
  local c
  for c in iptables iptables-legacy; do
    if command -v "$c" >/dev/null && ip netns exec "$NA" timeout 10 "$c" -w 5 -t mangle -S PREROUTING >/dev/null 2>&1; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

set_bufs() { # big|default
  local ns r w
  case "$1" in
    big) r="4096 131072 $BIG" w="4096 16384 $BIG" ;;
    default) r="$(cat "$ST/host_rmem")" w="$(cat "$ST/host_wmem")" ;;
    *) usage ;;
  esac
  for ns in "$NA" "$NB"; do
    ftb_t ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_rmem="$r" net.ipv4.tcp_wmem="$w"
  done
  echo "$1" >"$ST/bufs"
}

# Removes everything this name may have made; safe on a half-made or absent setup. Deleting a
# namespace removes its veth end, qdiscs and iptables rules with it.
teardown() {
  local f
  for f in "$ST"/delay-*.pid; do
    [ -f "$f" ] && ftb_stop_pidfile "$f" nfqdelay
  done
  ns_exists "$NA" && ftb_t ip netns del "$NA"
  ns_exists "$NB" && ftb_t ip netns del "$NB"
  rm -f "$ST"/*.queue "$ST"/config
  return 0
}

start_delayer() { # NS VETH IPTABLES HALF_US
  local ns="$1" dev="$2" ipt="$3" half="$4" i
  rm -f "$ST/delay-$ns.queue"
  ip netns exec "$ns" "$ST/bin/nfqdelay" --queues 3100-3163 --delay-us "$half" \
    --ready-file "$ST/delay-$ns.queue" --lifetime-s "${FERRY_LFN_LIFETIME_S:-21600}" \
    >"$ST/delay-$ns.log" 2>&1 </dev/null &
  echo $! >"$ST/delay-$ns.pid"
  for ((i = 0; i < 50; i++)); do
    [ -s "$ST/delay-$ns.queue" ] && break
    sleep 0.1
  done
  [ -s "$ST/delay-$ns.queue" ] || { cat "$ST/delay-$ns.log" >&2; ftb_skip "the NFQUEUE delayer did not start in $ns"; }
  ftb_t ip netns exec "$ns" "$ipt" -w 5 -t mangle -A PREROUTING -i "$dev" \
    -m comment --comment "$COMMENT" -j NFQUEUE --queue-num "$(cat "$ST/delay-$ns.queue")" \
    --queue-bypass || ftb_skip "NFQUEUE target not available"
}

up() {
  ftb_require_root
  ns_exists "$NA" && ftb_die "$NA exists already (lfn.sh down --name $name first)"
  mkdir -p "$ST/bin"
  command -v tc >/dev/null || ftb_skip "tc (iproute2) is not installed"
  local half_us=$(($(ftb_to_us "$rtt") / 2))
  trap 'rc=$?; [ $rc = 0 ] || teardown; exit $rc' EXIT
  if [ "$half_us" -gt 0 ]; then
    ftb_build_c "$ST/bin/nfqdelay" "$FTB_HERE/tools/nfqdelay.c" -lnetfilter_queue -lnfnetlink
  fi
  sysctl -n net.ipv4.tcp_rmem >"$ST/host_rmem"
  sysctl -n net.ipv4.tcp_wmem >"$ST/host_wmem"
  ftb_t ip netns add "$NA" || ftb_skip "network namespaces are not permitted here"
  ftb_t ip netns add "$NB"
  ftb_t ip link add "$VA" netns "$NA" type veth peer name "$VB" netns "$NB" ||
    ftb_skip "cannot create a veth pair"
  ftb_t ip -n "$NA" addr add "$IPA/24" dev "$VA"
  ftb_t ip -n "$NB" addr add "$IPB/24" dev "$VB"
  local ns
  for ns in "$NA" "$NB"; do ftb_t ip -n "$ns" link set lo up; done
  ftb_t ip -n "$NA" link set "$VA" up
  ftb_t ip -n "$NB" link set "$VB" up
  if [ "$rate" != none ]; then
    local bps burst limit
    case "${rate,,}" in
      *gbit | *mbit) ;;
      *) ftb_die "rate must end in gbit or mbit, or be none: $rate" ;;
    esac
    bps="$(ftb_to_bps "$rate")"
    burst=$((bps / 8 / 1000))
    [ "$burst" -ge 262144 ] || burst=262144
    limit=$((bps / 8 * 25 / 1000))
    [ "$limit" -ge $((2 * burst)) ] || limit=$((2 * burst))
    ftb_t ip netns exec "$NA" tc qdisc add dev "$VA" root tbf rate "$bps"bit burst "$burst" limit "$limit" ||
      ftb_skip "tbf qdisc not available"
    ftb_t ip netns exec "$NB" tc qdisc add dev "$VB" root tbf rate "$bps"bit burst "$burst" limit "$limit"
  fi
  if [ "$half_us" -gt 0 ]; then
    local ipt
    ipt="$(pick_iptables)" || ftb_skip "no usable iptables (mangle table) here"
    start_delayer "$NA" "$VA" "$ipt" "$half_us"
    start_delayer "$NB" "$VB" "$ipt" "$half_us"
  fi
  set_bufs "$bufs"
  trap - EXIT
  printf 'rtt=%s rate=%s a=%s b=%s\n' "$rtt" "$rate" "$IPA" "$IPB" >"$ST/config"
  ftb_note "lfn $name up: $NA $IPA <-> $NB $IPB, rtt $rtt, rate $rate, bufs $bufs"
}

status() {
  if ! ns_exists "$NA"; then
    echo "lfn $name: down"
    return 1
  fi
  echo "lfn $name: $(cat "$ST/config" 2>/dev/null) bufs=$(cat "$ST/bufs" 2>/dev/null)"
  echo "  tcp_rmem=[$(ip netns exec "$NA" sysctl -n net.ipv4.tcp_rmem)] tcp_wmem=[$(ip netns exec "$NA" sysctl -n net.ipv4.tcp_wmem)]"
  # ping -U times user to user (plain ping stamps before the receive-side delay).
  ip netns exec "$NA" timeout 10 ping -U -c 3 -i 0.2 -W 2 "$IPB" | tail -1 | sed 's/^/  ping -U a->b: /'
}

case "$cmd" in
  up) up ;;
  down) ftb_require_root; teardown; ftb_note "lfn $name down"; rm -rf "$ST" ;;
  bufs) ns_exists "$NA" || ftb_die "lfn $name is down"; set_bufs "$bufs"; status ;;
  status) status ;;
  a) exec ip netns exec "$NA" "$@" ;;
  b) exec ip netns exec "$NB" "$@" ;;
  *) usage ;;
esac
