// The master key of an encrypted cache held in the kernel's key retention service instead of a
// file: `--encrypt-key keyring:NAME` (cache_key_file = keyring:NAME) names a key of type "user"
// and description NAME that the reading process can find in its keyrings (thread, process,
// session, and the user's keyring through the session). Added once per login, for example
//
//   keyctl padd user ferry-cache @u < key-file      (keyutils), then shred key-file
//
// so a user's client cache needs no key file on any disk. The key's payload is the 32 key
// bytes. The kernel keeps it per user: another user, or the same user on another machine,
// cannot find it; it is gone at reboot (add it again, or keep it in a file on a removable or
// encrypted volume).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "cache/page_seal.h"

namespace ferry::cache {

inline constexpr std::string_view kKeyringPrefix = "keyring:";

// True when a key source names a keyring key ("keyring:NAME") rather than a file.
bool IsKeyringSource(std::string_view source);

// The 32 bytes of the "user" key NAME. kInvalidArgument saying what is missing and how to add
// it when no such key is found, it is not readable, or it does not hold exactly 32 bytes.
Result<KeyBytes> ReadKeyringKey(const std::string& name);

}  // namespace ferry::cache
