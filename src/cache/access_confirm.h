// In a group cache (dir_access.h) the pages of a file may have been fetched by another member,
// whom the origin lets read it. A member is served them only after the origin has let *that
// member* open the file; AccessConfirmations remembers such a yes per (user, entry) for
// `shared_reauth` seconds, so a warm pass asks the origin at most once per file per period.
//
// On disk (docs/format/page-store.md, "Permissions"): DIR/users/UID/KEY, an empty file whose
// modification time is when the origin last let user UID open the entry KEY. DIR/users is
// setgid and sticky (03770): every member can make their own folder, none can rename or remove
// another's. DIR/users/UID is 0700 and must belong to UID: a folder that does not (a member
// replaced it) confirms nothing, so the worst a member can do is make another ask the origin
// again. A confirmation dated in the future (a clock set back) confirms nothing either.
//
// Thread-safety: const methods and Record may be called concurrently (files only).
#pragma once

#include <cstdint>
#include <string>

namespace ferry::cache {

class AccessConfirmations {
 public:
  // Confirmations of DIR's users, trusted for `reauth_s` seconds (0: none is kept).
  AccessConfirmations(std::string cache_dir, int64_t reauth_s);

  // True when the origin let this process's user open entry `key` less than reauth_s ago.
  bool Fresh(const std::string& key) const;
  // Records that it did just now. Best effort: a confirmation not recorded is asked again.
  void Record(const std::string& key) const;
  // Forgets this user's confirmation of `key` (the origin refused it).
  void Forget(const std::string& key) const;

  // This user's folder: DIR/users/UID.
  const std::string& user_dir() const { return user_dir_; }

 private:
  bool UserDirTrusted() const;

  std::string users_dir_;
  std::string user_dir_;
  int64_t reauth_s_;
};

}  // namespace ferry::cache
