#include "replica/rntuple_overlay.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/endian.h"
#include "base/hash.h"
#include "io/byte_source.h"
#include "replica/relocate.h"
#include "rootio/key.h"
#include "rootio/rntuple.h"
#include "rootio/rntuple_envelope.h"
#include "rootio/rntuple_page.h"
#include "rootwrite/rntuple_envelope_writer.h"
#include "rootwrite/rntuple_page_writer.h"

namespace ferry::replica {
namespace {

// The page lists of an opened RNTuple, one per cluster group, as the footer orders them.
// Read again per group (Rntuple keeps only the clusters, merged in entry order), so each list
// keeps its own cluster order and serialises back to its own bytes. Rntuple::Open checked their
// checksums and header checksums already.
Result<std::vector<rootio::PageList>> GroupPageLists(const rootio::Rntuple& r) {
  std::vector<rootio::PageList> lists;
  for (size_t g = 0; g < r.footer().groups.size(); ++g) {
    const rootio::ClusterGroup& group = r.footer().groups[g];
    const std::string what = "RNTuple '" + r.name() + "' page list envelope " + std::to_string(g);
    rootio::Envelope env =
        FERRY_TRY(rootio::ReadEnvelope(r.source(), group.page_list, rootio::EnvelopeType::kPageList,
                                       r.anchor().max_key_size, what));
    lists.push_back(FERRY_TRY(rootio::ParsePageList(env.payload(), r.columns().size(), what)));
  }
  return lists;
}

uint32_t RootCompression(const codec::Setting& s) {
  return s.algorithm == codec::Algorithm::kNone ? 0u : static_cast<uint32_t>(s.RootSetting());
}

}  // namespace

std::vector<std::vector<RntupleRecordSource::PageRef>> RntupleRecordSource::pages() const {
  std::vector<std::vector<PageRef>> out(columns.size());
  for (uint32_t g = 0; g < page_lists.size(); ++g) {
    const rootio::PageList& list = page_lists[g];
    for (uint32_t c = 0; c < list.clusters.size(); ++c) {
      const rootio::ClusterInfo& cluster = list.clusters[c];
      for (uint32_t col = 0; col < cluster.columns.size() && col < out.size(); ++col) {
        const rootio::ColumnPages& range = cluster.columns[col];
        for (uint32_t p = 0; !range.suppressed && p < range.pages.size(); ++p) {
          out[col].push_back({g, c, col, p, cluster.first_entry});
        }
      }
    }
  }
  return out;
}

Result<RntupleRecordSource> LoadRntupleRecord(const rootio::RootFile& f, const std::string& path) {
  const auto found = FERRY_TRY(rootio::FindRntuples(f));
  auto it = std::find_if(found.begin(), found.end(),
                         [&](const rootio::RntupleEntry& e) { return e.path == path; });
  if (it == found.end()) {
    return NotFoundError("no RNTuple named '" + path + "'");
  }
  auto r = FERRY_TRY(rootio::Rntuple::Open(f, path));
  RntupleRecordSource s;
  s.path = path;
  s.key = it->key;
  s.anchor = r->anchor();
  const std::string what = "RNTuple '" + path + "' anchor";
  auto payload = FERRY_TRY_CTX(f.ReadObject(s.key), what);
  s.anchor_payload.assign(payload.begin(), payload.end());
  s.anchor_key.resize(s.key.keylen);
  FERRY_TRY(io::CheckRange(f.name(), f.source().size(), s.key.seek_key, s.anchor_key.size()));
  FERRY_TRY(f.source().ReadAt(s.key.seek_key, s.anchor_key));
  FERRY_TRY_CTX(ReadKeyEntry(f, path, s.key, &s.entry_offset, &s.entry), what);
  const rootio::EnvelopeLink footer_link{s.anchor.len_footer,
                                         {s.anchor.seek_footer, s.anchor.nbytes_footer}};
  rootio::Envelope footer = FERRY_TRY(rootio::ReadEnvelope(
      f.source(), footer_link, rootio::EnvelopeType::kFooter, s.anchor.max_key_size, path));
  s.footer.assign(footer.bytes.begin(), footer.bytes.end());
  s.parsed_footer = r->footer();
  for (const rootio::ClusterGroup& g : s.parsed_footer.groups) {
    const size_t at = rootio::kEnvelopePreamble + g.link_at + sizeof(uint64_t);
    if (at + sizeof(int32_t) > s.footer.size() || LoadLE<int32_t>(s.footer.data() + at) < 0) {
      return UnsupportedError("RNTuple '" + path + "': a page list link is not a standard locator");
    }
  }
  s.page_lists = FERRY_TRY(GroupPageLists(*r));
  s.columns = r->columns();
  s.column_fields.resize(s.columns.size());
  for (size_t c = 0; c < s.columns.size(); ++c) {
    s.column_fields[c] = r->FieldPath(s.columns[c].field_id);
  }
  return s;
}

namespace {

// The unit tables and messages are short and stay in the class; what writes bytes follows it.
class RntupleOverlay final : public OverlayFormat {
 public:
  explicit RntupleOverlay(std::vector<RntupleRecordSource> ntuples);

  uint32_t dataset_count() const override { return static_cast<uint32_t>(ntuples_.size()); }
  const std::string& dataset_path(uint32_t dataset) const override {
    return ntuples_[dataset].src.path;
  }
  std::string column_name(uint32_t dataset, int32_t column) const override {
    return ntuples_[dataset].src.column_fields[static_cast<size_t>(column)];
  }
  std::vector<SourceUnit> Units(uint32_t dataset) const override;
  Result<SourceUnit> FindUnit(uint32_t dataset, int32_t column, int32_t unit) const override {
    const NtupleState& n = ntuples_[dataset];
    if (column < 0 || unit < 0 || static_cast<size_t>(column) >= n.pages.size()
        || static_cast<size_t>(unit) >= n.pages[static_cast<size_t>(column)].size()) {
      return InvalidArgumentError("RNTuple page named out of range");
    }
    return UnitOf(dataset, static_cast<size_t>(column), static_cast<size_t>(unit));
  }
  std::string UnitName(const SourceUnit& u) const override {
    return "RNTuple '" + ntuples_[u.dataset].src.path + "' column " + std::to_string(u.column)
           + " page " + std::to_string(u.unit);
  }

  // In the order the writer asks: at Start, for each unit, at Finish.
  // Uncompressed envelopes with fixed-width locators: their sizes do not depend on where the
  // pages go, so the room is exactly what the records take.
  Result<uint64_t> RecordBytes(uint32_t dataset,
                               uint64_t /*original_size*/,
                               const codec::Setting& /*setting*/) override {
    const NtupleState& n = ntuples_[dataset];
    uint64_t bytes = n.anchor_bytes + n.src.footer.size();
    for (uint64_t list : n.page_list_bytes) {
      bytes += list;
    }
    return bytes;
  }
  // Corruption for a page that does not check or decompress.
  Result<EncodedUnit> Reencode(const SourceUnit& u,
                               std::span<const uint8_t> stored,
                               const Encodings& encodings,
                               uint64_t at,
                               ByteVector* out) override;
  Status Reseat(const SourceUnit& u, std::span<uint8_t> placed, uint64_t /*at*/) const override {
    // A page does not name its place (the page list does): only its size is checked.
    if (u.page_checksum && placed.size() < rootio::kPageChecksumSize) {
      return InvalidArgumentError("re-encoded page shorter than its checksum");
    }
    return OkStatus();
  }
  Result<codec::Setting> StoredSetting(const SourceUnit& u,
                                       std::span<const uint8_t> stored) const override {
    // A page that did not shrink is stored raw.
    const uint64_t size = PageOf(u).locator.size;
    return codec::Setting{
        size == u.raw_bytes ? codec::Algorithm::kNone : codec::DetectAlgorithm(stored.first(size)),
        0};
  }
  // InvalidArgument when a column range moved only in part, or in part as stored. The room is
  // what RecordBytes said (a larger one leaves zeros after the page lists).
  Result<DatasetRecords> Records(uint32_t dataset,
                                 uint64_t at,
                                 uint64_t /*room*/,
                                 std::span<const UnitMove> moves,
                                 const codec::Setting& setting) override;

 private:
  struct NtupleState {
    RntupleRecordSource src;
    std::vector<std::vector<RntupleRecordSource::PageRef>> pages;  // per column, by ordinal
    // The records' sizes as placed: the anchor, the page lists (their original sizes).
    uint64_t anchor_bytes = 0;
    std::vector<uint64_t> page_list_bytes;
  };

  const rootio::PageInfo& PageOf(const SourceUnit& u) const {
    const NtupleState& n = ntuples_[u.dataset];
    return n.src.Page(n.pages[static_cast<size_t>(u.column)][static_cast<size_t>(u.unit)]);
  }
  SourceUnit UnitOf(uint32_t ntuple, size_t column, size_t ordinal) const;
  // The page lists with the moved pages' locators and the range's compression field.
  Result<std::vector<std::vector<uint8_t>>> NewPageLists(const NtupleState& n,
                                                         std::span<const UnitMove> moves,
                                                         const codec::Setting& setting) const;
  // The anchor's new record at `anchor_at` (key header + patched object) and the keys-list
  // patch, for a footer of `footer_bytes` at `footer_at`.
  Result<std::pair<std::vector<uint8_t>, Patch>> AnchorRecord(const NtupleState& n,
                                                              uint64_t anchor_at,
                                                              uint64_t footer_at,
                                                              uint64_t footer_bytes) const;

  std::vector<NtupleState> ntuples_;
  ByteVector raw_;
  ByteVector candidate_;
  ByteVector scratch_;
};

RntupleOverlay::RntupleOverlay(std::vector<RntupleRecordSource> ntuples) {
  for (RntupleRecordSource& source : ntuples) {
    NtupleState& n = ntuples_.emplace_back();
    n.pages = source.pages();
    n.anchor_bytes = source.anchor_key.size() + source.anchor_payload.size();
    for (const rootio::PageList& list : source.page_lists) {
      n.page_list_bytes.push_back(rootwrite::SerializePageList(list).size());
    }
    n.src = std::move(source);
  }
}

SourceUnit RntupleOverlay::UnitOf(uint32_t ntuple, size_t column, size_t ordinal) const {
  const NtupleState& n = ntuples_[ntuple];
  const RntupleRecordSource::PageRef& ref = n.pages[column][ordinal];
  const rootio::PageInfo& page = n.src.Page(ref);
  SourceUnit u;
  u.dataset = ntuple;
  u.column = static_cast<int32_t>(column);
  u.unit = static_cast<int32_t>(ordinal);
  u.offset = page.locator.offset;
  u.bytes = page.stored_bytes();
  u.page = true;
  u.page_checksum = page.has_checksum;
  u.raw_bytes =
      static_cast<uint32_t>(rootio::PageLength(page.elements, n.src.columns[ref.column].bits));
  return u;
}

std::vector<SourceUnit> RntupleOverlay::Units(uint32_t dataset) const {
  std::vector<SourceUnit> out;
  const NtupleState& n = ntuples_[dataset];
  for (size_t c = 0; c < n.pages.size(); ++c) {
    for (size_t k = 0; k < n.pages[c].size(); ++k) {
      out.push_back(UnitOf(dataset, c, k));
    }
  }
  return out;
}

Result<EncodedUnit> RntupleOverlay::Reencode(const SourceUnit& u,
                                             std::span<const uint8_t> stored,
                                             const Encodings& encodings,
                                             uint64_t /*at*/,
                                             ByteVector* out) {
  const NtupleState& n = ntuples_[u.dataset];
  const rootio::PageInfo& page = PageOf(u);
  const rootio::ColumnRecord& record =
      n.src.columns[n.pages[static_cast<size_t>(u.column)][static_cast<size_t>(u.unit)].column];
  const std::string what = UnitName(u);
  auto raw = FERRY_TRY(rootio::UnpackPage(stored, page, record, what, &scratch_));
  raw_.assign(raw.begin(), raw.end());
  // Every candidate's sealed page; the chooser sees their sizes without the checksum.
  const std::vector<codec::Setting>& candidates = encodings.candidates;
  std::vector<ByteVector> sealed(candidates.size());
  std::vector<uint64_t> sizes(candidates.size());
  const size_t sum = page.has_checksum ? rootio::kPageChecksumSize : 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    FERRY_TRY(rootwrite::SealPage(candidates[i], raw_, page.has_checksum, &scratch_, &sealed[i]));
    sizes[i] = sealed[i].size() - sum;
  }
  const size_t chosen = encodings.choose ? encodings.choose(raw_.size(), sizes) : 0;
  if (chosen >= candidates.size()) {
    return InvalidArgumentError("the encoding chooser picked no candidate");
  }
  const ByteVector& bytes = sealed[chosen];
  // What a reader will decode must be what the original held.
  if (encodings.verify && sizes[chosen] != raw_.size()) {
    FERRY_TRY(rootio::DecodePayload(std::span<const uint8_t>(bytes).first(sizes[chosen]),
                                    static_cast<int32_t>(raw_.size()), &candidate_));
    if (candidate_.size() != raw_.size()
        || std::memcmp(candidate_.data(), raw_.data(), raw_.size()) != 0) {
      return CorruptionError(what + ": the re-encoded page does not decode to the original");
    }
  }
  out->insert(out->end(), bytes.begin(), bytes.end());
  // A page that did not shrink is stored raw.
  return EncodedUnit{bytes.size(), sizes[chosen] == raw_.size()
                                       ? codec::Setting{codec::Algorithm::kNone, 0}
                                       : candidates[chosen]};
}

Result<std::vector<std::vector<uint8_t>>> RntupleOverlay::NewPageLists(
    const NtupleState& n, std::span<const UnitMove> moves, const codec::Setting& setting) const {
  // Per column, per ordinal: the page's move, if it moved.
  std::vector<std::vector<const UnitMove*>> moved(n.pages.size());
  for (size_t c = 0; c < n.pages.size(); ++c) {
    moved[c].assign(n.pages[c].size(), nullptr);
  }
  for (const UnitMove& m : moves) {
    moved[static_cast<size_t>(m.column)][static_cast<size_t>(m.unit)] = &m;
  }
  std::vector<rootio::PageList> lists = n.src.page_lists;
  for (size_t col = 0; col < n.pages.size(); ++col) {
    for (size_t k = 0; k < n.pages[col].size(); ++k) {
      const RntupleRecordSource::PageRef& ref = n.pages[col][k];
      rootio::ColumnPages& range = lists[ref.group].clusters[ref.cluster].columns[ref.column];
      const UnitMove* m = moved[col][k];
      // A range moves whole: its first page decides, the others must agree.
      const UnitMove* head = moved[col][k - ref.page];
      if ((m != nullptr) != (head != nullptr)
          || (m != nullptr && m->as_stored != head->as_stored)) {
        return InvalidArgumentError("RNTuple '" + n.src.path + "' column " + std::to_string(col)
                                    + ": a cluster's pages moved in part");
      }
      if (m != nullptr) {
        rootio::PageInfo& page = range.pages[ref.page];
        const uint64_t sum = page.has_checksum ? rootio::kPageChecksumSize : 0;
        page.locator = {m->offset, m->bytes - sum};
        // Pages as stored keep the original's codec, and so the range's field.
        if (ref.page == 0 && !m->as_stored) {
          range.compression = RootCompression(setting);
        }
      }
    }
  }
  std::vector<std::vector<uint8_t>> out;
  out.reserve(lists.size());
  for (const rootio::PageList& list : lists) {
    out.push_back(rootwrite::SerializePageList(list));
  }
  return out;
}

Result<std::pair<std::vector<uint8_t>, Patch>> RntupleOverlay::AnchorRecord(
    const NtupleState& n, uint64_t anchor_at, uint64_t footer_at, uint64_t footer_bytes) const {
  using L = rootio::AnchorLayout;
  // The footer's fields, in place in the original object (big-endian, as streamed); the
  // checksum, in the last 8 bytes, covers everything from the epoch on.
  constexpr size_t kSeekFooterAt =
      L::kChecksummedBegin + 2 * L::kVersionFields + 3 * sizeof(uint64_t);
  std::vector<uint8_t> record = n.src.anchor_key;
  record.insert(record.end(), n.src.anchor_payload.begin(), n.src.anchor_payload.end());
  uint8_t* obj = record.data() + n.src.anchor_key.size();
  const size_t size = n.src.anchor_payload.size();
  StoreBE<uint64_t>(obj + kSeekFooterAt, footer_at);
  StoreBE<uint64_t>(obj + kSeekFooterAt + 8, footer_bytes);
  StoreBE<uint64_t>(obj + kSeekFooterAt + 16, footer_bytes);
  StoreBE<uint64_t>(
      obj + size - L::kChecksumSize,
      hash::Xxh3(obj + L::kChecksummedBegin, size - L::kChecksummedBegin - L::kChecksumSize));
  // Stored uncompressed: fObjlen stays, fNbytes is the record's size.
  Patch entry = FERRY_TRY_CTX(MoveKey(record, n.src.entry, n.src.entry_offset, anchor_at),
                              "RNTuple '" + n.src.path + "' anchor");
  return std::make_pair(std::move(record), std::move(entry));
}

Result<DatasetRecords> RntupleOverlay::Records(uint32_t dataset,
                                               uint64_t at,
                                               uint64_t /*room*/,
                                               std::span<const UnitMove> moves,
                                               const codec::Setting& setting) {
  const NtupleState& n = ntuples_[dataset];
  const std::vector<std::vector<uint8_t>> lists = FERRY_TRY(NewPageLists(n, moves, setting));
  // Laid out as RecordBytes counted: anchor, footer, the page lists at their original sizes.
  const uint64_t footer_at = at + n.anchor_bytes;
  std::vector<uint64_t> list_at;
  uint64_t next = footer_at + n.src.footer.size();
  for (uint64_t bytes : n.page_list_bytes) {
    list_at.push_back(next);
    next += bytes;
  }
  std::vector<uint8_t> footer = n.src.footer;
  for (size_t g = 0; g < lists.size(); ++g) {
    // The link: u64 uncompressed length, then the standard locator (i32 size, u64 offset).
    uint8_t* link =
        footer.data() + rootio::kEnvelopePreamble + n.src.parsed_footer.groups[g].link_at;
    StoreLE<uint64_t>(link, lists[g].size());
    StoreLE<int32_t>(link + 8, static_cast<int32_t>(lists[g].size()));
    StoreLE<uint64_t>(link + 12, list_at[g]);
  }
  const size_t body = footer.size() - rootio::kEnvelopeChecksumSize;
  StoreLE<uint64_t>(footer.data() + body, hash::Xxh3(std::span<const uint8_t>(footer).first(body)));
  auto [anchor, entry] = FERRY_TRY(AnchorRecord(n, at, footer_at, footer.size()));
  DatasetRecords out;
  out.patches.push_back(std::move(entry));
  auto record = [&out](uint64_t offset, const std::vector<uint8_t>& bytes) {
    PlacedRecord& r = out.records.emplace_back();
    r.offset = offset;
    r.slot_bytes = bytes.size();
    r.record.assign(bytes.begin(), bytes.end());
  };
  record(at, anchor);
  record(footer_at, footer);
  for (size_t g = 0; g < lists.size(); ++g) {
    record(list_at[g], lists[g]);
  }
  return out;
}

}  // namespace

std::unique_ptr<OverlayFormat> MakeRntupleOverlay(std::vector<RntupleRecordSource> ntuples) {
  return std::make_unique<RntupleOverlay>(std::move(ntuples));
}

Result<std::unique_ptr<OverlayFormat>> LoadRntupleOverlay(const rootio::RootFile& f) {
  std::vector<RntupleRecordSource> ntuples;
  for (const rootio::RntupleEntry& e : FERRY_TRY(rootio::FindRntuples(f))) {
    ntuples.push_back(FERRY_TRY_CTX(LoadRntupleRecord(f, e.path), "RNTuple " + e.path));
  }
  return MakeRntupleOverlay(std::move(ntuples));
}

}  // namespace ferry::replica
