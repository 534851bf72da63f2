#!/usr/bin/env bash
# The ferry binary loads the XRootD client only for root:// URLs (src/xrd/xrd_module.h): its
# libraries' load-time initialisers (a reverse DNS lookup of the host) must not delay
# `ferry send`, `ferry recv` or `ferry --help`. root:// through the binary is cli_root_url.
#   usage: test_lazy_xrootd.sh FERRY_BINARY XROOTD_MODULE
set -u
ferry=$1 module=$2
fail=0
if readelf -d "$ferry" | grep -q 'NEEDED.*libXrd'; then
  echo "FAIL: $ferry links the XRootD libraries:"; readelf -d "$ferry" | grep 'NEEDED.*libXrd'
  fail=1
fi
loaded=$(LD_DEBUG=files "$ferry" --help 2>&1 >/dev/null | grep -c 'file=.*libXrd' || true)
if [ "$loaded" != 0 ]; then
  echo "FAIL: ferry --help loaded $loaded XRootD libraries"; fail=1
fi
if ! readelf -d "$module" | grep -q 'NEEDED.*libXrdCl'; then
  echo "FAIL: $module does not link libXrdCl"; fail=1
fi
if ! nm -D --defined-only "$module" | grep -qw ferry_xrd_open_v1; then
  echo "FAIL: $module does not export ferry_xrd_open_v1"; fail=1
fi
exported=$(nm -D --defined-only "$module" | grep -c ' T ' || true)
if [ "$exported" -gt 4 ]; then
  echo "FAIL: $module exports $exported functions (only its entry point is meant to be)"; fail=1
fi
[ $fail = 0 ] && echo "ok: XRootD is loaded lazily"
exit $fail
