#!/usr/bin/env bash
# ferry test bed self-test: origin on 127.0.0.1, the WAN namespace with an origin inside, and
# XCache (tuned) in front of it; checks bytes with xrdcp and cmp and that everything is gone
# afterwards. Exit 0 pass, 1 fail, 77 when the machine does not allow it (not root, no
# xrootd, no namespaces or NFQUEUE). Run by ctest (label integration) and by hand:
#   bash scripts/testbed/selftest.sh        (about 10 s)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/common.sh"
ftb_require_root
ftb_xrd_user_check
command -v xrdcp >/dev/null || ftb_skip "xrdcp is not installed (xrootd-client)"

FERRY_TB_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ferry-tb-selftest.XXXXXX")"
export FERRY_TB_DIR
NS="ftb-st$(($$ % 1000000))"
DATA="$FERRY_TB_DIR/data"
CACHE="$FERRY_TB_DIR/cache"
wan_up=""

cleanup() {
  local rc=$?
  bash "$HERE/xcache.sh" stop >/dev/null 2>&1 || true
  bash "$HERE/origin.sh" stop --name lo >/dev/null 2>&1 || true
  bash "$HERE/origin.sh" stop --name "$NS" >/dev/null 2>&1 || true
  [ -z "$wan_up" ] || bash "$HERE/wan.sh" down --name "$NS" >/dev/null 2>&1 || true
  rm -rf "$FERRY_TB_DIR"
  exit $rc
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}

bash "$HERE/gendata.sh" 3M "$DATA/a.bin" "$DATA/b.bin"
chmod -R a+rX "$DATA"

# 1. loopback origin
url="$(bash "$HERE/origin.sh" start --dir "$DATA" --name lo)"
[[ "$url" == root://127.0.0.1:* ]] || fail "origin url $url"
ftb_t xrdcp -s -f "${url}/a.bin" "$FERRY_TB_DIR/a.copy"
cmp -s "$DATA/a.bin" "$FERRY_TB_DIR/a.copy" || fail "loopback copy differs"
port="${url##*:}"
port="${port%/}"
listen="$(ss -Htln "sport = :$port" | awk '{print $4}')"
[[ "$listen" == *127.0.0.1*:"$port" && "$listen" != *$'\n'* ]] || fail "origin listens on '$listen', not only 127.0.0.1"
if ftb_t xrdcp -s -f "$FERRY_TB_DIR/a.copy" "${url}/upload.bin" 2>/dev/null; then
  fail "the origin accepted a write"
fi
bash "$HERE/origin.sh" stop --name lo
echo "PASS loopback origin ($url, listens on $listen only, read-only)"

# 2. WAN namespace (exit 77 passes through when namespaces are not permitted)
set +e
addr="$(bash "$HERE/wan.sh" up --name "$NS" --rtt 20ms --rate 200mbit)"
rc=$?
set -e
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "wan.sh up exited $rc"
wan_up=1
out="$(FERRY_TB_CHECK_SECONDS=1 bash "$HERE/wan.sh" check --name "$NS")"
echo "$out" | sed 's/^/    /'
# The fastest of the five handshakes: the delayer adds at least the set delay to every packet,
# and only a loaded machine (the delayer is a user-space process) adds more to some of them.
rtt="$(awk '/tcp connect/ {m = $6; for (i = 7; i <= NF; i++) if ($i + 0 < m + 0) m = $i; print m}' <<<"$out")"
awk -v r="$rtt" 'BEGIN{exit !(r >= 18 && r < 40)}' || fail "RTT $rtt ms, expected about 20"
wurl="$(bash "$HERE/origin.sh" start --netns "$NS" --dir "$DATA")"
[[ "$wurl" == "root://$addr:"* ]] || fail "wan origin url $wurl"
echo "PASS wan namespace $NS ($addr, rtt $rtt ms)"

# 3. XCache (tuned) in front of the WAN origin: cold and warm reads give the same bytes
hostport="${wurl#root://}"
hostport="${hostport%/}"
xurl="$(bash "$HERE/xcache.sh" start tuned --origin "$hostport" --cache-dir "$CACHE")"
rx() { bash "$HERE/wan.sh" bytes --name "$NS" | sed 's/rx_bytes=\([0-9]*\).*/\1/'; }
declare -A wan_rx
for pass in cold warm; do
  before="$(rx)"
  ftb_t xrdcp -s -f "${xurl}/b.bin" "$FERRY_TB_DIR/b.$pass"
  cmp -s "$DATA/b.bin" "$FERRY_TB_DIR/b.$pass" || fail "xcache $pass copy differs"
  wan_rx[$pass]=$(($(rx) - before))
done
[ "${wan_rx[cold]}" -ge 3145728 ] || fail "cold read moved only ${wan_rx[cold]} bytes over the WAN"
[ "${wan_rx[warm]}" -lt 1048576 ] || fail "warm read moved ${wan_rx[warm]} bytes over the WAN"
# XrdPfc writes the block map when it releases the file: poll for it (max 10 s).
want="file=/b.bin size=3145728 block=4096 blocks_downloaded=768 downloaded_bytes=3145728"
for ((i = 0; i < 100; i++)); do
  stats="$(bash "$HERE/xcache.sh" stats --cache-dir "$CACHE")"
  grep -q "^$want" <<<"$stats" && break
  sleep 0.1
done
grep -q "^$want" <<<"$stats" || fail "xcache stats: $stats"
bash "$HERE/xcache.sh" stop
echo "PASS xcache tuned ($xurl -> $hostport; WAN bytes cold ${wan_rx[cold]}, warm ${wan_rx[warm]})"

bash "$HERE/origin.sh" stop --name "$NS"
bash "$HERE/wan.sh" down --name "$NS"
wan_up=""
! ip netns list | awk '{print $1}' | grep -qx "$NS" || fail "namespace $NS left behind"
! ip link show "$NS-h" >/dev/null 2>&1 || fail "veth $NS-h left behind"
echo "PASS teardown"
echo "testbed selftest: 4 passed, 0 failed"
