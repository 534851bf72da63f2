#include "plugin/xrdcl/xrdcl_log.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include <XrdCl/XrdClDefaultEnv.hh>
#include <XrdCl/XrdClLog.hh>

#include "base/log.h"

namespace ferry::plugin {
namespace {

uint64_t g_topic = 0;

void XrdClSink(log::Level level, std::string_view component, std::string_view message) {
  XrdCl::Log* out = XrdCl::DefaultEnv::GetLog();
  if (out == nullptr) {
    return;
  }
  // XrdCl formats printf-style: pass the text as an argument, never as the format.
  const std::string text = std::string(component) + ": " + std::string(message);
  switch (level) {
    case log::Level::kDebug:
      out->Debug(g_topic, "%s", text.c_str());
      break;
    case log::Level::kInfo:
      out->Info(g_topic, "%s", text.c_str());
      break;
    case log::Level::kWarn:
      out->Warning(g_topic, "%s", text.c_str());
      break;
    case log::Level::kError:
      out->Error(g_topic, "%s", text.c_str());
      break;
    case log::Level::kOff:
      break;
  }
}

log::Level FromXrdCl(XrdCl::Log::LogLevel level) {
  switch (level) {
    case XrdCl::Log::NoMsg:
      return log::Level::kOff;
    case XrdCl::Log::ErrorMsg:
      return log::Level::kError;
    case XrdCl::Log::WarningMsg:
      return log::Level::kWarn;
    case XrdCl::Log::InfoMsg:
      return log::Level::kInfo;
    case XrdCl::Log::DebugMsg:
    case XrdCl::Log::DumpMsg:
      return log::Level::kDebug;
  }
  return log::Level::kWarn;
}

}  // namespace

void RouteLogThroughXrdCl() {
  static std::once_flag once;
  std::call_once(once, [] {
    // getenv is read-only here; ferry never modifies its environment.
    const char* own = std::getenv("FERRY_LOG");  // NOLINT(concurrency-mt-unsafe)
    XrdCl::Log* out = XrdCl::DefaultEnv::GetLog();
    if ((own != nullptr && *own != '\0') || out == nullptr) {
      return;
    }
    g_topic = out->RegisterTopic("Ferry");
    log::SetThreshold(FromXrdCl(out->GetLevel()));
    log::SetSink(XrdClSink);
  });
}

}  // namespace ferry::plugin
