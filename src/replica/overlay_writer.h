// OverlayWriter: lays out the overlay of a replica's virtual file for the datasets of one ROOT
// file (TTrees or RNTuples), whatever their format. It does no I/O: the caller hands it units
// as the original file stores them and writes what it returns wherever the overlay lives.
//
// Words: a dataset is a TTree or an RNTuple; its columns are branches or physical columns; a
// unit is what a reader fetches at once, a basket record or a page. A unit is named (dataset,
// column, unit): the dataset's number in the writer, then the format's own two indices.
//
// Virtual file layout (docs/format/replica.md):
//
//   [0, original_size)              the original bytes, with patches (keys-list entries, header)
//   [original_size, units_begin)    per dataset, its records: the metadata that points at the
//                                   moved units, in room reserved before the first unit
//   [units_begin, virtual_size)     the moved units, in the order they were added
//
// The writer does what both formats share: it reserves each dataset's records, claims units
// (each at most once), places them back to back in the order given, re-encodes them, copies
// them as encoded earlier, or as the original stores them, and at Finish has the format write
// its records, adds the file header's patch and checks that nothing overlaps. What depends on
// the format (reading its metadata, framing a unit, rewriting the records) is an
// OverlayFormat: TreeOverlay (tree_overlay.h) or RntupleOverlay (rntuple_overlay.h).
//
//   OverlayWriter w(file_size, setting, std::move(format));   // the format holds the datasets
//   w.Start();                                // records reserved: units_begin is known
//   w.AddUnit(dataset, column, unit, stored, &bytes);   // append `bytes` to the overlay
//   auto done = w.Finish(head);               // patches, records, virtual size
//
// A record may come out larger than the room reserved for it (a TTree record is compressed, and
// the seeks in it change its size): Finish then fails with kNoSpace, and the caller builds again
// with set_record_bytes(needed_record_bytes of each dataset).
//
// Thread-safety: none (one builder thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "replica/relocate.h"
#include "rootio/key.h"
#include "rootio/root_file.h"

namespace ferry::replica {

// A unit where the original file stores it, and how a reader decodes it.
struct SourceUnit {
  uint32_t dataset = 0;
  int32_t column = 0;
  int32_t unit = 0;
  uint64_t offset = 0;  // in the original file
  uint64_t bytes = 0;   // as stored (a page's checksum included)
  // A bare page rather than a record with its own key: its decompressed size, and whether an
  // XXH3 follows it (what the replica manifest records so that the cache can check it).
  bool page = false;
  bool page_checksum = false;
  uint32_t raw_bytes = 0;
};

// One moved unit: where it is in the virtual file and where it came from.
struct MovedUnit {
  uint32_t dataset = 0;
  int32_t column = 0;
  int32_t unit = 0;
  uint64_t offset = 0;  // virtual offset of its new bytes
  uint32_t bytes = 0;   // their size
  uint64_t original_offset = 0;
  uint32_t original_bytes = 0;
  codec::Setting setting;  // the encoding its payload got
  bool page = false;       // as SourceUnit
  bool page_checksum = false;
  uint32_t raw_bytes = 0;
  // Placed as the original stores it (AddStoredUnit): `setting` names the original's codec.
  bool as_stored = false;
};

// What a format's records are written from: one moved unit of a dataset.
struct UnitMove {
  int32_t column = 0;
  int32_t unit = 0;
  uint64_t offset = 0;  // virtual offset
  uint32_t bytes = 0;   // as placed (a page's checksum included)
  bool as_stored = false;
};

// A new record of a dataset and where it goes.
struct PlacedRecord {
  uint64_t offset = 0;      // virtual offset (inside the dataset's reserved room)
  uint64_t slot_bytes = 0;  // the room it may take
  ByteVector record;
};

struct Overlay {
  uint64_t original_size = 0;
  uint64_t units_begin = 0;  // first byte after the records
  uint64_t virtual_size = 0;
  std::vector<Patch> patches;  // over [0, original_size), sorted by offset, disjoint
  std::vector<PlacedRecord> records;
};

// The encodings a re-encoded unit may get: `choose` picks among `candidates` (empty: the
// first); with `verify`, what a reader will decode is checked against the original.
struct Encodings {
  std::vector<codec::Setting> candidates;
  EncodingChooser choose;
  bool verify = true;
};

// A re-encoded unit as appended: its size and the encoding it got.
struct EncodedUnit {
  uint64_t bytes = 0;
  codec::Setting setting;
};

// A dataset's records (offsets inside the room reserved for it) and its patches.
struct DatasetRecords {
  std::vector<PlacedRecord> records;
  std::vector<Patch> patches;
};

// What the writer asks of a format. Datasets are added through the implementation before the
// writer takes it; from then on it is only read, but for what its records cache.
class OverlayFormat {
 public:
  virtual ~OverlayFormat() = default;

  virtual uint32_t dataset_count() const = 0;
  // "Events", "dir/tree".
  virtual const std::string& dataset_path(uint32_t dataset) const = 0;
  // A branch's name, a physical column's field path.
  virtual std::string column_name(uint32_t dataset, int32_t column) const = 0;
  // Every unit of a dataset that can move, column by column in unit order.
  virtual std::vector<SourceUnit> Units(uint32_t dataset) const = 0;
  // One unit; InvalidArgument when it is out of range or cannot move. `dataset` is in range.
  virtual Result<SourceUnit> FindUnit(uint32_t dataset, int32_t column, int32_t unit) const = 0;
  // For messages: "branch Jet_pt > basket 3".
  virtual std::string UnitName(const SourceUnit& u) const = 0;

  // In the order the writer asks: at Start, for each unit, at Finish.

  // The room the dataset's records take when nothing says otherwise.
  virtual Result<uint64_t> RecordBytes(uint32_t dataset,
                                       uint64_t original_size,
                                       const codec::Setting& setting) = 0;
  // Appends `stored` (as long as the unit, which the writer checked) re-encoded to `out`;
  // `at`: its virtual offset.
  virtual Result<EncodedUnit> Reencode(const SourceUnit& u,
                                       std::span<const uint8_t> stored,
                                       const Encodings& encodings,
                                       uint64_t at,
                                       ByteVector* out) = 0;
  // A unit copied as it is (as stored, or encoded earlier) now at `at`: what in it names its
  // place is set; InvalidArgument when the bytes cannot be such a unit.
  virtual Status Reseat(const SourceUnit& u, std::span<uint8_t> placed, uint64_t at) const = 0;
  // The codec of a unit as the original stores it (for the report: ROOT's block header does
  // not keep the level); Corruption when it does not parse.
  virtual Result<codec::Setting> StoredSetting(const SourceUnit& u,
                                               std::span<const uint8_t> stored) const = 0;
  // The dataset's records placed from `at` in `room` bytes, pointing at `moves`; `setting`:
  // the replica's (records and ranges re-encoded take it).
  virtual Result<DatasetRecords> Records(uint32_t dataset,
                                         uint64_t at,
                                         uint64_t room,
                                         std::span<const UnitMove> moves,
                                         const codec::Setting& setting) = 0;
};

// The room to reserve for records of `record_bytes` whose size may still change a little.
uint64_t SlotFor(uint64_t record_bytes);

class OverlayWriter {
 public:
  OverlayWriter(uint64_t original_size,
                codec::Setting setting,
                std::unique_ptr<OverlayFormat> format);

  const OverlayFormat& format() const { return *format_; }
  uint32_t dataset_count() const { return format_->dataset_count(); }
  // The room each dataset's records get (0 or absent: the format's default); before Start.
  void set_record_bytes(std::vector<uint64_t> bytes) { record_bytes_ = std::move(bytes); }
  // After Finish failed with kNoSpace, the room each dataset needs (build again with those).
  uint64_t needed_record_bytes(uint32_t dataset) const { return needed_[dataset]; }

  // Reserves the records' room: units follow from units_begin(). Adding a unit or finishing
  // starts the writer when it has not started.
  Status Start();
  uint64_t units_begin() const { return units_begin_; }

  // Re-encodes a unit given as the original file stores it and appends it to `out`; the new
  // bytes occupy the next bytes of the overlay. InvalidArgument for a unit that cannot move or
  // was added already; Corruption for one that does not decode.
  Result<MovedUnit> AddUnit(uint32_t dataset,
                            int32_t column,
                            int32_t unit,
                            std::span<const uint8_t> stored,
                            ByteVector* out);
  // Appends a unit already re-encoded with `setting` (copied from an earlier replica).
  Result<MovedUnit> AddEncodedUnit(uint32_t dataset,
                                   int32_t column,
                                   int32_t unit,
                                   std::span<const uint8_t> encoded,
                                   const codec::Setting& setting,
                                   ByteVector* out);
  // Appends a unit as the original file stores it, no codec involved (a replica's stage 1):
  // `stored` is the original (or a copy of it placed earlier as stored). A basket's fSeekKey
  // becomes its new place when its width holds it; an RNTuple page keeps its bytes and
  // checksum, and its column range keeps the original compression field.
  Result<MovedUnit> AddStoredUnit(uint32_t dataset,
                                  int32_t column,
                                  int32_t unit,
                                  std::span<const uint8_t> stored,
                                  ByteVector* out);
  // AddStoredUnit for a unit whose stored bytes the caller has read into the end of *out, from
  // `at` on: reseated there, no copy. On an error *out is cut back to `at`.
  Result<MovedUnit> PlaceStoredUnit(
      uint32_t dataset, int32_t column, int32_t unit, ByteVector* out, size_t at);

  // Re-encoded units get the encoding `choose` picks among `candidates` (default: the writer's
  // setting alone). Records keep the writer's setting.
  void set_encodings(std::vector<codec::Setting> candidates, EncodingChooser choose) {
    encodings_.candidates = std::move(candidates);
    encodings_.choose = std::move(choose);
  }
  // Whether AddUnit decodes each re-encoded unit again to check it (default true).
  void set_verify(bool verify) { encodings_.verify = verify; }

  // The overlay's description. `head`: the original file's first bytes (at least fBEGIN, 100 is
  // enough). kNoSpace when a dataset's records outgrew their room; InvalidArgument when the
  // format refuses the moves (an RNTuple column range moved in part).
  Result<Overlay> Finish(std::span<const uint8_t> head);

 private:
  // The unit, once: InvalidArgument when it cannot move or was claimed before.
  Result<SourceUnit> Claim(uint32_t dataset, int32_t column, int32_t unit);
  // As Claim, and InvalidArgument when `stored` is not as long as the file says the unit is.
  Result<SourceUnit> ClaimStored(uint32_t dataset,
                                 int32_t column,
                                 int32_t unit,
                                 std::span<const uint8_t> stored);
  // Records the unit at the overlay's end, `bytes` long.
  MovedUnit Place(const SourceUnit& u, uint64_t bytes, codec::Setting setting, bool as_stored);
  // Appends a unit copied as it is, reseated at its new place (out unchanged on an error).
  Status AppendCopy(const SourceUnit& u, std::span<const uint8_t> bytes, ByteVector* out);

  const uint64_t original_size_;
  const codec::Setting setting_;
  std::unique_ptr<OverlayFormat> format_;
  std::vector<uint64_t> record_bytes_;
  std::vector<uint64_t> room_;                // per dataset, as reserved
  std::vector<uint64_t> records_at_;          // per dataset
  std::vector<uint64_t> needed_;              // per dataset, after Finish
  std::vector<std::vector<UnitMove>> moves_;  // per dataset, in the order placed
  std::set<std::tuple<uint32_t, int32_t, int32_t>> claimed_;
  uint64_t units_begin_ = 0;
  uint64_t end_ = 0;
  bool started_ = false;
  Encodings encodings_;
};

// The virtual file in memory: `file` with the overlay's patches, its records and `units` (the
// bytes the writer appended) from units_begin.
std::vector<uint8_t> VirtualFileBytes(std::span<const uint8_t> file,
                                      const Overlay& overlay,
                                      std::span<const uint8_t> units);

// Which units RelocateInMemory moves: those of the columns it accepts.
using ColumnFilter = std::function<bool(const std::string& dataset, const std::string& column)>;

// The whole virtual file built in memory from a file's bytes, as the replica tier would serve
// it with every unit of the columns `select` accepts (all when it is empty) moved and
// re-encoded with `setting`, in dataset, column, unit order: the file's TTrees, or its RNTuples
// when it has no TTree (as the replica builder picks). For tests and `rootwrite_fixtures`
// (fidelity checks with other readers).
Result<std::vector<uint8_t>> RelocateInMemory(std::span<const uint8_t> file,
                                              const codec::Setting& setting,
                                              const ColumnFilter& select = {});

// The entry of the key of `path` (`key`, as FindKey gave it) in its directory's keys list: its
// file offset and its first fKeylen bytes (what MoveKey patches). Both formats move a key.
Status ReadKeyEntry(const rootio::RootFile& f,
                    const std::string& path,
                    const rootio::Key& key,
                    uint64_t* offset,
                    std::vector<uint8_t>* entry);

}  // namespace ferry::replica
