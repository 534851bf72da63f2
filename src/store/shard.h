// Shard: one attached run shard of a Store (internal to the store library).
//
// Attach reads and checks the header and the lumi table, builds the lumi lookup (a direct
// table over the lumi range when it is dense, else binary search) and loads the event-number
// section in one read when it is at most 16 MiB (otherwise one lumi's array per first use).
// The S directory and the C table are loaded on first use by a scan or Verify. Bytes() is the
// only way payload bytes are fetched: a zero-copy View with mmap, a pread into the caller's
// scratch otherwise; both are counted in the StoreStats passed at attach. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "io/byte_source.h"
#include "store/format.h"
#include "store/store.h"

namespace ferry::store {

class Shard {
 public:
  // open: how the shard's bytes are reached (a local file, or root:// through XrdCl).
  static Result<std::unique_ptr<Shard>> Attach(const std::string& path,
                                               const Manifest& manifest,
                                               size_t run_slot,
                                               IoMode mode,
                                               const SourceOpener& open,
                                               StoreStats* counters);

  const ShardHeader& header() const { return header_; }
  const Layout& layout() const { return layout_; }
  const std::vector<LumiEntry>& lumis() const { return lumis_; }
  const std::string& path() const { return path_; }

  // Bytes [offset, offset + size) of the shard; the span is valid until the next call with the
  // same scratch (pread) or for the Shard's lifetime (mmap).
  Result<std::span<const uint8_t>> Bytes(uint64_t offset,
                                         size_t size,
                                         std::vector<uint8_t>* scratch);
  // Many ranges in one request (one vector read remotely, one pread per range locally, views
  // with mmap): out[i] is valid like Bytes' result; scratch[i] backs range i on the read path.
  Status BytesV(std::span<const std::pair<uint64_t, size_t>> ranges,
                std::vector<std::vector<uint8_t>>* scratch,
                std::vector<std::span<const uint8_t>>* out);
  // Lumi slot of a lumi number, or -1.
  int64_t LumiSlot(uint64_t lumi) const;
  // The sorted event numbers of a lumi slot.
  Result<std::span<const uint64_t>> EventNumbers(size_t lumi_slot);
  // Directory entries. The S directory is read one column's slice at a time on first use
  // (each chunk carries its own CRC); the C table whole, CRC checked.
  // Slot s < fixed.size() is a fixed column; fixed.size() + j is jagged column j's J chunk
  // (version 2 shards only: has_j_chunks()).
  Result<ChunkRef> SChunk(size_t fixed_slot, uint64_t block);
  // Loads the S-directory slices of the given slots that are not loaded yet, in one request.
  Status LoadSDirectory(std::span<const size_t> slots);
  bool has_j_chunks() const { return header_.j_chunks(); }
  bool v3() const { return header_.version >= 3; }
  // Columns of the S directory: the fixed ones, plus the jagged ones in version 2.
  size_t s_dir_columns() const;
  Result<CBlockRef> CBlock(uint64_t block);
  // The whole event-number section, its CRC and the order within each lumi checked (Verify).
  Result<std::vector<uint64_t>> AllEventNumbers();
  // Reads both directories whole and checks their CRCs (Verify).
  Status CheckDirectories();

 private:
  Shard() = default;
  Status LoadCTable();

  std::string path_;
  const Manifest* manifest_ = nullptr;
  std::unique_ptr<io::ByteSource> source_;
  bool mmap_ = false;
  StoreStats* counters_ = nullptr;
  ShardHeader header_;
  Layout layout_;
  std::vector<LumiEntry> lumis_;
  uint64_t lumi_base_ = 0;
  std::vector<int32_t> lumi_direct_;  // lumi - lumi_base_ -> slot, -1 absent; empty if sparse
  std::vector<uint64_t> numbers_;     // all event numbers when loaded eagerly
  bool numbers_tried_ = false;
  std::map<size_t, std::vector<uint64_t>> lumi_numbers_;  // lazily loaded per lumi
  std::vector<std::vector<uint8_t>> s_dir_;               // per S-directory column, on first use
  bool c_table_loaded_ = false;
  std::vector<uint8_t> c_table_;
};

}  // namespace ferry::store
