// ReadAhead: which bytes of a ROOT file a reader will ask for next, learned from its reads —
// TTreeCache's learning, done by the cache. It sees a file through its format-neutral layout
// (rootio/layout.h: datasets, their columns and the units of each column); below, "tree",
// "branch" and "basket" are a dataset, a column and a unit of it. Used by the client plug-in
// (through FileAhead, file_ahead.h) and by the site proxy (src/plugin/proxy/file_ahead.cc).
//
// Why: ROOT's TTreeCache, uproot and ferry's ClusterReader read the baskets of the branches
// they need for one cluster, wait a round trip, decode, then ask for the same branches' next
// baskets. The cache parses ROOT files, so from the first such read it knows the branches and
// where their next baskets lie, and can fetch them while the reader decodes.
//
// Model (per tree): each read is mapped to the basket records it covers (chunks that are no
// basket — headers, keys, metadata — are ignored, and so is every file without trees). A
// branch is *active* while it has been read up to at least the first entry of the latest read
// of its tree: the branches of a cluster read, and also those read one at a time for the same
// entries (uproot asking branch by branch). A branch the reader stopped reading drops out one
// read later. Predictions are the next baskets of the active branches in entry order; each
// basket is predicted at most once over the life of the object (cursors only move forward: a
// reader going back gets no read-ahead there).
//
// Bookkeeping for the windowed user: a predicted basket is *used* when a read covers it and
// *stale* when the reader has gone more than kReorderSlack baskets past it in its branch, or
// its branch left the active set. A read is *in sequence* when it covers a predicted basket, a
// basket at most kReorderSlack away from the next one of its branch, or, for a branch not read
// before, the basket at entry 0 (the start of a pass) or the one holding the furthest entry read
// in its tree (a branch added to the set); otherwise it is a seek.
//
// Two interfaces:
// - windowed (client plug-in): Observe() every read, then Predict(max_bytes) as far as the
//   caller's window allows; the caller decides when to fetch and counts hits and waste.
// - units (site proxy): OnRead() predicts the baskets that start before e1 + units * (e1 - e0)
//   for a read of entries [e0, e1); Seed() before a file's first read.
//
// Across files: an analysis reads the same branches of every file of its dataset, and opens its
// files before it reads them. BranchMemory keeps, per tree name, the branches last read; a file
// whose trees are loaded before its first read is seeded with them (the baskets of its first
// min(units, kSeedClusters) clusters). A memory older than kBranchMemorySeconds is not used.
// Thread-safety: every method may be called concurrently (one mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "fetch/range.h"
#include "rootio/layout.h"

namespace ferry::readahead {

// Baskets a reader may be past a predicted one (readers with several reads in flight deliver
// them slightly out of order) before that prediction counts as stale.
inline constexpr uint32_t kReorderSlack = 8;

class ReadAhead {
 public:
  // `sets`: every dataset of the file (rootio::LoadLayout); `units`: windows fetched ahead by
  // OnRead (>= 1).
  ReadAhead(std::vector<rootio::LayoutSet> sets, uint32_t units);

  struct Observation {
    uint32_t baskets = 0;  // basket records the read covered
    uint32_t used = 0;     // ... of which had been predicted
    uint64_t bytes = 0;    // bytes of those basket records
    bool in_sequence = false;
    // A read of several branches, one of them read for the first time from its tree's entry 0:
    // a pass (TTreeCache, uproot, ferry) starting.
    bool from_start = false;
  };
  // Records a read of `chunks`: predicted baskets it covered are appended to `used`, predictions
  // it made stale to `stale`. When the set of active branches changed, `learned` (optional)
  // receives the new set per tree name.
  Observation Observe(std::span<const fetch::Range> chunks,
                      std::vector<fetch::Range>& used,
                      std::vector<fetch::Range>& stale,
                      std::map<std::string, std::vector<std::string>>* learned = nullptr);
  // Appends the next baskets of the active branches, in entry order, to `out` until their bytes
  // reach `max_bytes` (one basket at least when any is left and max_bytes > 0). Returns the bytes.
  uint64_t Predict(uint64_t max_bytes, std::vector<fetch::Range>& out);

  // Units interface: a read of `chunks`; appends the basket records to fetch now to `ahead`
  // (sorted by offset). `learned` as for Observe.
  void OnRead(std::span<const fetch::Range> chunks,
              std::vector<fetch::Range>& ahead,
              std::map<std::string, std::vector<std::string>>* learned = nullptr);

  // Before any read: the baskets of `branches` (names) of tree `tree` in its first
  // min(units, kSeedClusters) clusters, appended to `ahead`; the branches become active. Nothing
  // once a read matched a basket, or for unknown names.
  void Seed(const std::string& tree,
            const std::vector<std::string>& branches,
            std::vector<fetch::Range>& ahead);

  // Names of the file's trees.
  std::vector<std::string> TreeNames() const;
  size_t baskets() const { return by_seek_.size(); }
  // Predicted baskets neither used nor stale yet.
  size_t pending() const;

 private:
  struct BasketAt {
    uint64_t seek = 0;
    uint32_t bytes = 0;
    uint32_t tree = 0;
    uint32_t branch = 0;
    uint32_t index = 0;
  };
  struct BranchState {
    uint32_t next = 0;         // first basket neither read nor predicted
    int64_t last = -1;         // highest basket index read
    int64_t read_end = -1;     // end entry of the baskets read (-1: never read)
    uint32_t oldest_flag = 0;  // no predicted flag below this index
    size_t flags = 0;          // index of basket 0 in flags_
  };
  const BasketAt* Find(uint64_t offset) const;
  BranchState& State(uint32_t tree, uint32_t branch) FERRY_REQUIRES(mu_) {
    return state_[tree][branch];
  }
  Observation ObserveLocked(std::span<const fetch::Range> chunks,
                            std::vector<fetch::Range>* used,
                            std::vector<fetch::Range>* stale,
                            std::map<std::string, std::vector<std::string>>* learned,
                            std::map<uint32_t, std::pair<int64_t, int64_t>>& spans)
      FERRY_REQUIRES(mu_);
  // Clears the predicted flags of branch (tree, b) below index `below`, reporting them stale.
  void StaleBelow(uint32_t tree, uint32_t b, uint64_t below, std::vector<fetch::Range>* stale)
      FERRY_REQUIRES(mu_);
  // Appends the baskets of `branches` of `tree` starting before entry `until`.
  void PredictUntil(uint32_t tree,
                    std::span<const uint32_t> branches,
                    int64_t until,
                    std::vector<fetch::Range>& ahead) FERRY_REQUIRES(mu_);
  void Emit(uint32_t tree, uint32_t b, std::vector<fetch::Range>& out, uint64_t* bytes)
      FERRY_REQUIRES(mu_);
  std::string TreeName(uint32_t tree) const;

  std::vector<rootio::LayoutSet> trees_;
  uint32_t units_;
  std::vector<BasketAt> by_seek_;
  mutable Mutex mu_;
  std::vector<std::vector<BranchState>> state_ FERRY_GUARDED_BY(mu_);  // per tree, per branch
  // Per basket: predicted, not used nor stale.
  std::vector<uint8_t> flags_ FERRY_GUARDED_BY(mu_);
  size_t pending_ FERRY_GUARDED_BY(mu_) = 0;
  // Per tree: active branches, sorted.
  std::vector<std::vector<uint32_t>> active_ FERRY_GUARDED_BY(mu_);
  std::vector<int64_t> frontier_ FERRY_GUARDED_BY(mu_);  // per tree: the furthest entry read
  bool read_ FERRY_GUARDED_BY(mu_) = false;              // a read matched a basket
};

inline constexpr int64_t kBranchMemorySeconds = 600;
// Clusters a seeded file gets before its first read (see Seed).
inline constexpr size_t kSeedClusters = 2;

// What the last reader of each tree name read (see ReadAhead). Thread-safe.
class BranchMemory {
 public:
  // Called with the branches once they are known; returns false when its file is gone.
  using Waiter = std::function<bool(const std::vector<std::string>& branches)>;

  // Records the branches a reader read in tree `tree` and hands them to the files waiting for
  // that tree (outside the lock).
  void Learn(const std::string& tree, const std::vector<std::string>& branches);
  // The branches last learned for `tree` (recently); when there are none, `waiter` is called by
  // the next Learn of that tree instead.
  std::vector<std::string> RecallOrWait(const std::string& tree, Waiter waiter);

 private:
  struct Known {
    std::vector<std::string> branches;
    int64_t learned_ns = 0;
  };
  Mutex mu_;
  std::map<std::string, Known> known_ FERRY_GUARDED_BY(mu_);
  std::multimap<std::string, Waiter> waiting_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::readahead
