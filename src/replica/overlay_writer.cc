#include "replica/overlay_writer.h"

#include <algorithm>
#include <string>

#include "io/local_source.h"
#include "replica/rntuple_overlay.h"
#include "replica/tree_overlay.h"
#include "rootio/root_file.h"

namespace ferry::replica {
namespace {

constexpr uint64_t kSlotAlign = 4096;

uint64_t RoundUp(uint64_t n, uint64_t to) {
  return (n + to - 1) / to * to;
}

// Sorted patches must not overlap: two would write the same bytes of the original.
Status SortPatches(std::vector<Patch>& patches) {
  std::sort(patches.begin(), patches.end(),
            [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < patches.size(); ++i) {
    if (patches[i - 1].offset + patches[i - 1].bytes.size() > patches[i].offset) {
      return CorruptionError("patches overlap: a keys list inside the file header");
    }
  }
  return OkStatus();
}

}  // namespace

uint64_t SlotFor(uint64_t record_bytes) {
  // Seeks and sizes change a TTree record's payload a little, so its compressed size may move
  // by a few percent; 1/8 plus a page covers that without wasting much.
  return RoundUp(record_bytes + record_bytes / 8 + kSlotAlign, kSlotAlign);
}

OverlayWriter::OverlayWriter(uint64_t original_size,
                             codec::Setting setting,
                             std::unique_ptr<OverlayFormat> format)
    : original_size_(original_size), setting_(setting), format_(std::move(format)) {
  encodings_.candidates = {setting};
  const uint32_t n = format_->dataset_count();
  room_.assign(n, 0);
  records_at_.assign(n, 0);
  needed_.assign(n, 0);
  moves_.resize(n);
}

Status OverlayWriter::Start() {
  uint64_t at = original_size_;
  for (uint32_t d = 0; d < format_->dataset_count(); ++d) {
    const uint64_t given = d < record_bytes_.size() ? record_bytes_[d] : 0;
    room_[d] = given != 0 ? given : FERRY_TRY(format_->RecordBytes(d, original_size_, setting_));
    records_at_[d] = at;
    at += room_[d];
  }
  units_begin_ = at;
  end_ = at;
  started_ = true;
  return OkStatus();
}

Result<SourceUnit> OverlayWriter::Claim(uint32_t dataset, int32_t column, int32_t unit) {
  if (!started_) {
    FERRY_TRY(Start());
  }
  if (dataset >= format_->dataset_count()) {
    return InvalidArgumentError("no dataset " + std::to_string(dataset));
  }
  SourceUnit u = FERRY_TRY(format_->FindUnit(dataset, column, unit));
  if (!claimed_.insert({dataset, column, unit}).second) {
    return InvalidArgumentError(format_->UnitName(u) + " added twice");
  }
  return u;
}

Result<SourceUnit> OverlayWriter::ClaimStored(uint32_t dataset,
                                              int32_t column,
                                              int32_t unit,
                                              std::span<const uint8_t> stored) {
  const SourceUnit u = FERRY_TRY(Claim(dataset, column, unit));
  // A unit's size goes to the manifest as 32 bits.
  if (stored.size() != u.bytes || u.bytes > UINT32_MAX) {
    return InvalidArgumentError(format_->UnitName(u) + ": " + std::to_string(stored.size())
                                + " bytes given, the file says " + std::to_string(u.bytes));
  }
  return u;
}

MovedUnit OverlayWriter::Place(const SourceUnit& u,
                               uint64_t bytes,
                               codec::Setting setting,
                               bool as_stored) {
  MovedUnit m;
  m.dataset = u.dataset;
  m.column = u.column;
  m.unit = u.unit;
  m.offset = end_;
  m.bytes = static_cast<uint32_t>(bytes);
  m.original_offset = u.offset;
  m.original_bytes = static_cast<uint32_t>(u.bytes);
  m.setting = setting;
  m.page = u.page;
  m.page_checksum = u.page_checksum;
  m.raw_bytes = u.raw_bytes;
  m.as_stored = as_stored;
  moves_[u.dataset].push_back({u.column, u.unit, end_, m.bytes, as_stored});
  end_ += bytes;
  return m;
}

Result<MovedUnit> OverlayWriter::AddUnit(uint32_t dataset,
                                         int32_t column,
                                         int32_t unit,
                                         std::span<const uint8_t> stored,
                                         ByteVector* out) {
  const SourceUnit u = FERRY_TRY(ClaimStored(dataset, column, unit, stored));
  const EncodedUnit e = FERRY_TRY(format_->Reencode(u, stored, encodings_, end_, out));
  return Place(u, e.bytes, e.setting, false);
}

Status OverlayWriter::AppendCopy(const SourceUnit& u,
                                 std::span<const uint8_t> bytes,
                                 ByteVector* out) {
  const size_t at = out->size();
  out->insert(out->end(), bytes.begin(), bytes.end());
  Status st = format_->Reseat(u, std::span<uint8_t>(out->data() + at, bytes.size()), end_);
  if (!st) {
    out->resize(at);
  }
  return st;
}

Result<MovedUnit> OverlayWriter::AddEncodedUnit(uint32_t dataset,
                                                int32_t column,
                                                int32_t unit,
                                                std::span<const uint8_t> encoded,
                                                const codec::Setting& setting,
                                                ByteVector* out) {
  const SourceUnit u = FERRY_TRY(Claim(dataset, column, unit));
  FERRY_TRY(AppendCopy(u, encoded, out));
  return Place(u, encoded.size(), setting, false);
}

Result<MovedUnit> OverlayWriter::AddStoredUnit(uint32_t dataset,
                                               int32_t column,
                                               int32_t unit,
                                               std::span<const uint8_t> stored,
                                               ByteVector* out) {
  const SourceUnit u = FERRY_TRY(ClaimStored(dataset, column, unit, stored));
  const codec::Setting setting = FERRY_TRY(format_->StoredSetting(u, stored));
  FERRY_TRY(AppendCopy(u, stored, out));
  return Place(u, stored.size(), setting, true);
}

Result<MovedUnit> OverlayWriter::PlaceStoredUnit(
    uint32_t dataset, int32_t column, int32_t unit, ByteVector* out, size_t at) {
  const std::span<uint8_t> placed(out->data() + at, out->size() - at);
  auto place = [&]() -> Result<MovedUnit> {
    const SourceUnit u = FERRY_TRY(ClaimStored(dataset, column, unit, placed));
    const codec::Setting setting = FERRY_TRY(format_->StoredSetting(u, placed));
    FERRY_TRY(format_->Reseat(u, placed, end_));
    return Place(u, placed.size(), setting, true);
  };
  auto moved = place();
  if (!moved) {
    out->resize(at);
  }
  return moved;
}

Result<Overlay> OverlayWriter::Finish(std::span<const uint8_t> head) {
  if (!started_) {
    FERRY_TRY(Start());
  }
  Overlay o;
  o.original_size = original_size_;
  o.units_begin = units_begin_;
  o.virtual_size = end_;
  bool fits = true;
  for (uint32_t d = 0; d < format_->dataset_count(); ++d) {
    DatasetRecords r =
        FERRY_TRY(format_->Records(d, records_at_[d], room_[d], moves_[d], setting_));
    uint64_t used = 0;
    for (PlacedRecord& p : r.records) {
      used += p.record.size();
      o.records.push_back(std::move(p));
    }
    needed_[d] = used > room_[d] ? SlotFor(used) : room_[d];
    fits = fits && used <= room_[d];
    for (Patch& p : r.patches) {
      o.patches.push_back(std::move(p));
    }
  }
  if (!fits) {
    return Error(ErrorCode::kNoSpace, "a dataset's records outgrew the room reserved for them");
  }
  o.patches.push_back(FERRY_TRY(HeaderPatch(head, o.virtual_size)));
  FERRY_TRY(SortPatches(o.patches));
  return o;
}

std::vector<uint8_t> VirtualFileBytes(std::span<const uint8_t> file,
                                      const Overlay& overlay,
                                      std::span<const uint8_t> units) {
  std::vector<uint8_t> out(static_cast<size_t>(overlay.virtual_size), 0);
  std::copy(file.begin(), file.end(), out.begin());
  for (const Patch& p : overlay.patches) {
    std::copy(p.bytes.begin(), p.bytes.end(), out.begin() + static_cast<ptrdiff_t>(p.offset));
  }
  for (const PlacedRecord& r : overlay.records) {
    std::copy(r.record.begin(), r.record.end(), out.begin() + static_cast<ptrdiff_t>(r.offset));
  }
  std::copy(units.begin(), units.end(), out.begin() + static_cast<ptrdiff_t>(overlay.units_begin));
  return out;
}

namespace {

// The file's TTrees, or its RNTuples when it has none.
Result<std::unique_ptr<OverlayFormat>> LoadFormat(const rootio::RootFile& f) {
  const std::vector<std::string> trees = FERRY_TRY(f.TreePaths());
  if (!trees.empty()) {
    return LoadTreeOverlay(f);
  }
  return LoadRntupleOverlay(f);
}

// One attempt of RelocateInMemory with the records' room given (empty: the defaults); on
// kNoSpace `need` gets the room each dataset needs.
Result<std::vector<uint8_t>> RelocateOnce(std::span<const uint8_t> file,
                                          io::MemorySource& src,
                                          const rootio::RootFile& f,
                                          const codec::Setting& setting,
                                          const ColumnFilter& select,
                                          std::vector<uint64_t>* need) {
  OverlayWriter w(file.size(), setting, FERRY_TRY(LoadFormat(f)));
  w.set_record_bytes(*need);
  FERRY_TRY(w.Start());
  ByteVector units;
  std::vector<uint8_t> stored;
  for (uint32_t d = 0; d < w.dataset_count(); ++d) {
    const std::string& path = w.format().dataset_path(d);
    for (const SourceUnit& u : w.format().Units(d)) {
      if (select && !select(path, w.format().column_name(d, u.column))) {
        continue;
      }
      stored.resize(static_cast<size_t>(u.bytes));
      FERRY_TRY(io::CheckRange(f.name(), file.size(), u.offset, stored.size()));
      FERRY_TRY(src.ReadAt(u.offset, stored));
      FERRY_TRY(w.AddUnit(d, u.column, u.unit, stored, &units));
    }
  }
  auto overlay = w.Finish(file.first(std::min<size_t>(file.size(), 100)));
  if (!overlay) {
    need->clear();
    for (uint32_t d = 0; d < w.dataset_count(); ++d) {
      need->push_back(w.needed_record_bytes(d));
    }
    return std::move(overlay).error();
  }
  return VirtualFileBytes(file, *overlay, units);
}

}  // namespace

Result<std::vector<uint8_t>> RelocateInMemory(std::span<const uint8_t> file,
                                              const codec::Setting& setting,
                                              const ColumnFilter& select) {
  io::MemorySource src(std::vector<uint8_t>(file.begin(), file.end()));
  auto f = FERRY_TRY(rootio::RootFile::Open(src));
  std::vector<uint64_t> room;
  auto virt = RelocateOnce(file, src, *f, setting, select, &room);
  if (!virt && virt.error().code() == ErrorCode::kNoSpace) {
    virt =
        RelocateOnce(file, src, *f, setting, select, &room);  // with the room the first one needed
  }
  return virt;
}

Status ReadKeyEntry(const rootio::RootFile& f,
                    const std::string& path,
                    const rootio::Key& key,
                    uint64_t* offset,
                    std::vector<uint8_t>* entry) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
  rootio::KeysList list = FERRY_TRY(f.ReadKeysListOf(dir));
  for (size_t i = 0; i < list.keys.size(); ++i) {
    if (list.keys[i].seek_key == key.seek_key) {
      *offset = list.offsets[i];
      // The list holds the key's header (fKeylen bytes), nothing of the record itself.
      const uint64_t n = std::min<uint64_t>(key.keylen, f.source().size() - *offset);
      entry->resize(static_cast<size_t>(n));
      return f.source().ReadAt(*offset, *entry);
    }
  }
  return NotFoundError("not in its directory's keys list");
}

}  // namespace ferry::replica
