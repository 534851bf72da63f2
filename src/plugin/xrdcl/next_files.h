// NextFiles: the plug-in's side of next-file prediction (readahead/open_sequence.h).
//
// After each open of a cached ROOT file, OpenSequence names the next files of the directory, if
// the opens follow its listing. For each, a worker opens that file through the cache and starts
// its read-ahead (the metadata in one fetch, then the first clusters of the branches the files
// before were read for), so that a reader which opens its files one after another finds the
// next ones' opens, metadata and first clusters done. The reader's open of such a URL adopts
// the warm handle — its origin connection and its loaded trees — instead of opening anew; when
// the warming is under way, the open waits for it (at most kJoinMs) rather than fetch the same
// metadata a second time, and when it has not started yet, the open takes it over.
//
// A directory's listing (one XrdCl DirList, on a worker) is asked for when its first open starts,
// beside that open; predictions start once it is there. An open that finds its file still warming
// (or queued) tells the sequence that the reader caught up (it then predicts further ahead). A warm
// handle not adopted within kKeepMs is closed at a later open (and the sequence predicts less far);
// at most kMaxWarm are warming or kept. Counted: next_files_warmed, next_files_adopted.
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
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
  // Long enough for a reader that decodes a file for a minute or two before it opens the next
  // ones (their handles hold an origin open and the trees' metadata).
  static constexpr int64_t kKeepMs = 180'000;
  static constexpr size_t kMaxWarm = readahead::OpenSequence::kMaxDepth + 1;
  static constexpr int64_t kJoinMs = 60'000;

  explicit NextFiles(Context& ctx) : ctx_(ctx) {}

  struct Warm {
    std::shared_ptr<XrdOrigin> origin;
    std::unique_ptr<cache::CachedFile> file;
  };
  // The handle warmed for `url`, if there is one (waiting for a warming under way): the
  // caller's open takes it over. Every reader open comes here first: a URL the reader opened is
  // never warmed afterwards.
  std::optional<Warm> Take(const std::string& url);
  // `url` was opened through the cache: predict the next file and warm it.
  void OnOpen(const std::string& url);

 private:
  struct Kept {
    Warm warm;
    int64_t since_ms = 0;
  };
  std::optional<Warm> TakeLocked(const std::string& url) FERRY_REQUIRES(mu_);
  // The directory of `url` when its listing is to be fetched now (its first open).
  std::optional<std::string> StartListingLocked(const std::string& url) FERRY_REQUIRES(mu_);
  void FetchListing(const std::string& url, const std::string& dir_path);
  // Marks the predicted `names` of `dir` as warming, but for those already warm, warming or
  // opened by the reader, and within kMaxWarm; returns their URLs for Submit.
  std::vector<std::string> QueueLocked(const std::string& dir,
                                       const std::string& query,
                                       const std::vector<std::string>& names) FERRY_REQUIRES(mu_);
  void Submit(std::vector<std::string> urls);
  void WarmFile(const std::string& url);
  // A warming ended (kept or failed): wakes the opens waiting for it.
  void EndWarmingLocked(const std::string& url) FERRY_REQUIRES(mu_);
  // Removes the kept handles older than kKeepMs; the caller closes them.
  std::vector<Warm> ExpiredLocked(int64_t now_ms) FERRY_REQUIRES(mu_);
  static void Close(std::vector<Warm> warm);

  Context& ctx_;
  Mutex mu_;
  readahead::OpenSequence sequence_ FERRY_GUARDED_BY(mu_);
  // Directory path -> its sorted file names (empty while being listed).
  std::map<std::string, std::vector<std::string>> listings_ FERRY_GUARDED_BY(mu_);
  std::set<std::string> listing_now_ FERRY_GUARDED_BY(mu_);  // directories being listed
  std::map<std::string, Kept> kept_ FERRY_GUARDED_BY(mu_);
  // URLs being warmed: true once a worker started on it (false: queued; an open takes it over).
  std::map<std::string, bool> warming_ FERRY_GUARDED_BY(mu_);
  CondVar warmed_;  // a warming ended
  // URLs the reader opened itself (Take). A reader opening several files at once can open a
  // file before an earlier open's prediction names it; a warm handle of such a file would
  // never be taken, and would keep the file open (its replica build waits for the last close).
  std::set<std::string> opened_ FERRY_GUARDED_BY(mu_);
  // Directory -> the name last opened in it (starts its sequence when the listing arrives).
  std::map<std::string, std::string> last_open_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::plugin
