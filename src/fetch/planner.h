// Read planning for a page cache in front of a remote origin (pure: no I/O, no threads).
//
// Given what an application asks for and what the cache already holds, the planner decides
// which bytes to fetch from the origin and how to pack them into vector reads:
//
//   wanted ranges --Missing()--> missing byte runs --Pack()--> chunks grouped into vector reads
//
// 1. Missing(): rounds each wanted range to the page grid, drops pages the cache holds for
//    the wanted bytes, and emits the missing bytes as sorted, merged runs. A page may be held
//    partially (one contiguous valid interval, see PageCover); the bytes fetched for such a page
//    always touch its valid interval, so the union stays one interval. With round_to_pages the
//    runs cover whole pages (minus what is held) instead of only the wanted bytes.
// 2. Pack(): bridges gaps of at most `iogap` bytes between runs (one chunk instead of two, at
//    the price of the gap's bytes), splits runs longer than `max_chunk_bytes`, and groups the
//    chunks into vector reads of at most `max_chunks` chunks and `max_request_bytes` bytes.
//    XRootD's limits are 1024 chunks per kXR_readv and 2097136 bytes per chunk.
//
// Allocation: outputs are caller-owned vectors that are cleared and refilled, so a caller that
// keeps them (PlanScratch) allocates nothing once they have grown to the working size.
// Thread-safety: a Planner is immutable after construction; concurrent calls are safe when each
// thread uses its own outputs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fetch/range.h"

namespace ferry::fetch {

// Bytes [lo, hi) of one page that the cache holds (relative to the page start); lo == hi when
// it holds none. A fully held page has lo = 0, hi = the page's length (short for the last page).
struct PageCover {
  uint32_t lo = 0;
  uint32_t hi = 0;
  bool empty() const { return lo >= hi; }
};

// What the cache holds, page by page. Implemented by the page store's in-memory index.
class CoverageMap {
 public:
  virtual ~CoverageMap() = default;
  virtual PageCover Cover(uint64_t page) const = 0;
};

// A CoverageMap of an empty cache.
class NothingCovered final : public CoverageMap {
 public:
  PageCover Cover(uint64_t /*page*/) const override { return {}; }
};

struct PlannerConfig {
  uint32_t page_size = 4096;
  bool round_to_pages = false;             // fetch whole pages rather than only the wanted bytes
  uint64_t iogap = 0;                      // bridge gaps up to this many bytes
  uint32_t max_chunks = 1024;              // chunks per vector read (XrdProto::maxRvecsz)
  uint32_t max_chunk_bytes = 2097136;      // bytes per chunk (XRootD's readv_ior_max default)
  uint64_t max_request_bytes = 16u << 20;  // bytes per vector read (spreads big reads)
};

// One vector read: chunks[first, first + count) of the plan.
struct VectorRead {
  size_t first = 0;
  size_t count = 0;
  uint64_t bytes = 0;
};

struct FetchPlan {
  std::vector<Range> chunks;  // sorted, non-overlapping
  std::vector<VectorRead> reads;
  uint64_t bytes = 0;  // sum of chunk lengths

  void clear() {
    chunks.clear();
    reads.clear();
    bytes = 0;
  }
};

// Reusable buffers for Plan().
struct PlanScratch {
  std::vector<Range> wanted;
  std::vector<Range> missing;
};

class Planner {
 public:
  // Invalid settings are clamped: page_size >= 1, max_chunks in [1, 1024] is not enforced
  // (callers may plan for other protocols) but must be >= 1, max_chunk_bytes >= 1.
  explicit Planner(const PlannerConfig& config);

  const PlannerConfig& config() const { return config_; }

  // Missing bytes of `wanted` (normalised; use Normalize()) within a file of `file_size` bytes.
  // Ranges past the end are clipped. `out` receives normalised ranges.
  void Missing(std::span<const Range> wanted,
               uint64_t file_size,
               const CoverageMap& cover,
               std::vector<Range>& out) const;

  // True when every wanted byte (clipped to file_size) is held. Allocation-free.
  bool AllHeld(std::span<const Range> wanted, uint64_t file_size, const CoverageMap& cover) const;

  // Coalesces, splits and groups normalised `missing` runs into vector reads.
  void Pack(std::span<const Range> missing, FetchPlan& out) const;

  // Missing() then Pack(); `wanted` may be unsorted and overlapping.
  void Plan(std::span<const Range> wanted,
            uint64_t file_size,
            const CoverageMap& cover,
            PlanScratch& scratch,
            FetchPlan& out) const;

 private:
  PlannerConfig config_;
};

}  // namespace ferry::fetch
