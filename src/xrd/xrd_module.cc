// libferry_xrootd.so: the module entry point over XrdSource (xrd_module.h).
#include "xrd/xrd_module.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "xrd/xrd_source.h"

extern "C" __attribute__((visibility("default"))) ferry::io::ByteSource* ferry_xrd_open_v1(
    const char* url,
    uint16_t timeout_seconds,
    bool enable_plugins,
    int* code,
    int* sys_errno,
    char* message,
    size_t message_size) {
  static_assert(std::is_same_v<decltype(&ferry_xrd_open_v1), ferry::xrd::ModuleOpenFn>);
  ferry::xrd::XrdSourceOptions options;
  options.timeout_seconds = timeout_seconds;
  options.enable_plugins = enable_plugins;
  auto source = ferry::xrd::XrdSource::Open(url, options);
  if (source) {
    return source->release();
  }
  // Open's errors carry no context: code, errno and message are the whole Error.
  *code = static_cast<int>(source.error().code());
  *sys_errno = source.error().sys_errno();
  const std::string& text = source.error().message();
  if (message_size > 0) {
    const size_t n = std::min(text.size(), message_size - 1);
    std::memcpy(message, text.data(), n);
    message[n] = '\0';
  }
  return nullptr;
}
