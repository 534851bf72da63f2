#include "replica/tree_overlay.h"

#include <string>
#include <utility>

#include "io/byte_source.h"
#include "rootio/cursor.h"
#include "rootio/key.h"
#include "rootio/root_file.h"
#include "rootio/tree_parse.h"

namespace ferry::replica {

namespace {

// The unit tables and messages are short and stay in the class; what writes bytes follows it.
class TreeOverlay final : public OverlayFormat {
 public:
  explicit TreeOverlay(std::vector<TreeRecordSource> trees) : trees_(std::move(trees)) {}

  uint32_t dataset_count() const override { return static_cast<uint32_t>(trees_.size()); }
  const std::string& dataset_path(uint32_t dataset) const override { return trees_[dataset].path; }
  std::string column_name(uint32_t dataset, int32_t column) const override {
    return trees_[dataset].info.branches[static_cast<size_t>(column)].name;
  }
  std::vector<SourceUnit> Units(uint32_t dataset) const override;
  Result<SourceUnit> FindUnit(uint32_t dataset, int32_t column, int32_t unit) const override;
  std::string UnitName(const SourceUnit& u) const override {
    return "branch " + BranchOf(u).name + " > basket " + std::to_string(u.unit);
  }

  // In the order the writer asks: at Start, for each unit, at Finish.
  Result<uint64_t> RecordBytes(uint32_t dataset,
                               uint64_t original_size,
                               const codec::Setting& setting) override;
  Result<EncodedUnit> Reencode(const SourceUnit& u,
                               std::span<const uint8_t> stored,
                               const Encodings& encodings,
                               uint64_t at,
                               ByteVector* out) override;
  Status Reseat(const SourceUnit& /*u*/, std::span<uint8_t> placed, uint64_t at) const override {
    // No reader uses a basket's own fSeekKey; it is kept true where its width allows.
    SetKeySeek(placed, at);
    return OkStatus();
  }
  Result<codec::Setting> StoredSetting(const SourceUnit& u,
                                       std::span<const uint8_t> stored) const override;
  Result<DatasetRecords> Records(uint32_t dataset,
                                 uint64_t at,
                                 uint64_t room,
                                 std::span<const UnitMove> moves,
                                 const codec::Setting& setting) override;

 private:
  const rootio::Branch& BranchOf(const SourceUnit& u) const {
    return trees_[u.dataset].info.branches[static_cast<size_t>(u.column)];
  }

  std::vector<TreeRecordSource> trees_;
  ByteVector scratch_;
};

std::vector<SourceUnit> TreeOverlay::Units(uint32_t dataset) const {
  std::vector<SourceUnit> out;
  const rootio::TreeInfo& info = trees_[dataset].info;
  for (size_t b = 0; b < info.branches.size(); ++b) {
    const rootio::Branch& branch = info.branches[b];
    for (size_t k = 0; k < branch.baskets.size(); ++k) {
      const rootio::BasketRef& ref = branch.baskets[k];
      if (ref.seek != 0 && static_cast<int32_t>(k) < branch.write_basket) {
        out.push_back({.dataset = dataset,
                       .column = static_cast<int32_t>(b),
                       .unit = static_cast<int32_t>(k),
                       .offset = ref.seek,
                       .bytes = ref.bytes});
      }
    }
  }
  return out;
}

Result<SourceUnit> TreeOverlay::FindUnit(uint32_t dataset, int32_t column, int32_t unit) const {
  const rootio::TreeInfo& info = trees_[dataset].info;
  if (column < 0 || static_cast<size_t>(column) >= info.branches.size()) {
    return InvalidArgumentError("no branch " + std::to_string(column));
  }
  const rootio::Branch& b = info.branches[static_cast<size_t>(column)];
  if (unit < 0 || unit >= b.write_basket || static_cast<size_t>(unit) >= b.baskets.size()
      || b.baskets[static_cast<size_t>(unit)].seek == 0) {
    return InvalidArgumentError("branch " + b.name + ": basket " + std::to_string(unit)
                                + " is not a record of its own");
  }
  const rootio::BasketRef& ref = b.baskets[static_cast<size_t>(unit)];
  return SourceUnit{
      .dataset = dataset, .column = column, .unit = unit, .offset = ref.seek, .bytes = ref.bytes};
}

Result<uint64_t> TreeOverlay::RecordBytes(uint32_t dataset,
                                          uint64_t original_size,
                                          const codec::Setting& setting) {
  // The record as it would be with no basket moved: the size the final one will be close to.
  const TreeRecordSource& t = trees_[dataset];
  auto probe = FERRY_TRY(
      RelocateTree(t.record, t.info, {}, original_size, setting, t.entry_offset, t.entry));
  return SlotFor(probe.record.size());
}

Result<DatasetRecords> TreeOverlay::Records(uint32_t dataset,
                                            uint64_t at,
                                            uint64_t room,
                                            std::span<const UnitMove> moves,
                                            const codec::Setting& setting) {
  const TreeRecordSource& t = trees_[dataset];
  std::vector<BasketMove> baskets;
  baskets.reserve(moves.size());
  for (const UnitMove& m : moves) {
    baskets.push_back({m.column, m.unit, m.offset, m.bytes});
  }
  RelocatedTree r =
      FERRY_TRY_CTX(RelocateTree(t.record, t.info, baskets, at, setting, t.entry_offset, t.entry),
                    "TTree " + t.info.name);
  DatasetRecords out;
  out.patches.push_back(std::move(r.key_entry));
  PlacedRecord& p = out.records.emplace_back();
  p.offset = at;
  p.slot_bytes = room;
  p.record = std::move(r.record);
  return out;
}

Result<EncodedUnit> TreeOverlay::Reencode(const SourceUnit& u,
                                          std::span<const uint8_t> stored,
                                          const Encodings& encodings,
                                          uint64_t at,
                                          ByteVector* out) {
  size_t chosen = 0;
  const uint32_t bytes =
      FERRY_TRY_CTX(ReencodeBasketChoosing(stored, encodings.candidates, encodings.choose, at,
                                           &scratch_, out, encodings.verify, &chosen),
                    UnitName(u));
  return EncodedUnit{bytes, encodings.candidates[chosen]};
}

Result<codec::Setting> TreeOverlay::StoredSetting(const SourceUnit& /*u*/,
                                                  std::span<const uint8_t> stored) const {
  rootio::Cursor c(stored);
  const rootio::Key key = FERRY_TRY(rootio::ParseKey(c));
  if (key.nbytes < key.keylen || static_cast<size_t>(key.nbytes) > stored.size()) {
    return CorruptionError("basket record's key does not fit it");
  }
  return codec::Setting{key.compressed() ? codec::DetectAlgorithm(stored.subspan(key.keylen))
                                         : codec::Algorithm::kNone,
                        0};
}

}  // namespace

std::unique_ptr<OverlayFormat> MakeTreeOverlay(std::vector<TreeRecordSource> trees) {
  return std::make_unique<TreeOverlay>(std::move(trees));
}

Result<std::unique_ptr<OverlayFormat>> LoadTreeOverlay(const rootio::RootFile& f) {
  std::vector<TreeRecordSource> trees;
  for (const std::string& path : FERRY_TRY(f.TreePaths())) {
    trees.push_back(FERRY_TRY_CTX(LoadTreeRecord(f, path), "TTree " + path));
  }
  return MakeTreeOverlay(std::move(trees));
}

Result<TreeRecordSource> LoadTreeRecord(const rootio::RootFile& f, const std::string& path) {
  const rootio::Key key = FERRY_TRY(f.FindKey(path));
  std::vector<uint8_t> record(static_cast<size_t>(key.nbytes));
  FERRY_TRY(io::CheckRange(f.name(), f.source().size(), key.seek_key, record.size()));
  FERRY_TRY(f.source().ReadAt(key.seek_key, record));
  return TreeRecordFrom(f, path, std::move(record));
}

Result<TreeRecordSource> TreeRecordFrom(const rootio::RootFile& f,
                                        const std::string& path,
                                        std::vector<uint8_t> record) {
  TreeRecordSource t;
  t.path = path;
  t.key = FERRY_TRY(f.FindKey(path));
  t.record = std::move(record);
  rootio::Cursor c(t.record);
  const rootio::Key own = FERRY_TRY(rootio::ParseKey(c));
  if (own.keylen != t.key.keylen || own.objlen != t.key.objlen
      || static_cast<size_t>(own.nbytes) > t.record.size() || own.nbytes < own.keylen) {
    return CorruptionError("TTree record of " + path + " does not match its key");
  }
  ByteVector payload;
  FERRY_TRY(rootio::DecodePayload(std::span<const uint8_t>(t.record).subspan(
                                      own.keylen, static_cast<size_t>(own.nbytes - own.keylen)),
                                  own.objlen, &payload));
  t.info = FERRY_TRY(rootio::ParseTree(payload, own.keylen));
  FERRY_TRY_CTX(ReadKeyEntry(f, path, t.key, &t.entry_offset, &t.entry), "TTree " + path);
  return t;
}

}  // namespace ferry::replica
