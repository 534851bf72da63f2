// Which XRootD server library the proxy's xrootd runs with, and whether that build is known to
// stop on a malformed request (patches/xrootd/README.md). ferry ships libXrdServer rebuilt from
// the installed version's source with its patches (scripts/xrootd/build-patched-server.sh):
// `ferry proxy run` puts it first on xrootd's library path when it was built from the same
// XRootD version as the xrootd on the PATH, and uses the system's otherwise.
#pragma once

#include <string>
#include <vector>

namespace ferry::cli {

struct XrootdBuild {
  std::string version;       // of the xrootd on the PATH ("5.5.3"); "" when unknown
  std::string patched_dir;   // the folder of ferry's libXrdServer.so.3 in use; "" for none
  std::string patched_from;  // the package version it was built from ("5.5.3-1")
  std::vector<std::string> patches;
  std::string why_system;  // when patched_dir is "": why the system's library is used

  bool patched() const { return !patched_dir.empty(); }
  // The faults patches/xrootd fixes: every upstream release checked has them.
  bool known_affected() const { return !patched(); }
  // One line for the log and `ferry proxy doctor`.
  std::string Describe() const;
};

// `choice`: "auto" (ferry's build when it matches the installed version), "system", or the
// folder of a patched libXrdServer.so.3 (with its patched.info).
XrootdBuild FindXrootdBuild(const std::string& choice);

// The version `xrootd -v` prints ("5.5.3"), "" when it cannot be run.
std::string InstalledXrootdVersion();

}  // namespace ferry::cli
