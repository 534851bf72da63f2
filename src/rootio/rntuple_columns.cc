#include "rootio/rntuple_columns.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/endian.h"
#include "rootio/rntuple_blob.h"
#include "rootio/rntuple_page.h"

namespace ferry::rootio {
namespace {

constexpr uint64_t kPageChecksumBytes = 8;
// The most elements of one column in one cluster (at most 8 bytes each once decoded).
constexpr uint64_t kMaxClusterElements = uint64_t{1} << 27;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The decoded type of a value column; kUnknown for Index and Switch columns.
LeafType LeafTypeOfColumn(const ColumnRecord& c) {
  const ColumnTypeInfo* info = FindColumnType(c.type);
  if (info == nullptr || info->kind == ElementKind::kIndex || info->kind == ElementKind::kSwitch) {
    return LeafType::kUnknown;
  }
  if (info->kind == ElementKind::kReal) {
    return NativeElementSize(c) == 8 ? LeafType::kFloat64 : LeafType::kFloat32;
  }
  const bool is_signed = info->kind == ElementKind::kSigned;
  switch (c.bits) {
    case 1:
      return LeafType::kBool;
    case 8:
      return is_signed ? LeafType::kInt8 : LeafType::kUInt8;
    case 16:
      return is_signed ? LeafType::kInt16 : LeafType::kUInt16;
    case 32:
      return is_signed ? LeafType::kInt32 : LeafType::kUInt32;
    default:
      return is_signed ? LeafType::kInt64 : LeafType::kUInt64;
  }
}

// The one physical column of a field with a single representation of `n` columns, when it has
// no deferred start; why not otherwise ("" when fine).
std::string SingleColumn(const Rntuple& r, uint32_t field, uint32_t* column) {
  if (r.RepresentationCount(field) != 1 || r.Representation(field, 0).size() != 1) {
    return "not a single column in a single representation";
  }
  *column = r.Representation(field, 0)[0];
  if (r.columns()[*column].first_element != 0) {
    return "a deferred column (added by a schema extension)";
  }
  return "";
}

// The field's values: a scalar leaf below a collection, an array or nothing.
std::string ResolveValues(const Rntuple& r, uint32_t field, RntupleLeaf* leaf) {
  const FieldRecord& f = r.fields()[field];
  if (f.role != static_cast<uint16_t>(FieldRole::kLeaf) || f.repetitive()
      || !r.Children(field).empty()) {
    return "its items are not numbers ('" + f.type_name + "')";
  }
  if (std::string why = SingleColumn(r, field, &leaf->value_column); !why.empty()) {
    return why;
  }
  leaf->type = LeafTypeOfColumn(r.columns()[leaf->value_column]);
  return leaf->type == LeafType::kUnknown ? "its column is not of numbers" : "";
}

// A std::string field: its Index column (each entry's end) and its Char column, read as a
// TTree's string leaf is (rootio/column.h: jagged, the characters in `bytes`).
std::string ResolveString(const Rntuple& r, uint32_t field, RntupleLeaf* leaf) {
  if (r.RepresentationCount(field) != 1 || r.Representation(field, 0).size() != 2) {
    return "a string not of one Index and one Char column in a single representation";
  }
  leaf->index_column = r.Representation(field, 0)[0];
  leaf->value_column = r.Representation(field, 0)[1];
  const ColumnRecord& index = r.columns()[leaf->index_column];
  const ColumnRecord& chars = r.columns()[leaf->value_column];
  if (index.first_element != 0 || chars.first_element != 0) {
    return "a deferred column (added by a schema extension)";
  }
  const ColumnTypeInfo* info = FindColumnType(index.type);
  if (info == nullptr || info->kind != ElementKind::kIndex || NativeElementSize(chars) != 1) {
    return "a string whose columns are not an index and characters";
  }
  leaf->type = LeafType::kString;
  leaf->jagged = true;
  return "";
}

// Why a top-level field is not flat ("" when it is), filling *leaf.
std::string Classify(const Rntuple& r, uint32_t field, RntupleLeaf* leaf) {
  const FieldRecord& f = r.fields()[field];
  const auto& children = r.Children(field);
  const bool collection = f.role == static_cast<uint16_t>(FieldRole::kCollection);
  if (f.role == static_cast<uint16_t>(FieldRole::kLeaf)
      && StartsWith(f.type_name, "ROOT::RNTupleCardinality<")) {
    // A collection's lengths: read from its Index column (as a TTree counter leaf).
    if (std::string why = SingleColumn(r, field, &leaf->index_column); !why.empty()) {
      return why;
    }
    leaf->cardinality = true;
    leaf->type =
        f.type_name.find("64") != std::string::npos ? LeafType::kUInt64 : LeafType::kUInt32;
    return "";
  }
  if (f.role == static_cast<uint16_t>(FieldRole::kLeaf) && f.type_name == "std::string"
      && children.empty()) {
    return ResolveString(r, field, leaf);
  }
  if (collection && children.size() == 1) {
    if (std::string why = SingleColumn(r, field, &leaf->index_column); !why.empty()) {
      return why;
    }
    leaf->jagged = true;
    return ResolveValues(r, children[0], leaf);
  }
  if (f.repetitive() && r.RepresentationCount(field) == 0 && children.size() == 1) {
    if (f.array_size == 0 || f.array_size > UINT32_MAX) {
      return "an array of " + std::to_string(f.array_size) + " items";
    }
    leaf->fixed_len = static_cast<uint32_t>(f.array_size);
    return ResolveValues(r, children[0], leaf);
  }
  return ResolveValues(r, field, leaf);
}

}  // namespace

Result<RntupleLeaf> ResolveRntupleLeaf(const Rntuple& r, std::string_view path) {
  return ResolveRntupleLeaf(r, FERRY_TRY(r.FindField(path)));
}

Result<RntupleLeaf> ResolveRntupleLeaf(const Rntuple& r, uint32_t field) {
  const std::string path = r.FieldPath(field);
  RntupleLeaf leaf;
  leaf.path = path;
  leaf.field = field;
  std::string why = r.TopLevelOf(field) != field
                        ? "a subfield (only top-level fields are read as columns)"
                        : Classify(r, field, &leaf);
  if (!why.empty()) {
    return UnsupportedError("RNTuple '" + r.name() + "' field '" + path
                            + "' is not read as a column: " + why);
  }
  return leaf;
}

Status AppendLeafPages(const Rntuple& r,
                       const RntupleLeaf& leaf,
                       size_t cluster,
                       std::vector<RntuplePageRef>* pages,
                       uint64_t* buffer_end) {
  const ClusterInfo& c = r.clusters()[cluster];
  auto add_column = [&](uint32_t column) -> Status {
    if (column >= c.columns.size() || c.columns[column].suppressed) {
      return CorruptionError("RNTuple '" + r.name() + "' field '" + leaf.path + "': cluster "
                             + std::to_string(cluster) + " has no column "
                             + std::to_string(column));
    }
    const auto& list = c.columns[column].pages;
    for (size_t p = 0; p < list.size(); ++p) {
      RntuplePageRef ref;
      ref.column = column;
      ref.page = static_cast<uint32_t>(p);
      ref.offset = list[p].locator.offset;
      ref.size = list[p].locator.size + (list[p].has_checksum ? kPageChecksumBytes : 0);
      ref.buffer_offset = *buffer_end;
      *buffer_end += ref.size;
      pages->push_back(ref);
    }
    return OkStatus();
  };
  if (leaf.jagged || leaf.cardinality) {
    FERRY_TRY(add_column(leaf.index_column));
  }
  if (!leaf.cardinality) {
    FERRY_TRY(add_column(leaf.value_column));
  }
  return OkStatus();
}

Status FetchPages(const Rntuple& r,
                  std::span<const RntuplePageRef> pages,
                  uint64_t buffer_size,
                  uint32_t max_ranges,
                  ByteVector* buffer) {
  io::ByteSource& source = r.source();
  const uint64_t max_key = r.anchor().max_key_size;
  if (buffer_size > source.size()) {
    return CorruptionError("RNTuple '" + r.name() + "': pages of " + std::to_string(buffer_size)
                           + " bytes, more than the file holds");
  }
  buffer->resize(static_cast<size_t>(buffer_size));
  std::vector<io::ReadRequest> requests;
  ByteVector blob;
  auto flush = [&]() -> Status {
    Status s = requests.empty() ? OkStatus() : source.ReadV(requests);
    requests.clear();
    return s;
  };
  for (const RntuplePageRef& p : pages) {
    if (p.buffer_offset + p.size > buffer_size) {
      return InvalidArgumentError("page past the fetch buffer");
    }
    uint8_t* dst = buffer->data() + p.buffer_offset;
    if (max_key != 0 && p.size > max_key) {
      // Split across keys: the first chunk lists where the others are.
      FERRY_TRY(ReadBlob(source, p.offset, p.size, max_key,
                         "RNTuple '" + r.name() + "' column " + std::to_string(p.column), &blob));
      std::memcpy(dst, blob.data(), blob.size());
      continue;
    }
    requests.push_back({p.offset, std::span<uint8_t>(dst, static_cast<size_t>(p.size))});
    if (requests.size() >= std::max<uint32_t>(1, max_ranges)) {
      FERRY_TRY(flush());
    }
  }
  return flush();
}

namespace {

// Unpacks and decodes one column's pages of a cluster (the refs of that column, in order)
// into *out.
Status DecodeColumnPages(const Rntuple& r,
                         size_t cluster,
                         std::span<const RntuplePageRef> pages,
                         std::span<const uint8_t> buffer,
                         ByteVector* unpacked,
                         ByteVector* out) {
  for (const RntuplePageRef& p : pages) {
    const PageInfo& info = r.clusters()[cluster].columns[p.column].pages[p.page];
    const ColumnRecord& column = r.columns()[p.column];
    std::string what = "RNTuple '" + r.name() + "' column " + std::to_string(p.column) + " cluster "
                       + std::to_string(cluster) + " page " + std::to_string(p.page);
    if (p.buffer_offset > buffer.size() || p.size > buffer.size() - p.buffer_offset) {
      return InvalidArgumentError(what + ": not in the fetch buffer");
    }
    auto stored = buffer.subspan(static_cast<size_t>(p.buffer_offset), static_cast<size_t>(p.size));
    auto bytes = FERRY_TRY(UnpackPage(stored, info, column, what, unpacked));
    FERRY_TRY(DecodePageNative(column, bytes, info.elements, what, out));
  }
  return OkStatus();
}

// The pages of a column hold `expected` elements (checked against the page list before
// anything is decoded, so a damaged file's claims bound no allocation beyond the limit).
Status CheckElements(const Rntuple& r,
                     size_t cluster,
                     std::span<const RntuplePageRef> pages,
                     uint64_t expected,
                     const std::string& what) {
  uint64_t elements = 0;
  for (const RntuplePageRef& p : pages) {
    elements += r.clusters()[cluster].columns[p.column].pages[p.page].elements;
  }
  if (elements != expected) {
    return CorruptionError(what + ": pages of " + std::to_string(elements)
                           + " elements where the entries hold " + std::to_string(expected));
  }
  if (expected > kMaxClusterElements) {
    return UnsupportedError(what + ": " + std::to_string(expected)
                            + " elements in one cluster, more than the "
                            + std::to_string(kMaxClusterElements) + " read at once");
  }
  return OkStatus();
}

// Entry i's items end at index[i] (uint64, relative to the cluster): offsets, checked.
Status IndexToOffsets(std::span<const uint8_t> index,
                      uint64_t entries,
                      const std::string& what,
                      std::vector<uint64_t>* offsets) {
  offsets->resize(static_cast<size_t>(entries) + 1);
  (*offsets)[0] = 0;
  for (size_t i = 0; i < entries; ++i) {
    auto end = LoadLE<uint64_t>(index.data() + i * 8);
    if (end < (*offsets)[i]) {
      return CorruptionError(what + ": collection offsets run backwards at entry "
                             + std::to_string(i));
    }
    (*offsets)[i + 1] = end;
  }
  return OkStatus();
}

// A cardinality leaf's values: each entry's length, as uint32 or uint64.
Status LengthsFromOffsets(const std::vector<uint64_t>& offsets,
                          LeafType type,
                          const std::string& what,
                          ByteVector* out) {
  const size_t n = offsets.size() - 1;
  const size_t width = type == LeafType::kUInt64 ? 8 : 4;
  out->resize(n * width);
  for (size_t i = 0; i < n; ++i) {
    uint64_t len = offsets[i + 1] - offsets[i];
    if (width == 4) {
      if (len > UINT32_MAX) {
        return CorruptionError(what + ": a collection of " + std::to_string(len) + " items");
      }
      StoreLE<uint32_t>(out->data() + i * 4, static_cast<uint32_t>(len));
    } else {
      StoreLE<uint64_t>(out->data() + i * 8, len);
    }
  }
  return OkStatus();
}

}  // namespace

Status DecodeLeafCluster(const Rntuple& r,
                         const RntupleLeaf& leaf,
                         size_t cluster,
                         std::span<const RntuplePageRef> pages,
                         std::span<const uint8_t> buffer,
                         RntupleScratch* scratch,
                         Column* out) {
  const ClusterInfo& c = r.clusters()[cluster];
  const std::string what =
      "RNTuple '" + r.name() + "' field '" + leaf.path + "' cluster " + std::to_string(cluster);
  out->type = leaf.type;
  out->first_entry = static_cast<int64_t>(c.first_entry);
  out->num_entries = static_cast<int64_t>(c.entries);
  out->jagged = leaf.jagged;
  out->fixed_len = leaf.fixed_len;
  out->bytes.clear();
  size_t split = 0;
  if (leaf.jagged || leaf.cardinality) {
    while (split < pages.size() && pages[split].column == leaf.index_column) {
      ++split;
    }
    // Every RVec of a collection reads its Index column: decoded once per scratch and cluster.
    RntupleScratch::CollectionOffsets& held = scratch->OffsetsOf(leaf.index_column);
    if (held.cluster != cluster) {
      held.cluster = SIZE_MAX;
      FERRY_TRY(CheckElements(r, cluster, pages.first(split), c.entries, what));
      scratch->index.clear();
      FERRY_TRY(DecodeColumnPages(r, cluster, pages.first(split), buffer, &scratch->unpacked,
                                  &scratch->index));
      if (out->offsets.SharesWith(held.offsets)) {
        out->offsets.clear();
      }
      // In place when no column holds it any more, else a new vector.
      FERRY_TRY(IndexToOffsets(scratch->index, c.entries, what, &held.offsets.Overwrite()));
      held.cluster = cluster;
    }
    if (leaf.cardinality) {
      out->offsets.clear();
      return LengthsFromOffsets(held.offsets.vector(), leaf.type, what, &out->bytes);
    }
    out->offsets.Share(held.offsets);
  }
  if (!leaf.jagged) {
    out->offsets.clear();
  }
  if (!leaf.jagged && c.entries > kMaxClusterElements / leaf.fixed_len) {
    return UnsupportedError(what + ": " + std::to_string(c.entries) + " entries of "
                            + std::to_string(leaf.fixed_len) + " values, more than read at once");
  }
  const uint64_t expected = leaf.jagged ? out->offsets.back() : c.entries * leaf.fixed_len;
  FERRY_TRY(CheckElements(r, cluster, pages.subspan(split), expected, what));
  out->bytes.reserve(static_cast<size_t>(expected) * LeafTypeSize(leaf.type));
  return DecodeColumnPages(r, cluster, pages.subspan(split), buffer, &scratch->unpacked,
                           &out->bytes);
}

namespace {

// Elements [a, b) of a column in a cluster (cluster-relative) appended to *out as native
// values, reading only the pages that hold them (one request each).
Status ReadColumnSlice(const Rntuple& r,
                       uint32_t column,
                       size_t cluster,
                       uint64_t a,
                       uint64_t b,
                       RntupleScratch* s,
                       ByteVector* out) {
  const std::string what = "RNTuple '" + r.name() + "' column " + std::to_string(column)
                           + " cluster " + std::to_string(cluster);
  const ClusterInfo& c = r.clusters()[cluster];
  if (column >= c.columns.size() || c.columns[column].suppressed) {
    return CorruptionError(what + ": not in the cluster");
  }
  const ColumnRecord& record = r.columns()[column];
  const size_t width = NativeElementSize(record);
  const auto& pages = c.columns[column].pages;
  uint64_t begin = 0;
  for (size_t p = 0; p < pages.size() && begin < b; ++p) {
    const uint64_t end = begin + pages[p].elements;
    if (end > a) {
      RntuplePageRef ref;
      ref.column = column;
      ref.page = static_cast<uint32_t>(p);
      ref.offset = pages[p].locator.offset;
      ref.size = pages[p].locator.size + (pages[p].has_checksum ? kPageChecksumBytes : 0);
      FERRY_TRY(FetchPages(r, {&ref, 1}, ref.size, 1, &s->stored));
      const std::string page_what = what + " page " + std::to_string(p);
      auto bytes = FERRY_TRY(UnpackPage(s->stored, pages[p], record, page_what, &s->unpacked));
      s->page.clear();
      FERRY_TRY(DecodePageNative(record, bytes, pages[p].elements, page_what, &s->page));
      const uint64_t from = std::max(a, begin) - begin;
      const uint64_t to = std::min(b, end) - begin;
      const size_t at = out->size();
      out->resize(at + static_cast<size_t>(to - from) * width);
      std::memcpy(out->data() + at, s->page.data() + from * width,
                  static_cast<size_t>(to - from) * width);
    }
    begin = end;
  }
  if (begin < b) {
    return CorruptionError(what + ": pages end at element " + std::to_string(begin) + ", before "
                           + std::to_string(b));
  }
  return OkStatus();
}

// Entries [from, to) of a cluster (cluster-relative) appended to *out (offsets continued).
Status AppendClusterEntries(const Rntuple& r,
                            const RntupleLeaf& leaf,
                            size_t cluster,
                            uint64_t from,
                            uint64_t to,
                            RntupleScratch* s,
                            Column* out) {
  const std::string what =
      "RNTuple '" + r.name() + "' field '" + leaf.path + "' cluster " + std::to_string(cluster);
  if (!leaf.jagged && !leaf.cardinality) {
    if (to > kMaxClusterElements / leaf.fixed_len) {
      return UnsupportedError(what + ": more values than read at once");
    }
    out->num_entries += static_cast<int64_t>(to - from);
    return ReadColumnSlice(r, leaf.value_column, cluster, from * leaf.fixed_len,
                           to * leaf.fixed_len, s, &out->bytes);
  }
  // Entry i's items end at index[i]; the entry before `from` gives where they start.
  const uint64_t first = from > 0 ? from - 1 : 0;
  s->index.clear();
  FERRY_TRY(ReadColumnSlice(r, leaf.index_column, cluster, first, to, s, &s->index));
  std::vector<uint64_t>& offsets = s->offsets;
  offsets.assign(1, from > 0 ? LoadLE<uint64_t>(s->index.data()) : 0);
  for (uint64_t i = from; i < to; ++i) {
    auto end = LoadLE<uint64_t>(s->index.data() + (i - first) * 8);
    if (end < offsets.back() || end - offsets[0] > kMaxClusterElements) {
      return CorruptionError(what + ": collection offsets run backwards or past the limit at "
                             + "entry " + std::to_string(i));
    }
    offsets.push_back(end);
  }
  out->num_entries += static_cast<int64_t>(to - from);
  if (leaf.cardinality) {
    ByteVector lengths;
    FERRY_TRY(LengthsFromOffsets(offsets, leaf.type, what, &lengths));
    out->bytes.insert(out->bytes.end(), lengths.begin(), lengths.end());
    return OkStatus();
  }
  const uint64_t base = out->offsets.back();
  for (size_t i = 1; i < offsets.size(); ++i) {
    out->offsets.push_back(base + offsets[i] - offsets[0]);
  }
  return ReadColumnSlice(r, leaf.value_column, cluster, offsets.front(), offsets.back(), s,
                         &out->bytes);
}

}  // namespace

Status ReadRntupleLeaf(const Rntuple& r,
                       const RntupleLeaf& leaf,
                       EntryRange range,
                       RntupleScratch* scratch,
                       Column* out) {
  if (range.begin < 0 || range.end < range.begin
      || static_cast<uint64_t>(range.end) > r.entries()) {
    return InvalidArgumentError("RNTuple '" + r.name() + "': entries ["
                                + std::to_string(range.begin) + ", " + std::to_string(range.end)
                                + ") pass its " + std::to_string(r.entries()));
  }
  out->type = leaf.type;
  out->first_entry = range.begin;
  out->num_entries = 0;
  out->jagged = leaf.jagged;
  out->fixed_len = leaf.fixed_len;
  out->offsets.assign(leaf.jagged ? 1 : 0, 0);
  out->bytes.clear();
  const auto begin = static_cast<uint64_t>(range.begin);
  const auto end = static_cast<uint64_t>(range.end);
  for (size_t c = 0; c < r.clusters().size(); ++c) {
    const ClusterInfo& info = r.clusters()[c];
    const uint64_t stop = info.first_entry + info.entries;
    if (stop <= begin || info.first_entry >= end) {
      continue;
    }
    FERRY_TRY(AppendClusterEntries(r, leaf, c, std::max(begin, info.first_entry) - info.first_entry,
                                   std::min(end, stop) - info.first_entry, scratch, out));
  }
  if (out->num_entries != range.size()) {
    return CorruptionError("RNTuple '" + r.name() + "': its clusters do not cover entries ["
                           + std::to_string(range.begin) + ", " + std::to_string(range.end) + ")");
  }
  return OkStatus();
}

}  // namespace ferry::rootio
