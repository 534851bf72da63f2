// Entry points of libXrdClFerry-5.so: the only exported symbols (exports.map) are
// XrdClGetPlugIn and its version record XrdClGetPlugIn_ (XrdVERSIONINFO), which XrdCl 5.5
// requires before it will load the library.
#include <exception>
#include <map>
#include <memory>
#include <string>

#include <XrdCl/XrdClPlugInInterface.hh>

#include "base/version.h"
#include "plugin/xrdcl/context.h"
#include "plugin/xrdcl/ferry_file.h"
#include "plugin/xrdcl/filesystem_plugin.h"
#include "plugin/xrdcl/xrdcl_log.h"

#include <XrdVersion.hh>

namespace ferry::plugin {
namespace {

class Factory final : public XrdCl::PlugInFactory {
 public:
  explicit Factory(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  XrdCl::FilePlugIn* CreateFile(const std::string& /*url*/) override { return new FerryFile(ctx_); }
  XrdCl::FileSystemPlugIn* CreateFileSystem(const std::string& url) override {
    return new FerryFileSystem(ctx_, url);
  }

 private:
  std::shared_ptr<Context> ctx_;
};

}  // namespace
}  // namespace ferry::plugin

// The version record must be visible (the build hides everything else).
#pragma GCC visibility push(default)
XrdVERSIONINFO(XrdClGetPlugIn, XrdClFerry)
#pragma GCC visibility pop

    extern "C" __attribute__((visibility("default"))) void* XrdClGetPlugIn(const void* arg) {
  try {
    ferry::plugin::RouteLogThroughXrdCl();
    std::map<std::string, std::string> conf;
    if (arg != nullptr) {
      conf = *static_cast<const std::map<std::string, std::string>*>(arg);
    }
    return new ferry::plugin::Factory(ferry::plugin::MakeContext(conf));
  } catch (const std::exception&) {
    return nullptr;  // XrdCl continues without the plug-in
  }
}

// The ferry build the library comes from, as `ferry --version` prints it after "ferry ":
// `ferry cache doctor` compares it with its own (a conf naming a plug-in of another build).
extern "C" __attribute__((visibility("default"))) const char* FerryXrdClVersion() {
  static const std::string version = [] {
    const std::string git = ferry::GitDescription();
    return std::string(ferry::Version()) + (git.empty() ? "" : " (" + git + ")");
  }();
  return version.c_str();
}
