// ferry cache rekey: rotates the master key of an encrypted cache. Every entry's data key is
// rewrapped (cache/rekey.h); no cached byte is rewritten, and readers and writers of the cache
// may go on meanwhile. Run it, then point cache_key_file (or ferry.cache_key_file) at the new
// key: processes still holding the old key read from the origin until they are given the new.
#include <cstdio>
#include <string>

#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cache/rekey.h"
#include "cli/args.h"
#include "cli/cache_conf.h"
#include "cli/commands.h"

namespace ferry::cli {
namespace {

int Rekey(const Args& args) {
  auto dir = args.Get("--dir");
  auto old_file = args.Get("--old-key");
  auto new_file = args.Get("--new-key");
  if (!dir || !old_file || !new_file || !args.positional().empty()) {
    return UsageError("cache rekey needs --dir DIR --old-key FILE --new-key FILE", args.spec());
  }
  if (!cache::IsCacheDir(*dir)) {
    return ReportError(Error(ErrorCode::kNotFound, *dir + " is not a ferry cache directory"));
  }
  auto old_key = cache::MasterKey::Load(*old_file);
  auto new_key = cache::MasterKey::Load(*new_file);
  if (!old_key || !new_key) {
    return ReportError(!old_key ? old_key.error() : new_key.error());
  }
  auto entries = cache::ScanEntries(*dir);
  if (!entries) {
    return ReportError(entries.error());
  }
  uint64_t rewrapped = 0, already = 0, plain = 0, failed = 0;
  for (const cache::EntryListing& e : *entries) {
    if (!e.has_index) {
      continue;
    }
    auto r = cache::RekeyEntry(e.paths, *old_key, *new_key);
    if (!r) {
      if (r.error().code() != ErrorCode::kNotFound) {  // not evicted meanwhile
        ++failed;
        std::fprintf(stderr, "ferry: %s: %s\n", e.key.c_str(), r.error().message().c_str());
      }
      continue;
    }
    rewrapped += *r == cache::RekeyOutcome::kRewrapped ? 1u : 0u;
    already += *r == cache::RekeyOutcome::kAlready ? 1u : 0u;
    plain += *r == cache::RekeyOutcome::kUnencrypted ? 1u : 0u;
  }
  std::printf(
      "rekeyed %llu entries from master key %s to %s (%llu already under it, %llu not "
      "encrypted, %llu failed)\n",
      static_cast<unsigned long long>(rewrapped), cache::KeyIdHex(old_key->id()).c_str(),
      cache::KeyIdHex(new_key->id()).c_str(), static_cast<unsigned long long>(already),
      static_cast<unsigned long long>(plain), static_cast<unsigned long long>(failed));
  if (failed > 0) {
    std::fprintf(stderr, "ferry: run it again for the entries that failed (it resumes)\n");
  }
  return failed == 0 ? kExitOk : kExitBadInput;
}

constexpr OptionSpec kRekeyOptions[] = {
    {"--dir", "DIR", "the cache directory"},
    {"--old-key", "FILE", "the master key the entries are encrypted under now"},
    {"--new-key", "FILE", "the master key to wrap their data keys with (32 bytes, mode 0600)"},
};

}  // namespace

constexpr CommandSpec kCacheRekeyCommand{
    .path = "cache rekey",
    .summary =
        "rotate the master key of an encrypted cache: rewrap every entry's data key, without "
        "rewriting data (safe while the cache is in use)",
    .synopsis = "--dir DIR --old-key FILE --new-key FILE",
    .options = kRekeyOptions,
    .run = Rekey,
};

}  // namespace ferry::cli
