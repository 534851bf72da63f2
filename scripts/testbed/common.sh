# shellcheck shell=bash
# ferry test bed: settings and helpers shared by origin.sh, wan.sh and xcache.sh. Sourced only.
#
# State (PID files, configs, logs, compiled helpers) lives in $FERRY_TB_DIR. When it is unset,
# a `start`/`up` makes a fresh directory with mktemp and tells you to export it; the matching
# `stop`/`down` needs the same FERRY_TB_DIR. Nothing is ever written next to the scripts.
#
# Rules every script follows: each external command is bounded (ftb_t), every process started
# is recorded in a PID file and stopped by that PID only, and a failing start undoes itself.

FTB_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FTB_XRD_USER="${FERRY_TB_XRD_USER:-xrootd}"  # xrootd refuses root; -R drops to this account
FTB_CMD_TIMEOUT="${FERRY_TB_CMD_TIMEOUT:-30}"  # seconds, for any single command
FTB_DIR=""

ftb_note() { echo "ftb: $*" >&2; }
ftb_die() {
  echo "ftb: ERROR: $*" >&2
  exit 1
}
# Exit 77: the machine does not allow what the script needs (tests report it as skipped).
ftb_skip() {
  echo "ftb: SKIP: $*" >&2
  exit 77
}

# ftb_t CMD...: run CMD bounded by FTB_CMD_TIMEOUT seconds.
ftb_t() { timeout --kill-after=5 "$FTB_CMD_TIMEOUT" "$@"; }

ftb_require_root() { [ "$(id -u)" = 0 ] || ftb_skip "needs root (namespaces, -R $FTB_XRD_USER)"; }

# ftb_state_init create|existing: sets FTB_DIR from FERRY_TB_DIR, or makes a per-run directory.
ftb_state_init() {
  if [ -n "${FERRY_TB_DIR:-}" ]; then
    FTB_DIR="$FERRY_TB_DIR"
    mkdir -p "$FTB_DIR"
  elif [ "$1" = create ]; then
    FTB_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ferry-tb.XXXXXX")"
    ftb_note "state in $FTB_DIR; for later commands: export FERRY_TB_DIR=$FTB_DIR"
  else
    ftb_die "FERRY_TB_DIR is not set (the start/up command printed it)"
  fi
  # The state dir holds configs and logs that the xrootd account reads and writes.
  chmod 0755 "$FTB_DIR"
  export FERRY_TB_DIR="$FTB_DIR"
}

# ftb_pid_alive PID [EXE]: true when PID runs (zombies count as dead) and, if EXE is given,
# its argv[0] base name is EXE.
ftb_pid_alive() {
  local pid="$1" want="${2:-}" state argv0
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  [ -n "$state" ] && [ "$state" != Z ] || return 1
  [ -z "$want" ] && return 0
  argv0="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1 || true)"
  [ "$(basename -- "$argv0")" = "$want" ]
}

# ftb_stop_pidfile FILE EXE: SIGTERM the PID recorded in FILE (only if it still is EXE), SIGKILL
# after 5 s, remove FILE.
ftb_stop_pidfile() {
  local f="$1" exe="$2" pid i
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if ftb_pid_alive "$pid" "$exe"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      ftb_pid_alive "$pid" "$exe" || break
      sleep 0.1
    done
    if ftb_pid_alive "$pid" "$exe"; then
      kill -KILL "$pid" 2>/dev/null || true
      ftb_note "killed $exe pid $pid (did not stop on SIGTERM)"
    else
      ftb_note "stopped $exe pid $pid"
    fi
  fi
  rm -f "$f"
}

# "40ms" | "40" | "0.5ms" | "40000us" -> microseconds
ftb_to_us() {
  local v="$1"
  case "$v" in
    *us) echo "${v%us}" ;;
    *ms) awk -v x="${v%ms}" 'BEGIN{printf "%d", x * 1000}' ;;
    *s) awk -v x="${v%s}" 'BEGIN{printf "%d", x * 1000000}' ;;
    *) awk -v x="$v" 'BEGIN{printf "%d", x * 1000}' ;;
  esac
}
# "10gbit" | "100mbit" | "500kbit" | "1500bit" -> bits per second. %.0f, not %d: mawk's %d
# saturates at 2^31 (a 10gbit rate became 2.147 Gbit/s).
ftb_to_bps() {
  local v="${1,,}"
  case "$v" in
    *gbit) awk -v x="${v%gbit}" 'BEGIN{printf "%.0f", x * 1e9}' ;;
    *mbit) awk -v x="${v%mbit}" 'BEGIN{printf "%.0f", x * 1e6}' ;;
    *kbit) awk -v x="${v%kbit}" 'BEGIN{printf "%.0f", x * 1e3}' ;;
    *bit) echo "${v%bit}" ;;
    *) ftb_die "rate must end in gbit, mbit, kbit or bit: $1" ;;
  esac
}

# ftb_build_c OUT SRC [LIBS...]: compile one C file with cc into OUT when OUT is missing or older.
ftb_build_c() {
  local out="$1" src="$2"
  shift 2
  mkdir -p "$(dirname "$out")"
  if [ ! -e "$out" ] || [ "$src" -nt "$out" ]; then
    command -v cc >/dev/null || ftb_die "no C compiler (apt-get install gcc)"
    local flags=(-O2 -Wall -Wextra)
    [[ "$out" == *.so ]] && flags+=(-fPIC -shared)
    ftb_t cc "${flags[@]}" -o "$out.tmp.$$" "$src" "$@" || ftb_die "cannot compile $src"
    mv -f "$out.tmp.$$" "$out"
  fi
}

# ftb_bindshim: path of the bind shim; $FERRY_TB_BINDSHIM (built by CMake) or compiled here.
ftb_bindshim() {
  if [ -n "${FERRY_TB_BINDSHIM:-}" ] && [ -f "$FERRY_TB_BINDSHIM" ]; then
    echo "$FERRY_TB_BINDSHIM"
    return 0
  fi
  local out="$FTB_DIR/bin/libferry_tb_bindshim.so"
  ftb_build_c "$out" "$FTB_HERE/tools/bindshim.c" -ldl
  chmod 0755 "$FTB_DIR/bin" "$out"
  echo "$out"
}

# ftb_nsexec NS CMD...: CMD inside namespace NS, or directly when NS is empty.
ftb_nsexec() {
  local ns="$1"
  shift
  if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# ftb_wait_tcp HOST PORT NS SECONDS: wait until HOST:PORT accepts a TCP connection.
ftb_wait_tcp() {
  local host="$1" port="$2" ns="$3" secs="$4" i
  for ((i = 0; i < secs * 10; i++)); do
    if ftb_nsexec "$ns" timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# ftb_free_port NS: a TCP port in 20000-29999 with no listener (in NS, or on the host).
ftb_free_port() {
  local ns="$1" i p used
  used="$(ftb_nsexec "$ns" timeout 10 ss -Htln | awk '{n=split($4,a,":"); print a[n]}' | sort -u)"
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 10000))
    if ! grep -qx "$p" <<<"$used"; then
      echo "$p"
      return 0
    fi
  done
  ftb_die "no free TCP port found"
}

# ftb_xrd_user_check: the unprivileged account xrootd runs as exists.
ftb_xrd_user_check() {
  command -v xrootd >/dev/null || ftb_skip "xrootd is not installed (scripts/install-deps.sh)"
  getent passwd "$FTB_XRD_USER" >/dev/null ||
    ftb_die "account $FTB_XRD_USER missing (it comes with xrootd-server)"
}

# ftb_xrd_can_read DIR: the xrootd account can list DIR (every parent must be traversable;
# /root, for example, is not).
ftb_xrd_can_read() {
  runuser -u "$FTB_XRD_USER" -- test -r "$1" -a -x "$1"
}

# ftb_ns_addr NS: the IPv4 address of the namespace's non-loopback interface.
ftb_ns_addr() {
  ip netns exec "$1" ip -4 -o addr show scope global | awk '{split($4,a,"/"); print a[1]; exit}'
}

# ftb_python: an interpreter that can import Debian's XRootD bindings.
ftb_python() {
  local c
  for c in /usr/bin/python3 python3; do
    if "$c" -c 'import XRootD.client' >/dev/null 2>&1; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

# ftb_pid_listens NS PORT PID: PID itself listens on TCP PORT. A connection test is not enough:
# when another test's server took the same port a moment earlier, it would answer for ours.
ftb_pid_listens() {
  ftb_nsexec "$1" timeout 2 ss -Htlnp "sport = :$2" 2>/dev/null | grep -q "pid=$3,"
}

# ftb_start_xrootd RUN HOST NS PORT CFG_FUNC: start xrootd (as $FTB_XRD_USER, listening only on
# HOST, inside namespace NS when not empty) with the config that `CFG_FUNC PORT` prints, and
# wait until it accepts connections. PORT empty: a free port, retried (3 tries) when another
# process takes it first. PID in RUN/xrootd.pid.ours, logs in RUN/var. Prints the port.
ftb_start_xrootd() {
  local run="$1" host="$2" ns="$3" fixed="$4" cfg_func="$5" shim attempt port i up pid
  shim="$(ftb_bindshim)"
  for ((attempt = 0; attempt < 3; attempt++)); do
    port="${fixed:-$(ftb_free_port "$ns")}"
    "$cfg_func" "$port" >"$run/xrootd.cfg"
    rm -f "$run/var/xrootd.log" "$run/var/xrootd.pid"
    # `ip netns exec` and `env` exec their command, so $! is the PID of xrootd itself.
    if [ -n "$ns" ]; then
      env FERRY_TB_BIND_ADDR="$host" LD_PRELOAD="$shim" ip netns exec "$ns" \
        xrootd -R "$FTB_XRD_USER" -c "$run/xrootd.cfg" -l "$run/var/xrootd.log" \
        -s "$run/var/xrootd.pid" >"$run/stdout.log" 2>&1 </dev/null &
    else
      env FERRY_TB_BIND_ADDR="$host" LD_PRELOAD="$shim" \
        xrootd -R "$FTB_XRD_USER" -c "$run/xrootd.cfg" -l "$run/var/xrootd.log" \
        -s "$run/var/xrootd.pid" >"$run/stdout.log" 2>&1 </dev/null &
    fi
    pid=$!
    echo "$pid" >"$run/xrootd.pid.ours"
    up=""
    for ((i = 0; i < 200; i++)); do  # 20 s
      # No name check here: right after the fork the PID may still be `env` or `ip`.
      ftb_pid_alive "$pid" || break
      if ftb_pid_listens "$ns" "$port" "$pid"; then
        up=1
        break
      fi
      sleep 0.1
    done
    if [ -n "$up" ]; then
      echo "$port"
      return 0
    fi
    ftb_stop_pidfile "$run/xrootd.pid.ours" xrootd
    if [ -z "$fixed" ] && grep -qs "already in use" "$run/stdout.log" "$run/var/xrootd.log"; then
      ftb_note "port $port was taken meanwhile; trying another"
      continue
    fi
    break
  done
  tail -n 20 "$run/stdout.log" "$run/var/xrootd.log" >&2 2>/dev/null || true
  ftb_die "xrootd ($run) did not accept connections on $host:${port:-?} within 20 s"
}
