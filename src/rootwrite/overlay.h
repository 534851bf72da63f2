// OverlayWriter: lays out the overlay of a replica's virtual file (see relocate.h) for one ROOT
// file: which bytes go where, and the patches over the original. It does no I/O: the caller
// hands it basket records and writes what it returns wherever the overlay lives.
//
// Virtual file layout (docs/format/replica.md):
//
//   [0, original_size)                      the original bytes, with patches (header, keys list)
//   [original_size, baskets_begin)          one slot per relocated tree: its new TTree record,
//                                           then zeros up to the slot's reserved size
//   [baskets_begin, virtual_size)           re-encoded baskets, in the order they were added
//
// The tree records come first because a record's key may have 32-bit seeks (every file under
// 2 GB), so it must sit below 2^31 - 1; baskets may go anywhere. A record's final size is only
// known once every basket is placed (its payload holds their seeks), so each slot reserves the
// size of the original payload compressed with the replica's codec plus a margin; Finish()
// reports kNoSpace with the size needed when a record outgrew it (the caller builds
// again with that slot size).
//
//   OverlayWriter w(file_size, setting);
//   auto t = w.AddTree(record, info, key_entry_offset, key_entry);
//   w.Start();                       // slots fixed: baskets_begin is known
//   w.AddBasket(*t, branch, basket, basket_record, &bytes);   // append `bytes` to the overlay
//   auto done = w.Finish(head);      // patches, tree records, virtual size
//
// Thread-safety: none (one builder thread).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootio/key.h"
#include "rootio/root_file.h"
#include "rootio/tree_model.h"
#include "rootwrite/relocate.h"

namespace ferry::rootwrite {

// One relocated basket: where it is in the virtual file and where it came from.
struct MovedBasket {
  uint32_t tree = 0;
  int32_t branch = 0;
  int32_t basket = 0;
  uint64_t offset = 0;  // virtual offset of the new record
  uint32_t bytes = 0;   // its size
  uint64_t original_offset = 0;
  uint32_t original_bytes = 0;
  codec::Setting setting;  // the encoding its payload got
  // An RNTuple page (rntuple_overlay.h): its decompressed size, and whether an XXH3 follows it.
  bool page = false;
  bool page_checksum = false;
  uint32_t raw_bytes = 0;
  // Placed as the original stores it (AddStoredBasket): `setting` names the original's codec.
  bool as_stored = false;
};

// A new TTree record and where it goes.
struct PlacedRecord {
  uint64_t offset = 0;  // virtual offset (inside the tree's slot)
  uint64_t slot_bytes = 0;
  ByteVector record;
};

struct Overlay {
  uint64_t original_size = 0;
  uint64_t baskets_begin = 0;  // first byte after the tree slots
  uint64_t virtual_size = 0;
  std::vector<Patch> patches;  // over [0, original_size), sorted by offset, disjoint
  std::vector<PlacedRecord> records;
};

// What a replica build places its units through, whatever the format: OverlayWriter moves a
// TTree's baskets, RntupleOverlayWriter (rntuple_overlay.h) an RNTuple's pages. A unit is named
// (tree, branch, basket): the object's number in the writer, then the format's own two indices.
class UnitOverlayWriter {
 public:
  virtual ~UnitOverlayWriter() = default;
  // Fixes the layout of the records; units follow from baskets_begin().
  virtual void Start() = 0;
  virtual uint64_t baskets_begin() const = 0;
  // Re-encodes a unit given as the original file stores it and appends it to `out`.
  virtual Result<MovedBasket> AddBasket(uint32_t tree,
                                        int32_t branch,
                                        int32_t basket,
                                        std::span<const uint8_t> record,
                                        ByteVector* out) = 0;
  // Appends a unit already re-encoded with `setting` (copied from an earlier replica).
  virtual Result<MovedBasket> AddEncodedBasket(uint32_t tree,
                                               int32_t branch,
                                               int32_t basket,
                                               std::span<const uint8_t> encoded,
                                               const codec::Setting& setting,
                                               ByteVector* out) = 0;
  // Appends a unit as the original file stores it, no codec involved (a replica's stage 1):
  // `stored` is the original record (or a copy of it placed earlier as stored). A basket's
  // fSeekKey becomes its new place when its width holds it; an RNTuple page keeps its bytes
  // and checksum, and its column range keeps the original compression field.
  virtual Result<MovedBasket> AddStoredBasket(uint32_t tree,
                                              int32_t branch,
                                              int32_t basket,
                                              std::span<const uint8_t> stored,
                                              ByteVector* out) = 0;
  // Units get the encoding `choose` picks among `candidates`.
  virtual void set_encodings(std::vector<codec::Setting> candidates, EncodingChooser choose) = 0;
  // The overlay's description; `head`: the original file's first bytes (100 are enough).
  virtual Result<Overlay> Finish(std::span<const uint8_t> head) = 0;
};

// The virtual file in memory: `file` with the overlay's patches, its records and `units` (the
// bytes the writer appended) from baskets_begin. For tests and `ferry root relocate`.
std::vector<uint8_t> VirtualFileBytes(std::span<const uint8_t> file,
                                      const Overlay& overlay,
                                      std::span<const uint8_t> units);

class OverlayWriter final : public UnitOverlayWriter {
 public:
  OverlayWriter(uint64_t original_size, codec::Setting setting)
      : original_size_(original_size), setting_(setting), candidates_{setting} {}

  // Registers a tree whose baskets will move; `record`: its TTree record (key + stored payload),
  // `info` parsed from it, `key_entry_*`: its key header in the keys list (see relocate.h).
  // `slot_bytes` 0 picks the reserved size, otherwise it is used as given. Returns the tree's
  // number for AddBasket. Must be called before Start().
  Result<uint32_t> AddTree(std::span<const uint8_t> record,
                           const rootio::TreeInfo& info,
                           uint64_t key_entry_offset,
                           std::span<const uint8_t> key_entry,
                           uint64_t slot_bytes = 0);
  // Fixes the slots; baskets follow.
  void Start() override;
  uint64_t baskets_begin() const override { return baskets_begin_; }
  // Slot size of a tree; after Finish() failed with kNoSpace, the size each tree needs (build
  // again with those).
  uint64_t slot_bytes(uint32_t tree) const { return trees_[tree].slot_bytes; }
  uint64_t needed_slot_bytes(uint32_t tree) const { return trees_[tree].needed_bytes; }
  size_t tree_count() const { return trees_.size(); }

  // Re-encodes basket `basket` of `branch` of tree `tree` (its record: `record`) and appends it
  // to `out`; the new record occupies the next bytes of the overlay. InvalidArgument for an
  // embedded basket or one already added.
  Result<MovedBasket> AddBasket(uint32_t tree,
                                int32_t branch,
                                int32_t basket,
                                std::span<const uint8_t> record,
                                ByteVector* out) override;

  // As AddBasket for a basket already re-encoded with this writer's setting (copied from an
  // earlier replica): `encoded` is appended with its fSeekKey set to its new place.
  Result<MovedBasket> AddEncodedBasket(uint32_t tree,
                                       int32_t branch,
                                       int32_t basket,
                                       std::span<const uint8_t> encoded,
                                       const codec::Setting& setting,
                                       ByteVector* out) override;
  Result<MovedBasket> AddStoredBasket(uint32_t tree,
                                      int32_t branch,
                                      int32_t basket,
                                      std::span<const uint8_t> stored,
                                      ByteVector* out) override;
  // Whether AddBasket decodes each re-encoded basket again to check it (default true).
  void set_verify(bool verify) { verify_ = verify; }
  // Baskets get the encoding `choose` picks among `candidates` (default: the writer's setting
  // alone). Tree records keep the writer's setting.
  void set_encodings(std::vector<codec::Setting> candidates, EncodingChooser choose) override {
    candidates_ = std::move(candidates);
    chooser_ = std::move(choose);
  }

  // The overlay's description. `head`: the original file's first bytes (at least fBEGIN, 100 is
  // enough). kNoSpace when a tree record outgrew its slot (message names the size).
  Result<Overlay> Finish(std::span<const uint8_t> head) override;

  // The size a slot would need for `record_bytes` (with margin), for a retry.
  static uint64_t SlotFor(uint64_t record_bytes);

 private:
  struct TreeState {
    std::vector<uint8_t> record;
    rootio::TreeInfo info;
    uint64_t key_entry_offset = 0;
    std::vector<uint8_t> key_entry;
    uint64_t slot_bytes = 0;
    uint64_t slot_offset = 0;
    uint64_t needed_bytes = 0;
    std::vector<BasketMove> moves;
    std::set<std::pair<int32_t, int32_t>> moved;  // (branch, basket)
  };

  const uint64_t original_size_;
  const codec::Setting setting_;
  std::vector<TreeState> trees_;
  uint64_t baskets_begin_ = 0;
  uint64_t end_ = 0;
  bool started_ = false;
  bool verify_ = true;
  std::vector<codec::Setting> candidates_;
  EncodingChooser chooser_;
  ByteVector scratch_;

  // Checks that (tree, branch, basket) can move and has not moved yet; returns its BasketRef.
  Result<const rootio::BasketRef*> Claim(uint32_t tree, int32_t branch, int32_t basket);
  MovedBasket Place(uint32_t tree, int32_t branch, int32_t basket, uint32_t bytes);
};

// What relocating one tree needs from the original file: its TTree record (key + stored
// payload), the parsed tree, and its key header in the keys list (fKeylen bytes).
struct TreeRecordSource {
  std::string path;
  rootio::Key key;
  std::vector<uint8_t> record;
  rootio::TreeInfo info;
  uint64_t entry_offset = 0;
  std::vector<uint8_t> entry;
};
// Reads them for the tree at `path` (highest cycle) through the file's source.
Result<TreeRecordSource> LoadTreeRecord(const rootio::RootFile& f, const std::string& path);
// The same with the tree's record given (e.g. rebuilt from a replica) instead of read.
Result<TreeRecordSource> TreeRecordFrom(const rootio::RootFile& f,
                                        const std::string& path,
                                        std::vector<uint8_t> record);

// The entry of the key of `path` (`key`, as FindKey gave it) in its directory's keys list: its
// file offset and its first fKeylen bytes (what MoveKey patches).
Status ReadKeyEntry(const rootio::RootFile& f,
                    const std::string& path,
                    const rootio::Key& key,
                    uint64_t* offset,
                    std::vector<uint8_t>* entry);

// The whole virtual file built in memory from a file's bytes: the baskets of every tree that
// `select(tree_path, branch)` accepts (all when it is empty) moved, in tree, branch, basket
// order. For tests and `ferry root relocate` (fidelity checks with other readers).
Result<std::vector<uint8_t>> RelocateInMemory(
    std::span<const uint8_t> file,
    const codec::Setting& setting,
    const std::function<bool(const std::string&, const rootio::Branch&)>& select = {});

}  // namespace ferry::rootwrite
