// The security and front-end part of `ferry proxy config|run`: XRootD's own authentication
// (`xrootd.seclib`, `sec.protocol`, `sec.protbind`), its authorisation database (`ofs.authorize`,
// `acc.authdb`: XrdOfs checks every open, stat and listing before the storage plug-in, and so
// the cache, is asked), the proxy's own identity at the origin, and an HTTPS port (XrdHttp in
// the same server). The reasons and XRootD 5.5.3's constraints are in docs/ARCHITECTURE.md
// ("Security").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "cli/args.h"

namespace ferry::cli {

struct SecurityPlan {
  std::string config;  // xrootd directives (and ferry.* keys), newline-terminated
  // Files the configuration names, written into the admin directory with mode 0600 (path,
  // content): the sss keytab the server and the proxy's origin channels share.
  std::vector<std::pair<std::string, std::string>> files;
};

// From --auth, --authdb, --origin-credentials, --https, --cert, --key, --ca-dir, --gridmap.
// `admin`: the absolute admin directory. Errors: a malformed or unknown protocol, files that cannot
// be read, --authdb without --auth (a client's identity would be the login name it chose),
// --auth sss without --origin-credentials (see the .cc), an HTTPS port without a certificate,
// --gridmap without --ca-dir.
Result<SecurityPlan> MakeSecurityPlan(const Args& args, const std::string& admin);

}  // namespace ferry::cli
