// Detection of bulk readers — copy tools and scripts that read a file whole and in order — whose
// reads the client cache passes through uncached (`bypass`, config.h), so that a copy does not
// evict the working set of analyses.
//
// Two signs, either suffices:
// - The executable: IsCopyTool() compares the program's name (or, for an interpreter such as
//   python or bash, the script it runs) with the configured list (xrdcp, hadd, gfal-copy...).
//   Known at open: nothing of the file is cached.
// - The access pattern: a BulkDetector per handle keeps the contiguous prefix of the file the
//   handle read (reads that arrive a little out of order, as from xrdcp's parallel chunks, are
//   held aside until the gap before them fills). Once that prefix covers `percent` % of a file
//   of at least kMinBytes, in reads of at least kMinRead bytes on average, the handle is a bulk
//   reader and its later reads pass through. An analysis reads baskets of some branches
//   scattered over every cluster: its prefix ends at the first basket it skips, so reading many
//   branches (but not all of them, in file order) never qualifies.
// Thread-safety: IsCopyTool is; a BulkDetector serialises its callers (one mutex).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "fetch/range.h"
#include "io/byte_source.h"

namespace ferry::readahead {

// True when this process is one of `tools` (base names), or an interpreter running one of
// them. Reads /proc/self/exe and /proc/self/cmdline; false when they cannot be read.
bool IsCopyTool(const std::vector<std::string>& tools);
// The same decision for given `exe` path and arguments (`argv`, argv[0] first).
bool IsCopyTool(const std::string& exe,
                const std::vector<std::string>& argv,
                const std::vector<std::string>& tools);

class BulkDetector {
 public:
  static constexpr uint64_t kMinBytes = 16ull << 20;  // smaller files are cached even if copied
  static constexpr uint64_t kMinRead = 64 << 10;      // average read of a copy
  static constexpr size_t kMaxAside = 64;             // out-of-order reads kept

  // `size`: the file's; `percent`: 1..100.
  BulkDetector(uint64_t size, uint32_t percent);
  // The share in bytes (the site proxy's rule, plugin/proxy/copy_through.h).
  struct Bytes {
    uint64_t n = 0;
  };
  BulkDetector(uint64_t size, Bytes threshold);

  // Records an application read; true once the handle reads as a copy does (then for good).
  bool Note(std::span<const io::ReadRequest> requests);
  // The same for reads given as byte ranges (served without a buffer: the site proxy's sendfile).
  bool Note(std::span<const fetch::Range> ranges);
  bool bulk() const;
  uint64_t prefix() const;

 private:
  const uint64_t size_;
  const uint64_t threshold_;
  mutable Mutex mu_;
  uint64_t front_ FERRY_GUARDED_BY(mu_) = 0;  // [0, front_) read
  uint64_t reads_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t bytes_ FERRY_GUARDED_BY(mu_) = 0;
  std::vector<fetch::Range> aside_ FERRY_GUARDED_BY(mu_);  // beyond front_, sorted by offset
  bool bulk_ FERRY_GUARDED_BY(mu_) = false;
  bool given_up_ FERRY_GUARDED_BY(mu_) = false;  // too scattered to be a copy
};

}  // namespace ferry::readahead
