#include "replica/replica_queue.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/log.h"
#include "base/self_exe.h"
#include "cache/dir_access.h"
#include "cache/lock_file.h"

extern char** environ;  // NOLINT: POSIX

namespace ferry::replica {

using cache::LockFile;
using cache::MakeCacheSubdir;
using cache::OpenCacheFile;

namespace {

bool IsFile(const std::string& path) {
  struct stat st = {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where this code was loaded from: the plug-in library inside an application, or the program.
std::string SelfObjectDir() {
  Dl_info info = {};
  if (::dladdr(reinterpret_cast<void*>(&QueueDir), &info) != 0 && info.dli_fname != nullptr) {
    std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos) {
      return path.substr(0, slash);
    }
  }
  return ExecutableDir();
}

// The entry keys named by the files of `dir`.
std::vector<std::string> KeysIn(const std::string& dir) {
  std::vector<std::string> keys;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() == 16 && name.find_first_not_of("0123456789abcdef") == std::string::npos) {
        keys.push_back(name);
      }
    }
    ::closedir(d);
  }
  return keys;
}

// The builder's environment: ours, and the cache's master key file, which it needs to open an
// encrypted entry and seal its replica, and which the conf it reads need not name (the site
// proxy's key comes from xrootd's configuration): FERRY_CACHE_CACHE_KEY_FILE overrides the
// conf's cache_key_file.
std::vector<std::string> BuilderEnvironment(const cache::Config& config) {
  const std::string name = "FERRY_CACHE_CACHE_KEY_FILE=";
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (config.key_file.empty() || std::strncmp(*e, name.c_str(), name.size()) != 0) {
      env.emplace_back(*e);
    }
  }
  if (!config.key_file.empty()) {
    env.push_back(name + config.key_file);
  }
  return env;
}

}  // namespace

std::string QueueDir(const cache::Config& config) {
  return config.dir + "/replica-queue";
}

std::vector<std::string> QueuedKeys(const cache::Config& config) {
  return KeysIn(QueueDir(config));
}

std::string ReencodeQueueDir(const cache::Config& config) {
  return QueueDir(config) + "/reencode";
}

void RequestReencode(const cache::Config& config, const std::string& key) {
  const std::string dir = ReencodeQueueDir(config);
  if (MakeCacheSubdir(QueueDir(config)) && MakeCacheSubdir(dir)) {
    (void)OpenCacheFile(dir + "/" + key, O_WRONLY);
  }
}

std::vector<std::string> QueuedReencodes(const cache::Config& config) {
  return KeysIn(ReencodeQueueDir(config));
}

std::string ReplicaBuilderPath(const cache::Config& config) {
  if (!config.replica_builder.empty()) {
    return IsFile(config.replica_builder) ? config.replica_builder : "";
  }
  // The plug-in lives in PREFIX/lib/ferry when installed, build/<preset>/lib in a build tree;
  // the program in PREFIX/bin.
  const std::string dir = SelfObjectDir();
  const std::string up = dir.substr(0, dir.rfind('/'));
  const std::string up2 = up.substr(0, up.rfind('/'));
  for (const std::string& candidate : {up + "/bin/ferry", up2 + "/bin/ferry", dir + "/ferry"}) {
    if (IsFile(candidate)) {
      return candidate;
    }
  }
  return "";
}

bool RequestedStillOpen(const cache::Config& config, const std::string& key) {
  auto request = Fd::Open(QueueDir(config) + "/" + key, O_RDONLY);
  std::array<char, kStillOpen.size()> buf{};
  return request && ::pread(request->get(), buf.data(), buf.size(), 0) == ssize_t{buf.size()}
         && std::string_view(buf.data(), buf.size()) == kStillOpen;
}

void RequestReplicaBuild(const cache::Config& config, const std::string& key, bool still_open) {
  const std::string qdir = QueueDir(config);
  if (!MakeCacheSubdir(qdir)) {
    return;
  }
  {
    // A close empties the request (it may follow a moved-past one); a file moved past marks a
    // request of its own only (a close's stays a close's).
    const std::string path = qdir + "/" + key;
    const bool fresh = still_open && !IsFile(path);
    auto request = OpenCacheFile(path, O_WRONLY | (still_open ? 0 : O_TRUNC));
    if (!request) {
      return;
    }
    if (fresh) {
      (void)::pwrite(request->get(), kStillOpen.data(), kStillOpen.size(), 0);
    }
  }
  // A drainer that runs will see the request; only start one when none does.
  auto lock = LockFile::Open(qdir + "/.lock");
  if (!lock || lock->HeldElsewhere(0)) {
    return;
  }
  const std::string builder = ReplicaBuilderPath(config);
  if (builder.empty()) {
    FERRY_INFO("cache", "no ferry binary to build replicas in the background");
    return;
  }
  std::vector<std::string> args = {builder, "cache",    "replica",      "build",
                                   "--dir", config.dir, "--background", "--queue"};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);  // + the terminating nullptr
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = BuilderEnvironment(config);
  std::vector<char*> env;
  env.reserve(env_strings.size() + 1);
  for (std::string& e : env_strings) {
    env.push_back(e.data());
  }
  env.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t files;
  ::posix_spawnattr_init(&attr);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  ::posix_spawn_file_actions_init(&files);
  ::posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  // The builder's own lines are kept only when someone asked for debug output.
  if (!log::Enabled(log::Level::kDebug)) {
    ::posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, builder.c_str(), &files, &attr, argv.data(), env.data());
  ::posix_spawn_file_actions_destroy(&files);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return;
  }
  // Reaped off the caller's thread; if this process exits first, init adopts the builder.
  std::thread([pid] {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }).detach();
}

}  // namespace ferry::replica
