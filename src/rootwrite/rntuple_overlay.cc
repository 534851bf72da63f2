#include "rootwrite/rntuple_overlay.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/endian.h"
#include "base/hash.h"
#include "io/byte_source.h"
#include "rootio/key.h"
#include "rootio/rntuple.h"
#include "rootio/rntuple_envelope.h"
#include "rootio/rntuple_page.h"
#include "rootwrite/relocate.h"
#include "rootwrite/rntuple_envelope_writer.h"
#include "rootwrite/rntuple_page_writer.h"

namespace ferry::rootwrite {
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

uint32_t RntupleOverlayWriter::AddRntuple(RntupleRecordSource source) {
  NtupleState n;
  n.pages = source.pages();
  n.moved.resize(n.pages.size());
  for (size_t c = 0; c < n.pages.size(); ++c) {
    n.moved[c].resize(n.pages[c].size());
  }
  n.src = std::move(source);
  ntuples_.push_back(std::move(n));
  return static_cast<uint32_t>(ntuples_.size() - 1);
}

void RntupleOverlayWriter::Start() {
  // Uncompressed envelopes with fixed-width locators: their sizes do not depend on where the
  // pages go, so the records can be laid out before any page is placed.
  uint64_t at = original_size_;
  for (NtupleState& n : ntuples_) {
    n.anchor_at = at;
    at += n.src.anchor_key.size() + n.src.anchor_payload.size();
    n.footer_at = at;
    at += n.src.footer.size();
    n.page_list_at.clear();
    for (const rootio::PageList& list : n.src.page_lists) {
      n.page_list_at.push_back(at);
      at += SerializePageList(list).size();
    }
  }
  pages_begin_ = at;
  end_ = at;
  started_ = true;
}

Result<const RntupleRecordSource::PageRef*> RntupleOverlayWriter::Claim(uint32_t ntuple,
                                                                        int32_t column,
                                                                        int32_t ordinal) const {
  if (!started_ || ntuple >= ntuples_.size() || column < 0 || ordinal < 0) {
    return InvalidArgumentError("RNTuple page named out of range");
  }
  const NtupleState& n = ntuples_[ntuple];
  const auto c = static_cast<size_t>(column);
  const auto k = static_cast<size_t>(ordinal);
  if (c >= n.pages.size() || k >= n.pages[c].size()) {
    return InvalidArgumentError("RNTuple page named out of range");
  }
  if (n.moved[c][k].offset != 0) {
    return InvalidArgumentError("RNTuple page added twice");
  }
  return &n.pages[c][k];
}

MovedBasket RntupleOverlayWriter::Place(
    uint32_t ntuple, int32_t column, int32_t ordinal, uint64_t size, bool sum) {
  NtupleState& n = ntuples_[ntuple];
  const auto c = static_cast<size_t>(column);
  const auto k = static_cast<size_t>(ordinal);
  const rootio::PageInfo& page = n.src.Page(n.pages[c][k]);
  const uint64_t bytes = size + (sum ? rootio::kPageChecksumSize : 0);
  n.moved[c][k] = {end_, size};
  MovedBasket m;
  m.tree = ntuple;
  m.branch = column;
  m.basket = ordinal;
  m.offset = end_;
  m.bytes = static_cast<uint32_t>(bytes);
  m.original_offset = page.locator.offset;
  m.original_bytes = static_cast<uint32_t>(page.stored_bytes());
  m.page = true;
  m.page_checksum = page.has_checksum;
  m.raw_bytes = static_cast<uint32_t>(
      rootio::PageLength(page.elements, n.src.columns[n.pages[c][k].column].bits));
  end_ += bytes;
  return m;
}

Result<MovedBasket> RntupleOverlayWriter::AddBasket(uint32_t ntuple,
                                                    int32_t column,
                                                    int32_t ordinal,
                                                    std::span<const uint8_t> stored,
                                                    ByteVector* out) {
  const RntupleRecordSource::PageRef* ref = FERRY_TRY(Claim(ntuple, column, ordinal));
  const RntupleRecordSource& src = ntuples_[ntuple].src;
  const rootio::PageInfo& page = src.Page(*ref);
  const rootio::ColumnRecord& record = src.columns[ref->column];
  const std::string what = "RNTuple '" + src.path + "' column " + std::to_string(ref->column)
                           + " page " + std::to_string(ordinal);
  if (stored.size() != page.stored_bytes() || page.stored_bytes() > UINT32_MAX) {
    return InvalidArgumentError(what + ": " + std::to_string(stored.size())
                                + " bytes given, the page list says "
                                + std::to_string(page.stored_bytes()));
  }
  auto raw = FERRY_TRY(rootio::UnpackPage(stored, page, record, what, &scratch_));
  raw_.assign(raw.begin(), raw.end());
  // Every candidate's sealed page; the chooser sees their sizes without the checksum.
  std::vector<ByteVector> sealed(candidates_.size());
  std::vector<uint64_t> sizes(candidates_.size());
  const size_t sum = page.has_checksum ? rootio::kPageChecksumSize : 0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    FERRY_TRY(SealPage(candidates_[i], raw_, page.has_checksum, &scratch_, &sealed[i]));
    sizes[i] = sealed[i].size() - sum;
  }
  const size_t chosen = chooser_ ? chooser_(raw_.size(), sizes) : 0;
  if (chosen >= candidates_.size()) {
    return InvalidArgumentError("the encoding chooser picked no candidate");
  }
  const ByteVector& bytes = sealed[chosen];
  // What a reader will decode must be what the original held.
  if (sizes[chosen] != raw_.size()) {
    FERRY_TRY(rootio::DecodePayload(std::span<const uint8_t>(bytes).first(sizes[chosen]),
                                    static_cast<int32_t>(raw_.size()), &candidate_));
    if (candidate_.size() != raw_.size()
        || std::memcmp(candidate_.data(), raw_.data(), raw_.size()) != 0) {
      return CorruptionError(what + ": the re-encoded page does not decode to the original");
    }
  }
  out->insert(out->end(), bytes.begin(), bytes.end());
  MovedBasket m = Place(ntuple, column, ordinal, sizes[chosen], page.has_checksum);
  m.setting = sizes[chosen] == raw_.size() ? codec::Setting{codec::Algorithm::kNone, 0}
                                           : candidates_[chosen];
  return m;
}

Result<MovedBasket> RntupleOverlayWriter::AddEncodedBasket(uint32_t ntuple,
                                                           int32_t column,
                                                           int32_t ordinal,
                                                           std::span<const uint8_t> encoded,
                                                           const codec::Setting& setting,
                                                           ByteVector* out) {
  const RntupleRecordSource::PageRef* ref = FERRY_TRY(Claim(ntuple, column, ordinal));
  const rootio::PageInfo& page = ntuples_[ntuple].src.Page(*ref);
  const size_t sum = page.has_checksum ? rootio::kPageChecksumSize : 0;
  if (encoded.size() < sum) {
    return InvalidArgumentError("re-encoded page shorter than its checksum");
  }
  out->insert(out->end(), encoded.begin(), encoded.end());
  MovedBasket m = Place(ntuple, column, ordinal, encoded.size() - sum, page.has_checksum);
  m.setting = setting;
  return m;
}

Result<MovedBasket> RntupleOverlayWriter::AddStoredBasket(uint32_t ntuple,
                                                          int32_t column,
                                                          int32_t ordinal,
                                                          std::span<const uint8_t> stored,
                                                          ByteVector* out) {
  const RntupleRecordSource::PageRef* ref = FERRY_TRY(Claim(ntuple, column, ordinal));
  const rootio::PageInfo& page = ntuples_[ntuple].src.Page(*ref);
  if (stored.size() != page.stored_bytes()) {
    return InvalidArgumentError("RNTuple page of " + std::to_string(stored.size())
                                + " bytes, the page list says "
                                + std::to_string(page.stored_bytes()));
  }
  out->insert(out->end(), stored.begin(), stored.end());
  MovedBasket m = Place(ntuple, column, ordinal, page.locator.size, page.has_checksum);
  ntuples_[ntuple].moved[static_cast<size_t>(column)][static_cast<size_t>(ordinal)].as_stored =
      true;
  // The original's codec, for the report: a page that did not shrink is stored raw.
  m.setting = {page.locator.size == m.raw_bytes
                   ? codec::Algorithm::kNone
                   : codec::DetectAlgorithm(stored.first(page.locator.size)),
               0};
  m.as_stored = true;
  return m;
}

Result<std::vector<std::vector<uint8_t>>> RntupleOverlayWriter::NewPageLists(
    const NtupleState& n) const {
  std::vector<rootio::PageList> lists = n.src.page_lists;
  // Per (group, cluster, column): pages moved.
  for (size_t col = 0; col < n.pages.size(); ++col) {
    for (size_t k = 0; k < n.pages[col].size(); ++k) {
      const RntupleRecordSource::PageRef& ref = n.pages[col][k];
      rootio::ColumnPages& range = lists[ref.group].clusters[ref.cluster].columns[ref.column];
      const Moved& m = n.moved[col][k];
      const bool moved = m.offset != 0;
      const bool first = ref.page == 0;
      // A range moves whole: its first page decides, the others must agree.
      const Moved& head = n.moved[col][k - ref.page];
      const bool range_moved = head.offset != 0;
      if (moved != range_moved || (moved && m.as_stored != head.as_stored)) {
        return InvalidArgumentError("RNTuple '" + n.src.path + "' column " + std::to_string(col)
                                    + ": a cluster's pages moved in part");
      }
      if (moved) {
        range.pages[ref.page].locator = {m.offset, m.size};
        // Pages as stored keep the original's codec, and so the range's field.
        if (first && !m.as_stored) {
          range.compression = RootCompression(setting_);
        }
      }
    }
  }
  std::vector<std::vector<uint8_t>> out;
  out.reserve(lists.size());
  for (const rootio::PageList& list : lists) {
    out.push_back(SerializePageList(list));
  }
  return out;
}

Result<std::pair<std::vector<uint8_t>, Patch>> RntupleOverlayWriter::AnchorRecord(
    const NtupleState& n, uint64_t footer_bytes) const {
  using L = rootio::AnchorLayout;
  // The footer's fields, in place in the original object (big-endian, as streamed); the
  // checksum, in the last 8 bytes, covers everything from the epoch on.
  constexpr size_t kSeekFooterAt =
      L::kChecksummedBegin + 2 * L::kVersionFields + 3 * sizeof(uint64_t);
  std::vector<uint8_t> record = n.src.anchor_key;
  record.insert(record.end(), n.src.anchor_payload.begin(), n.src.anchor_payload.end());
  uint8_t* obj = record.data() + n.src.anchor_key.size();
  const size_t size = n.src.anchor_payload.size();
  StoreBE<uint64_t>(obj + kSeekFooterAt, n.footer_at);
  StoreBE<uint64_t>(obj + kSeekFooterAt + 8, footer_bytes);
  StoreBE<uint64_t>(obj + kSeekFooterAt + 16, footer_bytes);
  StoreBE<uint64_t>(
      obj + size - L::kChecksumSize,
      hash::Xxh3(obj + L::kChecksummedBegin, size - L::kChecksummedBegin - L::kChecksumSize));
  // Stored uncompressed: fObjlen stays, fNbytes is the record's size.
  Patch entry = FERRY_TRY_CTX(MoveKey(record, n.src.entry, n.src.entry_offset, n.anchor_at),
                              "RNTuple '" + n.src.path + "' anchor");
  return std::make_pair(std::move(record), std::move(entry));
}

Result<Overlay> RntupleOverlayWriter::Finish(std::span<const uint8_t> head) {
  Overlay o;
  o.original_size = original_size_;
  o.baskets_begin = pages_begin_;
  o.virtual_size = end_;
  for (const NtupleState& n : ntuples_) {
    const std::vector<std::vector<uint8_t>> lists = FERRY_TRY(NewPageLists(n));
    std::vector<uint8_t> footer = n.src.footer;
    for (size_t g = 0; g < lists.size(); ++g) {
      // The link: u64 uncompressed length, then the standard locator (i32 size, u64 offset).
      uint8_t* link =
          footer.data() + rootio::kEnvelopePreamble + n.src.parsed_footer.groups[g].link_at;
      StoreLE<uint64_t>(link, lists[g].size());
      StoreLE<int32_t>(link + 8, static_cast<int32_t>(lists[g].size()));
      StoreLE<uint64_t>(link + 12, n.page_list_at[g]);
    }
    const size_t body = footer.size() - rootio::kEnvelopeChecksumSize;
    StoreLE<uint64_t>(footer.data() + body,
                      hash::Xxh3(std::span<const uint8_t>(footer).first(body)));
    auto [anchor, entry] = FERRY_TRY(AnchorRecord(n, footer.size()));
    o.patches.push_back(std::move(entry));
    auto record = [&o](uint64_t at, const std::vector<uint8_t>& bytes) {
      PlacedRecord& r = o.records.emplace_back();
      r.offset = at;
      r.slot_bytes = bytes.size();
      r.record.assign(bytes.begin(), bytes.end());
    };
    record(n.anchor_at, anchor);
    record(n.footer_at, footer);
    for (size_t g = 0; g < lists.size(); ++g) {
      record(n.page_list_at[g], lists[g]);
    }
  }
  o.patches.push_back(FERRY_TRY(HeaderPatch(head, o.virtual_size)));
  std::sort(o.patches.begin(), o.patches.end(),
            [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < o.patches.size(); ++i) {
    if (o.patches[i - 1].offset + o.patches[i - 1].bytes.size() > o.patches[i].offset) {
      return CorruptionError("patches overlap: a keys list inside the file header");
    }
  }
  return o;
}

Result<std::vector<uint8_t>> RelocateRntuplesInMemory(std::span<const uint8_t> file,
                                                      const codec::Setting& setting) {
  io::MemorySource src(std::vector<uint8_t>(file.begin(), file.end()));
  auto f = FERRY_TRY(rootio::RootFile::Open(src));
  RntupleOverlayWriter w(file.size(), setting);
  for (const rootio::RntupleEntry& e : FERRY_TRY(rootio::FindRntuples(*f))) {
    w.AddRntuple(FERRY_TRY_CTX(LoadRntupleRecord(*f, e.path), "RNTuple " + e.path));
  }
  w.Start();
  ByteVector pages;
  std::vector<uint8_t> stored;
  for (uint32_t t = 0; t < w.ntuple_count(); ++t) {
    const RntupleRecordSource& s = w.source(t);
    const auto refs = s.pages();
    for (size_t c = 0; c < refs.size(); ++c) {
      for (size_t k = 0; k < refs[c].size(); ++k) {
        const rootio::PageInfo& page = s.Page(refs[c][k]);
        stored.resize(static_cast<size_t>(page.stored_bytes()));
        FERRY_TRY(io::CheckRange(f->name(), file.size(), page.locator.offset, stored.size()));
        FERRY_TRY(src.ReadAt(page.locator.offset, stored));
        FERRY_TRY(w.AddBasket(t, static_cast<int32_t>(c), static_cast<int32_t>(k), stored, &pages));
      }
    }
  }
  const Overlay overlay = FERRY_TRY(w.Finish(file.first(std::min<size_t>(file.size(), 100))));
  return VirtualFileBytes(file, overlay, pages);
}

}  // namespace ferry::rootwrite
