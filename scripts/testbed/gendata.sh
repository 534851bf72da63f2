#!/usr/bin/env bash
# ferry test bed: make deterministic pseudo-random data files (tools/gendata.c).
#
#   gendata.sh [--seed N] [--keep] SIZE FILE...     SIZE: bytes, or with K/M/G (1024-based)
#   e.g. gendata.sh --keep 200M /srv/ftb/data/f{00..07}.bin
#
# The files must be readable by the xrootd account to be served: put them under /tmp or /srv,
# not under /root. The compiled tool goes to $FERRY_TB_DIR/bin (a temp dir when unset).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
[ $# -ge 2 ] || { echo "usage: gendata.sh [--seed N] [--keep] SIZE FILE..." >&2; exit 2; }
if [ -z "${FERRY_TB_DIR:-}" ]; then
  FTB_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ferry-tb.XXXXXX")"
  trap 'rm -rf "$FTB_DIR"' EXIT
else
  ftb_state_init existing
fi
ftb_build_c "$FTB_DIR/bin/ferry_tb_gendata" "$FTB_HERE/tools/gendata.c"
for a in "$@"; do
  case "$a" in --* | [0-9]*) ;; *) mkdir -p "$(dirname "$a")" ;; esac
done
ftb_t "$FTB_DIR/bin/ferry_tb_gendata" "$@"
