#include "base/self_exe.h"

#include <sys/stat.h>
#include <unistd.h>

namespace ferry {

std::string ExecutableDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) {
    return "";
  }
  std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

std::vector<std::string> LibraryDirs() {
  const std::string bin = ExecutableDir();
  if (bin.empty()) {
    return {};
  }
  const std::string prefix = bin.substr(0, bin.rfind('/'));
  return {prefix + "/lib/ferry", prefix + "/lib", bin};
}

std::string FindLibrary(const std::string& file) {
  for (const std::string& dir : LibraryDirs()) {
    std::string path = dir;
    path += '/';
    path += file;
    struct stat st = {};
    if (::stat(path.c_str(), &st) == 0) {
      return path;
    }
  }
  return "";
}

}  // namespace ferry
