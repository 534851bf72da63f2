#include "cache/key_ring.h"

#include <linux/keyctl.h>
#include <openssl/crypto.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"

namespace ferry::cache {

bool IsKeyringSource(std::string_view source) {
  return source.starts_with(kKeyringPrefix);
}

Result<KeyBytes> ReadKeyringKey(const std::string& name) {
  const std::string how = "; add it with: keyctl padd user " + name + " @u < KEY-FILE";
  if (name.empty()) {
    return InvalidArgumentError("keyring: needs the name of a key (keyring:NAME)");
  }
  // No libkeyutils: the three system calls are all it would do. request_key searches the
  // caller's keyrings without asking user space to create the key (no callout info).
  const long id = ::syscall(SYS_request_key, "user", name.c_str(), nullptr, 0);
  if (id < 0) {
    return InvalidArgumentError("no key \"" + name + "\" of type user in this process's keyrings ("
                                + ErrnoText(errno) + ")" + how);
  }
  KeyBytes bytes{};
  // KEYCTL_READ returns the payload's whole size, whatever the buffer's.
  const long n = ::syscall(SYS_keyctl, KEYCTL_READ, id, bytes.data(), bytes.size());
  if (n < 0) {
    return InvalidArgumentError("key \"" + name + "\" cannot be read (" + ErrnoText(errno)
                                + "): the process must possess it or have read permission");
  }
  if (n != static_cast<long>(bytes.size())) {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return InvalidArgumentError("key \"" + name + "\" must hold exactly 32 bytes (it has "
                                + std::to_string(n) + ")" + how);
  }
  return bytes;
}

}  // namespace ferry::cache
