// Rntuple's column access: element ranges across clusters, representations and pages.
#include <algorithm>
#include <string>

#include "rootio/rntuple.h"

namespace ferry::rootio {
namespace {

void AppendSlice(const ColumnValues& page, size_t from, size_t n, ColumnValues* out) {
  if (!page.reals.empty()) {
    auto b = page.reals.begin() + static_cast<ptrdiff_t>(from);
    out->reals.insert(out->reals.end(), b, b + static_cast<ptrdiff_t>(n));
    return;
  }
  auto b = page.ints.begin() + static_cast<ptrdiff_t>(from);
  out->ints.insert(out->ints.end(), b, b + static_cast<ptrdiff_t>(n));
  if (!page.tags.empty()) {
    auto t = page.tags.begin() + static_cast<ptrdiff_t>(from);
    out->tags.insert(out->tags.end(), t, t + static_cast<ptrdiff_t>(n));
  }
}

}  // namespace

std::optional<uint32_t> Rntuple::PrimaryColumn(uint32_t field, size_t k, size_t cluster) const {
  const ClusterInfo& c = clusters_[cluster];
  for (const auto& rep : representations_[field]) {
    if (k < rep.size() && rep[k] < c.columns.size() && !c.columns[rep[k]].suppressed) {
      return rep[k];
    }
  }
  return std::nullopt;
}

Result<const ColumnValues*> Rntuple::DecodedPage(uint32_t column,
                                                 size_t cluster,
                                                 size_t page) const {
  auto key = std::make_tuple(column, cluster, page);
  if (auto it = page_cache_.find(key); it != page_cache_.end()) {
    return &it->second;
  }
  const PageInfo& info = clusters_[cluster].columns[column].pages[page];
  std::string what =
      What("field '" + FieldPath(columns_[column].field_id) + "' column " + std::to_string(column)
           + " cluster " + std::to_string(cluster) + " page " + std::to_string(page));
  ByteVector bytes;
  FERRY_TRY(ReadPage(*source_, info, columns_[column], anchor_.max_key_size, what, &bytes));
  ColumnValues values;
  FERRY_TRY(DecodePage(columns_[column], bytes, info.elements, what, &values));
  size_t cost = values.ints.size() * 8 + values.reals.size() * 8 + values.tags.size() * 4;
  if (page_cache_bytes_ + cost > kPageCacheBytes) {
    page_cache_.clear();
    page_cache_bytes_ = 0;
  }
  page_cache_bytes_ += cost;
  return &page_cache_.emplace(key, std::move(values)).first->second;
}

Status Rntuple::ReadClusterElements(
    uint32_t column, size_t cluster, uint64_t first, uint64_t count, ColumnValues* out) const {
  const ColumnPages& pages = clusters_[cluster].columns[column];
  uint64_t page_begin = pages.element_offset;
  uint64_t end = first + count;
  for (size_t p = 0; p < pages.pages.size() && first < end; ++p) {
    uint64_t page_end = page_begin + pages.pages[p].elements;
    if (page_end > first) {
      const ColumnValues* values = FERRY_TRY(DecodedPage(column, cluster, p));
      uint64_t n = std::min(end, page_end) - first;
      AppendSlice(*values, first - page_begin, n, out);
      first += n;
    }
    page_begin = page_end;
  }
  if (first < end) {
    return CorruptionError(What("column " + std::to_string(column)) + ": cluster "
                           + std::to_string(cluster) + " pages end before element "
                           + std::to_string(end));
  }
  return OkStatus();
}

Rntuple::ColumnExtent Rntuple::Extent(uint32_t field, size_t k) const {
  // Elements before a deferred column's first element were never written: they are zeros.
  ColumnExtent e;
  for (const auto& rep : representations_[field]) {
    int64_t f = columns_[rep[k]].first_element;
    e.deferred =
        std::max(e.deferred, f < 0 ? 0 - static_cast<uint64_t>(f) : static_cast<uint64_t>(f));
  }
  // The column's elements end where its last cluster's pages end; before its first page only
  // the deferred zeros exist (no more of them than entries, whatever the record claims).
  uint64_t pages_end = 0;
  for (size_t c = 0; c < clusters_.size(); ++c) {
    if (auto col = PrimaryColumn(field, k, c)) {
      const ColumnPages& pages = clusters_[c].columns[*col];
      pages_end = std::max(pages_end, pages.element_offset + pages.elements());
    }
  }
  e.end = std::max(pages_end, std::min(e.deferred, entries_));
  return e;
}

Status Rntuple::ReadElements(
    uint32_t field, size_t k, uint64_t first, uint64_t count, ColumnValues* out) const {
  const auto& reps = representations_[field];
  if (reps.empty() || k >= reps[0].size()) {
    return CorruptionError(What("field '" + FieldPath(field) + "'") + ": has no column "
                           + std::to_string(k));
  }
  if (count > kMaxElementsPerRead) {
    return UnsupportedError(What("field '" + FieldPath(field) + "'") + ": " + std::to_string(count)
                            + " elements in one read, more than the "
                            + std::to_string(kMaxElementsPerRead) + " this reader holds");
  }
  // Checked before anything is read or allocated. (Not a structured binding: clang 14
  // cannot capture one in the lambda below.)
  const ColumnExtent extent = Extent(field, k);
  const uint64_t deferred = extent.deferred;
  const uint64_t available = extent.end;
  if (first > available || count > available - first) {
    return CorruptionError(What("field '" + FieldPath(field) + "'") + ": elements ["
                           + std::to_string(first) + ", +" + std::to_string(count)
                           + ") lie past the column's " + std::to_string(available));
  }
  const ColumnRecord& zero_kind = columns_[reps[0][k]];
  uint64_t pos = first;
  uint64_t end = first + count;
  auto fill_zeros_to = [&](uint64_t limit) {
    uint64_t stop = std::min(limit, deferred);
    if (pos < stop) {
      AppendZeros(zero_kind, stop - pos, out);
      pos = stop;
    }
  };
  for (size_t c = 0; c < clusters_.size() && pos < end; ++c) {
    auto col = PrimaryColumn(field, k, c);
    if (!col) {
      continue;
    }
    const ColumnPages& pages = clusters_[c].columns[*col];
    uint64_t begin = pages.element_offset;
    uint64_t stop = begin + pages.elements();
    if (stop <= pos) {
      continue;
    }
    fill_zeros_to(std::min(begin, end));
    if (pos < begin || pos >= end) {
      break;
    }
    uint64_t n = std::min(end, stop) - pos;
    FERRY_TRY(ReadClusterElements(*col, c, pos, n, out));
    pos += n;
  }
  fill_zeros_to(end);
  if (pos < end) {
    return CorruptionError(What("field '" + FieldPath(field) + "'") + ": element "
                           + std::to_string(pos) + " of column " + std::to_string(k)
                           + " lies in no page");
  }
  return OkStatus();
}

std::optional<uint64_t> Rntuple::ElementBase(uint32_t field, size_t cluster) const {
  const FieldRecord& f = fields_[field];
  if (!representations_[field].empty()) {
    auto col = PrimaryColumn(field, 0, cluster);
    if (!col) {
      return 0;  // the column starts later: nothing of it lies in this cluster
    }
    uint64_t offset = clusters_[cluster].columns[*col].element_offset;
    // A repetitive leaf (std::bitset) stores array_size elements per value.
    return f.repetitive() && f.array_size > 0 ? offset / f.array_size : offset;
  }
  for (uint32_t child : children_[field]) {
    auto base = ElementBase(child, cluster);
    if (base) {
      return f.repetitive() && f.array_size > 0 ? *base / f.array_size : *base;
    }
  }
  return std::nullopt;
}

Result<uint64_t> Rntuple::IndexBase(uint32_t field, size_t cluster) const {
  std::optional<uint64_t> base;
  if (!representations_[field].empty() && representations_[field][0].size() >= 2) {
    // std::string and streamer fields: the second column holds the counted bytes.
    auto col = PrimaryColumn(field, 1, cluster);
    base = col ? clusters_[cluster].columns[*col].element_offset : 0;
  } else if (!children_[field].empty()) {
    base = ElementBase(children_[field][0], cluster);
  }
  if (!base) {
    return UnsupportedError(What("field '" + FieldPath(field) + "'")
                            + ": its items have no column to count them");
  }
  return *base;
}

}  // namespace ferry::rootio
