#include "cli/proxy_xrootd_build.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "base/self_exe.h"
#include "base/strings.h"

namespace ferry::cli {
namespace {

// patched.info: key=value lines written by build-patched-server.sh.
bool ReadInfo(const std::string& dir, XrootdBuild* build) {
  std::ifstream in(dir + "/patched.info");
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    if (key == "xrootd_version") {
      build->patched_from = value;
      any = true;
    } else if (key == "patches") {
      for (size_t pos = 0; pos < value.size();) {
        const size_t comma = value.find(',', pos);
        const size_t end = comma == std::string::npos ? value.size() : comma;
        build->patches.push_back(value.substr(pos, end - pos));
        pos = end + 1;
      }
    }
  }
  return any && ::access((dir + "/libXrdServer.so.3").c_str(), R_OK) == 0;
}

// "5.5.3-1" and "1:5.5.3-1" -> "5.5.3".
std::string Upstream(std::string v) {
  if (const size_t colon = v.find(':'); colon != std::string::npos) {
    v = v.substr(colon + 1);
  }
  return v.substr(0, v.find('-'));
}

}  // namespace

std::string InstalledXrootdVersion() {
  // xrootd -v prints "v5.5.3" on stderr and exits.
  FILE* p = ::popen("xrootd -v 2>&1", "r");
  if (p == nullptr) {
    return "";
  }
  char buf[256] = {};
  const bool read = std::fgets(buf, sizeof buf, p) != nullptr;
  ::pclose(p);
  std::string v = read ? std::string(buf) : "";
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) {
    v.pop_back();
  }
  if (v.size() > 1 && v[0] == 'v' && v[1] >= '0' && v[1] <= '9') {
    return v.substr(1);
  }
  return "";
}

XrootdBuild FindXrootdBuild(const std::string& choice) {
  XrootdBuild b;
  b.version = InstalledXrootdVersion();
  if (choice == "system") {
    b.why_system = "--xrootd-lib system";
    return b;
  }
  std::string dir = choice;
  if (choice == "auto") {
    const std::string found = FindLibrary("xrootd/libXrdServer.so.3");
    dir = found.empty() ? ""
                        : found.substr(0, found.size() - std::string("/libXrdServer.so.3").size());
  }
  if (dir.empty()) {
    b.why_system = "ferry has no patched build for this version";
    return b;
  }
  XrootdBuild candidate = b;
  if (!ReadInfo(dir, &candidate)) {
    b.why_system = dir + " holds no patched libXrdServer.so.3 (patched.info)";
    return b;
  }
  if (choice == "auto" && Upstream(candidate.patched_from) != b.version) {
    b.why_system = "ferry's patched build is of XRootD " + candidate.patched_from
                   + ", the installed xrootd is " + (b.version.empty() ? "unknown" : b.version);
    return b;
  }
  candidate.patched_dir = dir;
  return candidate;
}

std::string XrootdBuild::Describe() const {
  const std::string v = "XRootD " + (version.empty() ? std::string("(version unknown)") : version);
  if (patched()) {
    std::string list;
    for (const std::string& p : patches) {
      list += (list.empty() ? "" : ", ") + p;
    }
    return v + " with ferry's patched libXrdUtils, libXrdServer and libXrdHttpUtils (" + patched_dir
           + ", built from " + patched_from + ": " + list + ")";
  }
  return v + " with the system's libXrdServer (" + why_system
         + "); known affected: one kXR_auth without credentials, or one HTTP PROPFIND with a "
           "body length over 2 GiB, stops it, and a link dispatched twice can crash it "
           "(patches/xrootd/README.md)";
}

}  // namespace ferry::cli
