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
// Thread-safety: OnRead may be called concurrently (one mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "fetch/range.h"
#include "rootio/tree_model.h"

namespace ferry::proxy {

class ReadAhead {
 public:
  // `trees`: every TTree of the file; `units`: windows fetched ahead (>= 1).
  ReadAhead(std::vector<rootio::TreeInfo> trees, uint32_t units);

  // A client read `chunks` (offset, length pairs); appends the basket records to fetch now to
  // `ahead` (sorted by offset, each at most once over the life of this object).
  void OnRead(std::span<const fetch::Range> chunks, std::vector<fetch::Range>& ahead);

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

  std::vector<rootio::TreeInfo> trees_;
  uint32_t units_;
  std::vector<BasketAt> by_seek_;
  std::mutex mu_;
  // Per tree, per branch: the first basket neither read nor predicted yet.
  std::vector<std::vector<uint32_t>> next_;
  std::vector<BranchKey> last_read_;  // branches of the previous vector read
};

}  // namespace ferry::proxy
