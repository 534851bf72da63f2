// Store: reads an event store directory (docs/format/store.md).
//
//   auto store = Store::Open(dir, {.mode = IoMode::kMmap});
//   std::vector<rootio::Column> cols;
//   store->ReadEvents(ids, store->ResolveColumns({"MET_pt", "Jet_pt"}).value(), &cols);
//
// Opening reads the manifest only; a run's shard is attached (opened, header and lumi table
// read and checked) the first time one of its events or a scan needs it. An event costs one
// read of its index record (fixed columns) plus, when a jagged column is asked for, one read
// of its collection block (skipped when the block's chunks are cached). With IoMode::kMmap
// every access is a zero-copy io::ByteSource::View: no read system call at all.
//
// Values come back as rootio::Column (native endianness, jagged columns with offsets), one
// entry per requested event, so they print like `ferry root dump` (cli/value_format.h).
// Errors: kNotFound naming run:lumi:event for an absent event; kCorruption naming the file and
// structure for any checksum, bound or consistency failure; kUnsupported for a newer format.
// Thread-safety: none; use one Store per thread (they may share a directory).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "io/byte_source.h"
#include "rootio/column.h"
#include "store/block_cache.h"
#include "store/copies.h"
#include "store/dictionary.h"
#include "store/format.h"

namespace ferry::store {

enum class IoMode { kPread, kMmap };

// Opens the bytes of a store file by path or URL (dir + "/" + name). The default opens local
// files (pread or mmap); the CLI passes xrd::OpenSource so that root:// stores read through
// XrdCl and its plug-ins (the ferry cache), which keeps XRootD out of this library.
using SourceOpener =
    std::function<Result<std::unique_ptr<io::ByteSource>>(const std::string& path, IoMode mode)>;

struct StoreOptions {
  IoMode mode = IoMode::kPread;    // kMmap falls back to reads where the source cannot map
  size_t cache_bytes = 32u << 20;  // decompressed chunks kept for nearby events
  SourceOpener open;               // empty: local files
};

struct EventId {
  uint64_t run = 0;
  uint64_t lumi = 0;
  uint64_t event = 0;
  std::string ToString() const;
  bool operator==(const EventId&) const = default;
};
// "RUN:LUMI:EVENT" (decimal). InvalidArgument otherwise.
Result<EventId> ParseEventId(std::string_view text);

struct StoreStats {
  uint64_t reads = 0;                // ranges read (a pread each locally)
  uint64_t requests = 0;             // read requests: a vector read of many ranges is one
  uint64_t views = 0;                // zero-copy views (mmap path)
  uint64_t bytes = 0;                // bytes read or viewed
  uint64_t record_reads = 0;         // index records fetched
  uint64_t block_reads = 0;          // collection blocks / S chunks fetched
  uint64_t number_reads = 0;         // event-number arrays fetched
  uint64_t chunks_decompressed = 0;  // payload chunks decompressed (codec calls + raw copies)
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
  uint64_t shards_attached = 0;
};

// One batch of a scan: `events` consecutive events of one run in storage order; columns as
// requested (same order).
struct ScanBatch {
  uint64_t run = 0;
  uint64_t first_ordinal = 0;
  int64_t events = 0;
  std::vector<rootio::Column> columns;
};

// How a scan treats column copies (docs/format/store.md section 12).
struct ScanOptions {
  // Write a column copy of each requested collection column of each shard that has none (or
  // whose copy is unusable), published when the scan ends. Local stores only, and only when
  // no other writer holds the store; otherwise the scan says why in ScanReport::not_built.
  bool build_copies = false;
};

// Per requested jagged column: shards whose values came from a column copy (or the shard's own
// J chunks), from the E blocks (C blocks in version 1), and copies this scan built.
struct ScanColumnReport {
  int32_t column = 0;
  uint64_t shards_from_copies = 0;
  uint64_t shards_from_blocks = 0;
  uint64_t copies_built = 0;
};

struct ScanReport {
  std::vector<ScanColumnReport> columns;
  // Copies that could not be used (corrupt, missing, unreadable), each naming the copy file:
  // their shards were read from the E blocks instead.
  std::vector<Error> copy_errors;
  std::string not_built;                  // why copies were asked for and not built
  std::optional<CopiesChange> published;  // the copies the scan added (and the budget evicted)
};

struct VerifyReport {
  uint64_t records = 0;
  uint64_t padding = 0;
  uint64_t s_chunks = 0;  // S-directory chunks: fixed columns, and J chunks (version 2)
  uint64_t c_blocks = 0;
  uint64_t copies = 0;  // column copies, every chunk decoded
  uint64_t bytes = 0;
};

// Typed view of one event read with ReadEvent.
class Event {
 public:
  const EventId& id() const { return id_; }
  // The column's values (nullptr when it was not read).
  const rootio::Column* column(std::string_view name) const;
  // A scalar of type T (must match the stored type's size and kind: float for Float_t, ...).
  template <class T>
  Result<T> Get(std::string_view name) const {
    FERRY_TRY(Check(name, sizeof(T), false));
    return column(name)->values<T>()[0];
  }
  // The values of a jagged or fixed-array column.
  template <class T>
  Result<std::span<const T>> Values(std::string_view name) const {
    FERRY_TRY(Check(name, sizeof(T), true));
    return column(name)->values<T>();
  }

 private:
  friend class Store;
  Status Check(std::string_view name, size_t size, bool many) const;
  EventId id_;
  std::vector<std::string> names_;
  std::vector<rootio::Column> columns_;
};

class Shard;

class Store {
 public:
  static Result<std::unique_ptr<Store>> Open(const std::string& dir,
                                             const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const Schema& schema() const { return manifest_.schema; }
  const std::string& dir() const { return dir_; }

  // Schema indices of the named columns (all columns for an empty list). kNotFound names an
  // unknown column.
  Result<std::vector<int32_t>> ResolveColumns(std::span<const std::string> names) const;

  // True when the event is in the store (resolution only; no record read).
  Result<bool> Contains(const EventId& id);
  // Appends one entry per event to out (resized to columns.size(), started on first use).
  Status ReadEvents(std::span<const EventId> ids,
                    std::span<const int32_t> columns,
                    std::vector<rootio::Column>* out);
  Result<Event> ReadEvent(const EventId& id, std::span<const std::string> names = {});
  // Calls fn for consecutive batches of every run in run order, storage order within a run.
  // Reads only the S chunks of the requested fixed columns and, for jagged ones, their
  // counters' S chunks plus their own J chunks (version 2; version 1: their chunks in the C
  // blocks).
  Status Scan(std::span<const int32_t> columns, const std::function<Status(const ScanBatch&)>& fn);
  // The same, reading collection columns from their column copies where the manifest names
  // one (a copy that fails a check is reported in report->copy_errors and its shard read from
  // the E blocks), and building copies when options ask for it (section 12).
  Status Scan(std::span<const int32_t> columns,
              const std::function<Status(const ScanBatch&)>& fn,
              const ScanOptions& options,
              ScanReport* report);
  // False for stores read through a SourceOpener (root://): they are never written.
  bool local() const { return !options_.open; }
  // Checks every checksum, every record against the event arrays and the C table, and
  // decompresses every chunk.
  Result<VerifyReport> Verify();

  StoreStats stats() const;
  void ResetStats();

  // An empty column shaped for c (one entry is appended per event).
  static rootio::Column StartColumnFor(const ColumnSpec& c);

 private:
  Store() = default;
  Result<Shard*> Attach(size_t run_slot);
  // An event's shard and slots (attaching the shard); kNotFound naming run:lumi:event.
  struct Resolved {
    Shard* shard;
    size_t run_slot;
    uint64_t lumi_slot;
    uint64_t event_slot;
  };
  Result<Resolved> Resolve(const EventId& id);
  // The steps of Scan (store_scan.cc): per shard, per S block, the fixed columns' chunks read
  // and decoded, the batch shaped from them, the collections filled.
  struct ScanState;
  struct CopyBuild;
  Status ScanShard(Shard& shard,
                   std::span<const int32_t> columns,
                   ScanState& st,
                   const std::function<Status(const ScanBatch&)>& fn,
                   CopyBuild& build,
                   ScanReport* report);
  // Column copies in a scan (store_copies.cc). StartCopyBuild takes the writer lock when
  // copies are to be built; PrepareCopies opens the shard's copies (or copy writers) for the
  // requested jagged columns; FillJaggedV3 fills a batch's collections from the copies and the
  // E blocks (feeding the writers); FinishShardCopies completes the writers; EndCopyBuild
  // publishes what was built.
  Status StartCopyBuild(const ScanOptions& options, CopyBuild& build, ScanReport* report);
  void PrepareCopies(Shard& shard,
                     std::span<const int32_t> columns,
                     ScanState& st,
                     CopyBuild& build,
                     ScanReport* report);
  Status FillJaggedV3(Shard& shard,
                      uint64_t block,
                      std::span<const int32_t> columns,
                      ScanState& st,
                      ScanReport* report);
  Status FinishShardCopies(ScanState& st, CopyBuild& build, ScanReport* report);
  Status EndCopyBuild(CopyBuild& build, ScanReport* report);
  // Opens and checks the copy file of entry for shard (header against the manifest and the
  // shard, directory); its chunk references into refs.
  Result<std::unique_ptr<io::ByteSource>> OpenCopy(const CopyEntry& entry,
                                                   const Shard& shard,
                                                   std::vector<ChunkRef>* refs);
  // Chunk ref of a copy: a view with mmap (no read), else read into scratch; counted.
  Status ReadCopyChunk(io::ByteSource& source,
                       const ChunkRef& ref,
                       std::vector<uint8_t>* scratch,
                       std::span<const uint8_t>* out);
  // Every named copy of shard decoded to the sizes its S blocks' element totals imply.
  Status VerifyCopies(Shard& shard, std::span<const uint64_t> s_group_elements, VerifyReport* rep);
  Status ReadFixedChunks(Shard& shard,
                         uint64_t b,
                         uint64_t first,
                         uint64_t n,
                         const std::string& where,
                         ScanState& st);
  static void FillBatch(
      const Schema& s, std::span<const int32_t> columns, uint64_t first, uint64_t n, ScanState& st);
  // Version 3 picks: every id resolved first, then per shard one request for the records and
  // one for the E blocks not cached (docs/format/store.md section 2).
  Status ReadEventsV3(std::span<const EventId> ids,
                      std::span<const int32_t> columns,
                      std::vector<rootio::Column>* out);
  // The steps of ReadEventsV3 (see store_v3.cc), over one shard's events (list: indices into
  // ids and wants): records checked, E blocks found in the cache or read and decoded, each
  // block's picked events copied out of it at once; then every event's values into out.
  struct PickV3;
  Status ReadPickedRecords(Shard& shard,
                           std::span<const EventId> ids,
                           std::span<const size_t> list,
                           std::span<PickV3> wants);
  Status ReadPickedBlocks(size_t run_slot,
                          std::span<const EventId> ids,
                          std::span<const int32_t> columns,
                          std::span<const size_t> list,
                          std::span<PickV3> wants);
  Status CopyOutPicks(const DecodedBlock& block,
                      std::span<const EventId> ids,
                      std::span<const int32_t> columns,
                      std::span<const size_t> picks,
                      std::span<PickV3> wants);
  void AssemblePicked(std::span<const int32_t> columns,
                      std::span<PickV3> wants,
                      std::vector<rootio::Column>* out) const;
  // Decodes a version-3 E block (CRC checked) into *out, reusing its buffers.
  Status DecodeEBlockInto(std::span<const uint8_t> bytes,
                          uint64_t first_ordinal,
                          DecodedBlock* out);
  // The same into a new, cacheable chunk.
  Result<Chunk> DecodeEBlock(std::span<const uint8_t> bytes, uint64_t first_ordinal);
  // Version 3 collections of events [first, first + n) from the E blocks (no J chunks).
  Status FillJaggedFromE(Shard& shard,
                         uint64_t first,
                         uint64_t n,
                         std::span<const int32_t> columns,
                         const std::vector<size_t>& jagged_at,
                         ScanBatch* batch);
  // Verify of one shard, either version: directories, event numbers, every block, every S/J
  // chunk, every index record.
  Status VerifyShard(Shard& shard, VerifyReport* rep);
  // "E block" (version 3) or "collection block": how errors name a shard's blocks.
  static const char* BlockNoun(const Shard& shard);
  // Block b at ref (its context bw) checked and decoded; its collection elements added to
  // group_elements (one per group). Return the events it holds; nullopt for a version 1-2
  // shard without collections, whose C blocks are empty.
  Result<std::optional<uint64_t>> VerifyCBlock(Shard& shard,
                                               const CBlockRef& ref,
                                               const std::string& bw,
                                               std::span<uint64_t> group_elements,
                                               std::vector<uint8_t>* scratch,
                                               std::vector<uint8_t>* raw);
  Result<std::optional<uint64_t>> VerifyEBlock(Shard& shard,
                                               uint64_t b,
                                               const CBlockRef& ref,
                                               const std::string& bw,
                                               std::span<uint64_t> group_elements,
                                               std::vector<uint8_t>* scratch);
  // Every S chunk and J chunk, decoded to the size the event count or s_group_elements (per S
  // block and group) implies.
  Status VerifySChunks(Shard& shard,
                       const std::string& where,
                       std::span<const uint64_t> s_group_elements,
                       VerifyReport* rep,
                       std::vector<uint8_t>* scratch,
                       std::vector<uint8_t>* raw);
  // Every index record against the event numbers (nums) and the blocks.
  Status VerifyRecords(Shard& shard,
                       const std::string& where,
                       std::span<const uint64_t> nums,
                       std::span<const CBlockRef> blocks,
                       VerifyReport* rep,
                       std::vector<uint8_t>* scratch);
  // Reads and checks the C block at offset and decodes the chunks of slots (plus those of
  // previous, a partial decode of the same block).
  Result<Chunk> DecodeBlock(Shard& shard,
                            uint64_t offset,
                            uint32_t size,
                            std::span<const int32_t> slots,
                            const Chunk& previous,
                            std::vector<uint8_t>* scratch);
  // Fills the jagged columns (batch->columns[jagged_at[q]], shaped from their counters) of
  // events [first, first + n) of a shard: from the J chunks when the range is one whole S
  // block of a version-2 shard (one read per column), else from the C blocks.
  Status FillJagged(Shard& shard,
                    uint64_t first,
                    uint64_t n,
                    std::span<const int32_t> columns,
                    const std::vector<size_t>& jagged_at,
                    ScanBatch* batch,
                    std::vector<uint8_t>* scratch,
                    std::vector<uint8_t>* header_scratch);
  // Reads chunk (slot, block) of the shard's S directory (a fixed column's S chunk, or from
  // slot fixed.size() on a J chunk), checks its CRC and decodes it into raw, which must have
  // the chunk's raw size. Returns its directory entry.
  Result<ChunkRef> ReadSChunk(Shard& shard,
                              size_t slot,
                              uint64_t block,
                              std::span<uint8_t> raw,
                              std::vector<uint8_t>* scratch);
  // An S/J chunk whose stored bytes are at hand: CRC, decode, and (version 3) unshuffle into
  // raw (value width w).
  Status DecodeSChunk(const ChunkRef& ref,
                      std::span<const uint8_t> stored,
                      bool shuffled,
                      size_t w,
                      std::span<uint8_t> raw);
  // stored -> raw (a raw copy when the sizes are equal, else the store's codec).
  Status DecodeChunk(std::span<const uint8_t> stored, std::span<uint8_t> raw);

  std::string dir_;
  StoreOptions options_;
  Manifest manifest_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unique_ptr<BlockCache> cache_;
  StoreStats counters_;
  ByteVector unshuffle_scratch_;
  // An E block decoded for one use (a scan's, a verify's, a pick the cache does not admit):
  // decoding into the same memory every time spares a fresh allocation, and its page faults,
  // per block.
  DecodedBlock block_scratch_;
  size_t pick_bytes_hint_ = 0;              // the largest picked event's values so far
  std::shared_ptr<const Dictionary> dict_;  // version 3: the manifest's dictionary, digested
};

}  // namespace ferry::store
