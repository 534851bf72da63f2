#!/usr/bin/env bash
# Builds XRootD's server libraries that ferry patches (libXrdUtils.so.3, links and pollers;
# libXrdServer.so.3, the xroot protocol; libXrdHttpUtils.so.2, XrdHttp) from Debian's source
# package of the installed XRootD, with the patches in patches/xrootd/<upstream version>/, the
# way a distribution ships a fix before upstream does (patches/xrootd/README.md says which
# faults they fix and why).
#
# Usage: scripts/xrootd/build-patched-server.sh OUT_DIR
#
# Writes OUT_DIR/libXrdUtils.so.3, OUT_DIR/libXrdServer.so.3, OUT_DIR/libXrdHttpUtils.so.2 and
# OUT_DIR/patched.info (the version, the patches and their digest). `ferry proxy run` puts
# OUT_DIR (lib/xrootd of the build tree, lib/ferry/xrootd installed) first on xrootd's library
# path when the versions match. Only these libraries' objects are compiled, each linked against
# the system's other XRootD libraries of the same version, so nothing else changes
# (libXrdUtils needs libsystemd-dev for XRootD's LISTEN_FDS support, which the proxy uses).
#
# Idempotent: does nothing when OUT_DIR already holds a build of the same version and
# patches. When no patch exists for the installed version, says so and leaves OUT_DIR empty
# (the proxy then uses the system's library, and says whether that build is known affected).
set -euo pipefail

out=${1:?usage: build-patched-server.sh OUT_DIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

full=$(dpkg-query -W -f='${Version}' libxrdserver3 2>/dev/null || true)
if [ -z "$full" ]; then
  echo "xrootd-patched: libxrdserver3 is not installed; nothing to patch" >&2
  exit 0
fi
upstream=${full%%-*}
upstream=${upstream#*:}
patches_dir="$here/patches/xrootd/$upstream"
if ! compgen -G "$patches_dir/*.patch" >/dev/null; then
  echo "xrootd-patched: no patch for XRootD $full (patches/xrootd/$upstream); the system's" \
       "library is used as it is" >&2
  rm -f "$out/libXrdUtils.so.3" "$out/libXrdServer.so.3" "$out/libXrdHttpUtils.so.2" \
    "$out/patched.info"
  exit 0
fi
digest=$( (echo "$full"; cat "$patches_dir"/*.patch) | sha256sum | cut -c1-16)
if [ -f "$out/libXrdUtils.so.3" ] && [ -f "$out/libXrdServer.so.3" ] &&
   [ -f "$out/libXrdHttpUtils.so.2" ] && grep -qx "digest=$digest" \
     "$out/patched.info" 2>/dev/null; then
  exit 0
fi

work="$out/src"
rm -rf "$work"
mkdir -p "$work"
echo "xrootd-patched: building libXrdUtils, libXrdServer and libXrdHttpUtils $full with $(ls "$patches_dir" | wc -l) patch(es)" >&2

# Debian's source package of exactly the installed version. apt needs a deb-src entry; this
# adds one for the Debian archive (same suites as the binary entries) when none is there.
fetch_source() {
  (cd "$work" && apt-get source --download-only -qq "xrootd=$full" >/dev/null 2>&1)
}
if ! fetch_source; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "xrootd-patched: apt-get source xrootd=$full failed and adding a deb-src entry needs" \
         "root" >&2
    exit 1
  fi
  . /etc/os-release
  cat >/etc/apt/sources.list.d/ferry-deb-src.sources <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $VERSION_CODENAME $VERSION_CODENAME-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -qq
  fetch_source
fi
(cd "$work" && dpkg-source --no-check -x ./*.dsc tree >/dev/null)
tree="$work/tree"
for p in "$patches_dir"/*.patch; do
  patch -d "$tree" -p1 --quiet --forward <"$p"
done

# Configure as Debian does (its compiler flags), with the optional components off: they are
# not part of libXrdServer and need build dependencies the machine does not have.
flags() { dpkg-buildflags --get "$1"; }
cmake -S "$tree" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_C_FLAGS="$(flags CFLAGS) $(flags CPPFLAGS)" \
  -DCMAKE_CXX_FLAGS="$(flags CXXFLAGS) $(flags CPPFLAGS)" \
  -DENABLE_FUSE=OFF -DENABLE_KRB5=OFF -DENABLE_READLINE=OFF -DENABLE_XRDCL=OFF \
  -DENABLE_HTTP=ON -DENABLE_PYTHON=OFF -DENABLE_VOMS=OFF -DENABLE_XRDCLHTTP=OFF \
  -DENABLE_SCITOKENS=OFF -DENABLE_MACAROONS=OFF -DXRDCEPH_SUBMODULE=OFF \
  -DENABLE_TESTS=OFF >"$work/configure.log" 2>&1 || {
  tail -30 "$work/configure.log" >&2
  exit 1
}

# Each library's objects only, then one link against the system's other XRootD libraries
# (what Debian's build of it needs: readelf -d).
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
sys="/usr/lib/$multiarch"
build_lib() {  # TARGET SONAME LINK...
  local target=$1 soname=$2
  shift 2
  local objects
  mapfile -t objects < <(ninja -C "$work/build" -t targets all |
                         sed -n "s#^\(src/CMakeFiles/$target.dir/[^:]*\.o\): .*#\1#p")
  if [ ${#objects[@]} -eq 0 ]; then
    echo "xrootd-patched: no objects for $target" >&2
    exit 1
  fi
  ninja -C "$work/build" -j "$(nproc)" "${objects[@]}" >"$work/build-$target.log" 2>&1 || {
    tail -30 "$work/build-$target.log" >&2
    exit 1
  }
  (cd "$work/build" &&
    g++ -shared $(flags LDFLAGS) -Wl,-soname,"$soname" -o "$out/$soname.tmp" "${objects[@]}" "$@")
  objcopy --strip-debug "$out/$soname.tmp"
  mv "$out/$soname.tmp" "$out/$soname"
}
build_lib XrdUtils libXrdUtils.so.3 -lssl -lcrypto -lsystemd -ldl -lpthread
# Without systemd's headers XRootD's configure quietly leaves out LISTEN_FDS, and the proxy's
# supervisor hands its listening sockets over that way.
if ! nm -D --undefined-only "$out/libXrdUtils.so.3" | grep -q sd_listen_fds; then
  rm -f "$out/libXrdUtils.so.3"
  echo "xrootd-patched: libXrdUtils was built without systemd support (install" \
       "libsystemd-dev: scripts/install-deps.sh does)" >&2
  exit 1
fi
build_lib XrdServer libXrdServer.so.3 "$sys/libXrdUtils.so.3" -ldl -lpthread
build_lib XrdHttpUtils libXrdHttpUtils.so.2 "$sys/libXrdServer.so.3" "$sys/libXrdCrypto.so.2" \
  "$sys/libXrdUtils.so.3" -lssl -lcrypto -ldl -lpthread
{
  echo "xrootd_version=$full"
  echo "digest=$digest"
  echo "patches=$(cd "$patches_dir" && ls -- *.patch | paste -sd, -)"
} >"$out/patched.info"
rm -rf "$work"
echo "xrootd-patched: $out/libXrdUtils.so.3 $out/libXrdServer.so.3 $out/libXrdHttpUtils.so.2" >&2
