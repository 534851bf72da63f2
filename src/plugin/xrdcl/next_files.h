// NextFiles: the plug-in's side of next-file prediction (readahead/open_sequence.h).
//
// After each open of a cached ROOT file, OpenSequence says whether the next file of the
// directory can be named. If so, a worker opens that file through the cache and starts its
// read-ahead (the metadata in one fetch, then the first clusters of the branches the files
// before were read for), so that a reader which opens its files one after another finds the
// next one's open, metadata and first clusters done. The reader's open of that URL adopts the
// warm handle — its origin connection and its loaded trees — instead of opening anew.
//
// A directory's listing (one XrdCl DirList, on a worker) is fetched at its first open;
// predictions start once it is there. A warm handle not adopted within kKeepMs is closed at a
// later open; at most kMaxWarm are kept. Counted: next_files_warmed, next_files_adopted.
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cache/cache.h"
#include "plugin/xrdcl/xrd_origin.h"
#include "readahead/open_sequence.h"

namespace ferry::plugin {

struct Context;

class NextFiles {
 public:
  static constexpr int64_t kKeepMs = 30'000;
  static constexpr size_t kMaxWarm = 4;

  explicit NextFiles(Context& ctx) : ctx_(ctx) {}

  struct Warm {
    std::shared_ptr<XrdOrigin> origin;
    std::unique_ptr<cache::CachedFile> file;
  };
  // The handle warmed for `url`, if there is one: the caller's open takes it over.
  std::optional<Warm> Take(const std::string& url);
  // `url` was opened through the cache: predict the next file and warm it.
  void OnOpen(const std::string& url);

 private:
  struct Kept {
    Warm warm;
    int64_t since_ms = 0;
  };
  void FetchListing(const std::string& url, const std::string& dir_path);
  void WarmFile(const std::string& url);
  // Removes the kept handles older than kKeepMs; the caller closes them.
  std::vector<Warm> ExpiredLocked(int64_t now_ms) FERRY_REQUIRES(mu_);
  static void Close(std::vector<Warm> warm);

  Context& ctx_;
  Mutex mu_;
  readahead::OpenSequence sequence_ FERRY_GUARDED_BY(mu_);
  // Directory path -> its sorted file names (empty while being listed).
  std::map<std::string, std::vector<std::string>> listings_ FERRY_GUARDED_BY(mu_);
  std::map<std::string, Kept> kept_ FERRY_GUARDED_BY(mu_);
  // Directory -> the name last opened in it (starts its sequence when the listing arrives).
  std::map<std::string, std::string> last_open_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::plugin
