// ReadAhead: which bytes of a ROOT file a client will ask for next, learned from its vector
// reads — TTreeCache's learning, done by the server.
//
// Why: XrdXrootd serves one link's vector reads one after another (proxy_sfs.h), so a client
// whose threads read one file through one handle gets at most one vector read per origin round
// trip through a cold cache, where the origin itself would have pipelined them. Each vector
// read of a ROOT reader (ROOT's TTreeCache, uproot, ferry's ClusterReader) fetches the baskets
// of the branches it reads for the next entries; the next one asks for the same branches'
// following baskets. So while one vector read is served, the proxy fetches the following ones
// (over several origin channels at once), and they are cache hits when they come.
//
// Rule: a client vector read whose chunks are basket records of branches B covering entries
// [e0, e1) of a tree makes the baskets of B (and of the branches of the read before, in case
// it was partial) that start before e1 + units * (e1 - e0) due, each basket once per file. A
// basket the client reads itself is never predicted afterwards. Chunks that are not basket
// records (headers, keys, metadata) are ignored; so is everything of a file that is not a
// ROOT file.
// Cost when wrong: at most `units` windows of the branches read last (a client that stops
// early, or jumps).
//
// Across files: an analysis reads the same branches of every file of its dataset, and opens its
// files before it reads them. BranchMemory keeps, per tree name, the branches the last client
// read; a file whose trees are loaded before its first vector read is seeded with them (the
// baskets of its first `units` clusters), so its first vector read is a hit too. A memory
// older than kBranchMemorySeconds is not used.
// Thread-safety: OnRead and Seed may be called concurrently (one mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "fetch/range.h"
#include "rootio/tree_model.h"

namespace ferry::cache {

class ReadAhead {
 public:
  // `trees`: every TTree of the file; `units`: windows fetched ahead (>= 1).
  ReadAhead(std::vector<rootio::TreeInfo> trees, uint32_t units);

  // A client read `chunks` (offset, length pairs); appends the basket records to fetch now to
  // `ahead` (sorted by offset, each at most once over the life of this object). When the set of
  // branches read changed, `learned` receives it per tree name (else it is left empty).
  void OnRead(std::span<const fetch::Range> chunks,
              std::vector<fetch::Range>& ahead,
              std::map<std::string, std::vector<std::string>>* learned = nullptr);

  // Before any client vector read: the baskets of `branches` (names) of tree `tree` in its first
  // min(units, kSeedClusters) clusters, appended to `ahead`. Nothing once a client read happened or
  // for unknown names.
  void Seed(const std::string& tree,
            const std::vector<std::string>& branches,
            std::vector<fetch::Range>& ahead);

  // Names of the file's trees.
  std::vector<std::string> TreeNames() const;
  size_t baskets() const { return by_seek_.size(); }

 private:
  struct BasketAt {
    uint64_t seek = 0;
    uint32_t bytes = 0;
    uint32_t tree = 0;
    uint32_t branch = 0;
    uint32_t index = 0;
  };
  struct BranchKey {
    uint32_t tree = 0;
    uint32_t branch = 0;
    bool operator==(const BranchKey&) const = default;
    bool operator<(const BranchKey& o) const {
      return tree != o.tree ? tree < o.tree : branch < o.branch;
    }
  };
  const BasketAt* Find(uint64_t offset) const;
  // Appends the baskets of `branches` starting before entry `until`, advancing their cursors.
  void PredictLocked(std::span<const BranchKey> branches,
                     uint32_t tree,
                     int64_t until,
                     std::vector<fetch::Range>& ahead);

  std::vector<rootio::TreeInfo> trees_;
  uint32_t units_;
  std::vector<BasketAt> by_seek_;
  std::mutex mu_;
  // Per tree, per branch: the first basket neither read nor predicted yet.
  std::vector<std::vector<uint32_t>> next_;
  std::vector<BranchKey> last_read_;  // branches of the previous vector read
  bool read_ = false;                 // a client vector read matched a basket
};

inline constexpr int64_t kBranchMemorySeconds = 600;
// Clusters a seeded file gets before its first read (see Seed).
inline constexpr size_t kSeedClusters = 2;

// What the last client of each tree name read (see ReadAhead). Thread-safe.
class BranchMemory {
 public:
  // Called with the branches once they are known; returns false when its file is gone.
  using Waiter = std::function<bool(const std::vector<std::string>& branches)>;

  // Records the branches a client read in tree `tree` and hands them to the files waiting for
  // that tree (outside the lock).
  void Learn(const std::string& tree, std::vector<std::string> branches);
  // The branches last learned for `tree` (recently); when there are none, `waiter` is called by
  // the next Learn of that tree instead.
  std::vector<std::string> RecallOrWait(const std::string& tree, Waiter waiter);

 private:
  struct Known {
    std::vector<std::string> branches;
    int64_t learned_ns = 0;
  };
  std::mutex mu_;
  std::map<std::string, Known> known_;
  std::multimap<std::string, Waiter> waiting_;
};

}  // namespace ferry::cache
