#include "cache/access_confirm.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "base/fd.h"

namespace ferry::cache {
namespace {

// DIR/users: group cache modes plus the sticky bit (only a folder's owner may rename it).
constexpr mode_t kUsersMode = 03770;
constexpr mode_t kUserMode = 0700;
// A confirmation's time may be this far ahead of our clock (another machine's clock, NFS).
constexpr int64_t kClockSlackS = 60;

}  // namespace

AccessConfirmations::AccessConfirmations(std::string cache_dir, int64_t reauth_s)
    : users_dir_(std::move(cache_dir) + "/users"),
      user_dir_(users_dir_ + "/" + std::to_string(::geteuid())),
      reauth_s_(reauth_s) {}

bool AccessConfirmations::UserDirTrusted() const {
  struct stat st = {};
  return ::lstat(user_dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid()
         && (st.st_mode & 0077) == 0;
}

bool AccessConfirmations::Fresh(const std::string& key) const {
  if (reauth_s_ == 0 || !UserDirTrusted()) {
    return false;
  }
  struct stat st = {};
  if (::lstat((user_dir_ + "/" + key).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return false;
  }
  const int64_t age = static_cast<int64_t>(std::time(nullptr)) - st.st_mtim.tv_sec;
  return age < reauth_s_ && age > -kClockSlackS;
}

void AccessConfirmations::Record(const std::string& key) const {
  if (reauth_s_ == 0) {
    return;
  }
  if (::mkdir(users_dir_.c_str(), kUsersMode & 0777) == 0) {
    (void)::chmod(users_dir_.c_str(), kUsersMode);  // the umask and setgid rules, made explicit
  }
  if (::mkdir(user_dir_.c_str(), kUserMode) == 0) {
    (void)::chmod(user_dir_.c_str(), kUserMode);  // no inherited setgid: this folder is private
  }
  if (!UserDirTrusted()) {
    return;
  }
  Fd fd(::open((user_dir_ + "/" + key).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.valid()) {
    (void)::futimens(fd.get(), nullptr);
  }
}

void AccessConfirmations::Forget(const std::string& key) const {
  if (UserDirTrusted()) {
    (void)::unlink((user_dir_ + "/" + key).c_str());
  }
}

}  // namespace ferry::cache
