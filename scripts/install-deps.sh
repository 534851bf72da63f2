#!/usr/bin/env bash
# Installs every Debian package ferry needs to build, test, benchmark and run its demo.
# Idempotent: runs `apt-get update` at most once and only when something is missing.
# Usage: scripts/install-deps.sh            (as root, or with sudo available)
set -euo pipefail

packages=(
  # build, and `make package` (dpkg-shlibdeps reads the package's library dependencies)
  g++ cmake ninja-build make pkg-config git dpkg-dev
  # rebuilds of unchanged sources (another clone, the sanitizer presets) come from its cache
  ccache
  # style: make format-check (in CI) and make tidy
  clang-format clang-tidy
  # codecs and checksums
  zlib1g-dev libdeflate-dev liblzma-dev libzstd-dev liblz4-dev libxxhash-dev
  # io_uring; libcrypto (OpenSSL) for the transfer's HMAC-SHA256
  liburing-dev libssl-dev
  # tests, benchmarks, fuzzing
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  nlohmann-json3-dev
  # XRootD: origin/proxy servers, client, plug-in headers, python bindings
  xrootd-server xrootd-server-plugins xrootd-client xrootd-client-plugins
  libxrootd-client-dev libxrootd-server-dev libxrootd-private-dev python3-xrootd
  # the site proxy's HTTPS and token tests: a test CA and certificates, an HTTP client, token
  # validation (XrdAccSciTokens) and signing
  openssl curl xrootd-scitokens-plugins python3-cryptography
  # XRootD's server library rebuilt with ferry's patches (scripts/xrootd/): Debian's source
  # package (dpkg-source) and the build dependencies of that library
  dpkg-dev patch uuid-dev libsystemd-dev
  # WAN / LFN emulation and transfer peers
  iproute2 iptables libnetfilter-queue-dev iputils-ping iperf3 fio procps
  # bench/xfer: the bulk-transfer peers ferry send is measured against, and xxhsum
  rsync aria2 nginx-light globus-gass-copy-progs globus-gridftp-server-progs xxhash
  # plots
  gnuplot-nox
  # the Grafana dashboard's test: a real Prometheus scrapes a proxy (tests/proxy/test_grafana.py)
  prometheus
  # jsroot (independent ROOT reader) runs under node
  nodejs
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
