#!/usr/bin/env bash
# ferry test bed: an emulated wide-area link to a "remote site" network namespace.
#
#   wan.sh up     [--rtt 40ms] [--rate 1gbit] [--name ftb-wan]   prints the namespace address
#   wan.sh down   [--name ftb-wan]
#   wan.sh status [--name ftb-wan]
#   wan.sh check  [--name ftb-wan]   TCP connect RTT and iperf3 throughput over the link
#   wan.sh bytes  [--name ftb-wan]   "rx_bytes=N tx_bytes=N" of the host end (rx = from the
#                                     remote site): take two readings around a benchmark run
#
# Layout: namespace NAME, veth pair NAME-h (host side) <-> NAME-n (inside), a private /30 that
# exists only on that pair (picked so that it does not collide with addresses on the host).
# Rate: tbf on the egress of both ends. Delay: this kernel has no sch_netem, so each side runs
# tools/nfqdelay.c, which holds every packet *entering* that side (iptables mangle PREROUTING
# -> NFQUEUE --queue-bypass) for RTT/2; if a delayer dies, traffic flows undelayed.
# Inside the namespace tcp_wmem/tcp_rmem allow 4x the bandwidth-delay product.
# Start an origin inside with: origin.sh start --netns NAME --dir DATA
#
# Exit 77 when the machine does not allow namespaces, veth, tbf or NFQUEUE (tests skip).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

usage() {
  echo "usage: wan.sh up|down|status|check|bytes [--rtt 40ms] [--rate 1gbit] [--name ftb-XXX]" >&2
  exit 2
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
rtt="40ms" rate="1gbit" name="ftb-wan"
while [ $# -gt 0 ]; do
  case "$1" in
    --rtt) rtt="${2:?}"; shift 2 ;;
    --rate) rate="${2:?}"; shift 2 ;;
    --name) name="${2:?}"; shift 2 ;;
    *) usage ;;
  esac
done
[[ "$name" =~ ^ftb-[a-z0-9]{1,8}$ ]] || ftb_die "--name must be ftb- followed by 1-8 of [a-z0-9]"
vh="$name-h" vn="$name-n"
NSX=(ip netns exec "$name")
COMMENT="ferry-tb:$name"

ns_exists() { ip netns list | awk '{print $1}' | grep -qx -- "$name"; }

pick_iptables() {
  local c
  for c in iptables iptables-legacy; do
    if command -v "$c" >/dev/null && ftb_t "$c" -w 5 -t mangle -S PREROUTING >/dev/null 2>&1; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

# A free 10.254.X.0/30 (host .1, namespace .2): X such that no host interface uses 10.254.X.*.
pick_subnet() {
  local used i x
  used="$(ip -4 -o addr show | awk '{print $4}')"
  x=$(($(cksum <<<"$name" | awk '{print $1}') % 250 + 1))
  for ((i = 0; i < 250; i++)); do
    if ! grep -q "^10\.254\.$x\." <<<"$used"; then
      echo "10.254.$x"
      return 0
    fi
    x=$((x % 250 + 1))
  done
  ftb_die "no free 10.254.X.0/30 subnet"
}

# Remove everything this name may have created. Safe to run on a half-made or absent setup.
teardown() {
  local st="$FTB_DIR/wan-$name" ipt rules
  for ipt in iptables iptables-legacy; do
    command -v "$ipt" >/dev/null || continue
    rules="$(ftb_t "$ipt" -w 5 -t mangle -S PREROUTING 2>/dev/null | grep -F -- "$COMMENT" || true)"
    while IFS= read -r r; do
      [ -n "$r" ] || continue
      # "-A PREROUTING ..." -> "-D PREROUTING ..."; the rule text has no shell metacharacters.
      read -r -a words <<<"${r/#-A /-D }"
      ftb_t "$ipt" -w 5 -t mangle "${words[@]//\"/}" 2>/dev/null || true
    done <<<"$rules"
  done
  ftb_stop_pidfile "$st/nfqdelay-host.pid" ferry_tb_nfqdelay
  ftb_stop_pidfile "$st/nfqdelay-ns.pid" ferry_tb_nfqdelay
  ftb_stop_pidfile "$st/iperf3.pid" iperf3
  if ip link show "$vh" >/dev/null 2>&1; then ftb_t ip link del "$vh" || true; fi
  if ns_exists; then ftb_t ip netns del "$name" || true; fi
  rm -f "$st"/*.queue "$st/addr"
}

start_delayer() { # start_delayer host|ns
  local side="$1" st="$FTB_DIR/wan-$name" pre=() i
  [ "$side" = ns ] && pre=("${NSX[@]}")
  rm -f "$st/nfqdelay-$side.queue"
  "${pre[@]}" "$FTB_DIR/bin/ferry_tb_nfqdelay" --queues 3100-3163 --delay-us "$half_us" \
    --ready-file "$st/nfqdelay-$side.queue" --lifetime-s "${FERRY_TB_WAN_LIFETIME_S:-43200}" \
    >"$st/nfqdelay-$side.log" 2>&1 </dev/null &
  echo $! >"$st/nfqdelay-$side.pid"
  for ((i = 0; i < 50; i++)); do
    [ -s "$st/nfqdelay-$side.queue" ] && return 0
    ftb_pid_alive "$(cat "$st/nfqdelay-$side.pid")" || break  # may not have exec'd yet
    sleep 0.1
  done
  cat "$st/nfqdelay-$side.log" >&2
  ftb_skip "the NFQUEUE delayer could not bind a queue ($side side)"
}

up() {
  ftb_require_root
  ftb_state_init create
  local st="$FTB_DIR/wan-$name"
  mkdir -p "$st"
  if ns_exists; then
    ftb_note "namespace $name exists already"
    [ -f "$st/addr" ] || ftb_die "namespace $name exists but was not made with this FERRY_TB_DIR"
    cat "$st/addr"
    return 0
  fi
  local ipt
  ipt="$(pick_iptables)" || ftb_skip "no usable iptables (mangle table) here"
  command -v tc >/dev/null || ftb_skip "tc (iproute2) is not installed"
  half_us=$(($(ftb_to_us "$rtt") / 2))
  [ "$half_us" -gt 0 ] || ftb_die "bad --rtt $rtt"
  local bps
  bps="$(ftb_to_bps "$rate")"
  ftb_build_c "$FTB_DIR/bin/ferry_tb_nfqdelay" "$FTB_HERE/tools/nfqdelay.c" \
    -lnetfilter_queue -lnfnetlink

  # shellcheck disable=SC2154  # rc is assigned inside the trap
  trap 'rc=$?; [ $rc = 0 ] || teardown; exit $rc' EXIT
  ftb_t ip netns add "$name" 2>"$st/netns.err" ||
    ftb_skip "network namespaces are not permitted here: $(cat "$st/netns.err")"
  ftb_t ip link add "$vh" type veth peer name "$vn" netns "$name" ||
    ftb_skip "cannot create a veth pair"
  local net
  net="$(pick_subnet)"
  ftb_t ip addr add "$net.1/30" dev "$vh"
  ftb_t ip link set "$vh" up
  ftb_t "${NSX[@]}" ip link set lo up
  ftb_t "${NSX[@]}" ip addr add "$net.2/30" dev "$vn"
  ftb_t "${NSX[@]}" ip link set "$vn" up

  # Socket buffers inside the namespace (its own copy of these sysctls): 4x BDP, >= 16 MiB.
  local bdp buf
  bdp=$((bps * half_us * 2 / 8 / 1000000))
  buf=$((bdp * 4 > 16777216 ? bdp * 4 : 16777216))
  ftb_t "${NSX[@]}" sysctl -q -w net.ipv4.tcp_wmem="4096 65536 $buf" net.ipv4.tcp_rmem="4096 131072 $buf"

  # Rate on the egress of each end; burst = 2 ms at the rate (>= 32 KiB).
  local burst=$((bps / 8 / 500))
  [ "$burst" -ge 32768 ] || burst=32768
  ftb_t tc qdisc add dev "$vh" root tbf rate "$bps"bit burst "$burst" latency 20ms ||
    ftb_skip "tbf qdisc not available"
  ftb_t "${NSX[@]}" tc qdisc add dev "$vn" root tbf rate "$bps"bit burst "$burst" latency 20ms

  # Delay: packets entering each side wait RTT/2 in that side's delayer.
  start_delayer host
  start_delayer ns
  ftb_t "$ipt" -w 5 -t mangle -A PREROUTING -i "$vh" -m comment --comment "$COMMENT" \
    -j NFQUEUE --queue-num "$(cat "$st/nfqdelay-host.queue")" --queue-bypass ||
    ftb_skip "NFQUEUE target not available"
  ftb_t "${NSX[@]}" "$ipt" -w 5 -t mangle -A PREROUTING -i "$vn" -m comment --comment "$COMMENT" \
    -j NFQUEUE --queue-num "$(cat "$st/nfqdelay-ns.queue")" --queue-bypass
  trap - EXIT

  echo "$net.2" >"$st/addr"
  printf 'rtt=%s rate=%s host=%s.1 ns=%s.2 iptables=%s sockbuf_max=%s\n' \
    "$rtt" "$rate" "$net" "$net" "$ipt" "$buf" >"$st/config"
  ftb_note "wan $name up: host $net.1 <-> $net.2 (inside), rtt $rtt, rate $rate"
  echo "$net.2"
}

down() {
  ftb_require_root
  ftb_state_init existing
  teardown
  ftb_note "wan $name down"
}

status() {
  ftb_state_init existing
  if ! ns_exists; then
    echo "wan $name: down"
    return 1
  fi
  echo "wan $name: up, $(cat "$FTB_DIR/wan-$name/config" 2>/dev/null || echo '(no state here)')"
  tc qdisc show dev "$vh" 2>/dev/null || true
  local side
  for side in host ns; do
    if ftb_pid_alive "$(cat "$FTB_DIR/wan-$name/nfqdelay-$side.pid" 2>/dev/null)" ferry_tb_nfqdelay; then
      echo "delayer $side: running, queue $(cat "$FTB_DIR/wan-$name/nfqdelay-$side.queue")"
    else
      echo "delayer $side: NOT running (traffic is not delayed)"
    fi
  done
}

check() {
  ftb_state_init existing
  ns_exists || ftb_die "wan $name is down"
  command -v iperf3 >/dev/null || ftb_skip "iperf3 is not installed"
  CHECK_ST="$FTB_DIR/wan-$name"
  local st="$CHECK_ST" addr port
  addr="$(cat "$st/addr")"
  port="$(ftb_free_port "$name")"
  "${NSX[@]}" iperf3 -s -B "$addr" -p "$port" >"$st/iperf3.log" 2>&1 </dev/null &
  echo $! >"$st/iperf3.pid"
  trap 'ftb_stop_pidfile "$CHECK_ST/iperf3.pid" iperf3' EXIT
  ftb_wait_tcp "$addr" "$port" "" 10 || ftb_die "iperf3 did not start in $name"
  # One TCP handshake = one round trip through both delayers (timed in-process: no fork).
  ftb_t /usr/bin/python3 - "$addr" "$port" <<'PY'
import socket, sys, time
ms = []
for _ in range(5):
    s = socket.socket()
    s.settimeout(5)
    t = time.perf_counter()
    s.connect((sys.argv[1], int(sys.argv[2])))
    ms.append((time.perf_counter() - t) * 1e3)
    s.close()
    time.sleep(0.2)
print("tcp connect (1 RTT) ms: " + " ".join("%.1f" % x for x in ms))
PY
  local dir json bps
  for dir in download upload; do
    local flag=()
    [ "$dir" = download ] && flag=(-R)  # -R: the namespace side sends
    sleep 0.5
    json="$(ftb_t iperf3 -c "$addr" -p "$port" -t "${FERRY_TB_CHECK_SECONDS:-5}" "${flag[@]}" -J 2>&1)" ||
      ftb_die "iperf3 failed: $json"
    bps="$(sed -n '/"sum_received"/,/}/s/.*"bits_per_second":[[:space:]]*\([0-9.e+]*\).*/\1/p' <<<"$json" | head -n 1)"
    awk -v b="$bps" -v d="$dir" 'BEGIN{printf "iperf3 %s (1 stream): %.0f Mbit/s = %.1f MB/s\n", d, b / 1e6, b / 8e6}'
  done
}

bytes() {
  local rx tx
  rx="$(cat "/sys/class/net/$vh/statistics/rx_bytes" 2>/dev/null)" || ftb_die "wan $name is down"
  tx="$(cat "/sys/class/net/$vh/statistics/tx_bytes")"
  echo "rx_bytes=$rx tx_bytes=$tx"
}

case "$cmd" in
  up) up ;;
  bytes) bytes ;;
  down) down ;;
  status) status ;;
  check) check ;;
  *) usage ;;
esac
