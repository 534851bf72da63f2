#include "rootio/tree.h"

#include <algorithm>
#include <bit>
#include <string>

#include "base/endian.h"

namespace ferry::rootio {
namespace {

// reserve() to exactly the next size would reallocate on every basket; grow geometrically.
template <class V>
void ReserveGeometric(V* v, size_t need) {
  if (v->capacity() < need) {
    v->reserve(std::max(need, 2 * v->capacity()));
  }
}

std::string BasketContext(const Branch& b, size_t i) {
  return "branch " + b.name + " > basket " + std::to_string(i);
}

}  // namespace

Status Tree::CheckReadable(int32_t leaf) const {
  if (leaf < 0 || static_cast<size_t>(leaf) >= info_.leaves.size()) {
    return NotFoundError("no leaf #" + std::to_string(leaf));
  }
  const Leaf& l = info_.leaves[static_cast<size_t>(leaf)];
  if (l.branch < 0) {
    return UnsupportedError("leaf " + l.name + " belongs to no branch");
  }
  const Branch& b = info_.branches[static_cast<size_t>(l.branch)];
  if (!b.supported) {
    return UnsupportedError("branch " + b.name + " cannot be read: " + b.unsupported_reason);
  }
  if (l.type == LeafType::kUnknown) {
    return UnsupportedError("leaf " + l.name + " has unsupported class " + l.class_name);
  }
  return OkStatus();
}

Column Tree::StartColumn(int32_t leaf, int64_t first) const {
  Column col;
  StartColumn(leaf, first, &col);
  return col;
}

void Tree::StartColumn(int32_t leaf, int64_t first, Column* col) const {
  const Leaf& l = info_.leaves[static_cast<size_t>(leaf)];
  col->type = l.type;
  col->first_entry = first;
  col->num_entries = 0;
  col->jagged = l.jagged() || l.type == LeafType::kString;
  col->fixed_len = col->jagged ? 1 : static_cast<uint32_t>(l.len);
  col->offsets.clear();
  col->bytes.clear();
  if (col->jagged) {
    col->offsets.push_back(0);
  }
}

std::vector<size_t> Tree::BasketsOverlapping(int32_t branch, EntryRange range) const {
  std::vector<size_t> out;
  const Branch& b = info_.branches[static_cast<size_t>(branch)];
  for (size_t i = 0; i < b.baskets.size(); ++i) {
    const BasketRef& r = b.baskets[i];
    if (r.first_entry < range.end && r.first_entry + r.num_entries > range.begin) {
      out.push_back(i);
    }
  }
  return out;
}

Result<std::vector<uint8_t>> Tree::ReadBasketRecord(int32_t branch, size_t basket) const {
  const Branch& b = info_.branches[static_cast<size_t>(branch)];
  const BasketRef& r = b.baskets[basket];
  if (r.embedded >= 0) {
    return CorruptionError(BasketContext(b, basket) + " is embedded in the TTree record");
  }
  FERRY_TRY_CTX(io::CheckRange(source_->name(), source_->size(), r.seek, r.bytes),
                BasketContext(b, basket));
  std::vector<uint8_t> record(r.bytes);
  FERRY_TRY_CTX(source_->ReadAt(r.seek, record), BasketContext(b, basket));
  return record;
}

Result<BasketView> Tree::ReadBasket(int32_t branch, size_t basket, BasketDecoder* decoder) const {
  const Branch& b = info_.branches[static_cast<size_t>(branch)];
  const BasketRef& r = b.baskets[basket];
  if (r.embedded >= 0) {
    return BasketDecoder::View(b.embedded[static_cast<size_t>(r.embedded)]);
  }
  FERRY_TRY_CTX(io::CheckRange(source_->name(), source_->size(), r.seek, r.bytes),
                BasketContext(b, basket));
  // Memory-resident sources are decoded in place; others read into the decoder's buffer.
  std::span<const uint8_t> record;
  if (auto view = source_->View(r.seek, r.bytes)) {
    record = *view;
  } else {
    std::span<uint8_t> buf = decoder->RecordBuffer(r.bytes);
    FERRY_TRY_CTX(source_->ReadAt(r.seek, buf), BasketContext(b, basket));
    record = buf;
  }
  return FERRY_TRY_CTX(decoder->Decode(record), BasketContext(b, basket));
}

namespace {

// The AppendFromBasket cases: entries [lo, hi) of a basket's data appended to out (values,
// and offsets where the column has them); the caller counts the entries.

// Strings: a length byte (255: a 4-byte big-endian length follows), then the characters.
Status AppendStrings(const BasketView& view, int64_t lo, int64_t hi, Column* out) {
  const std::span<const uint8_t> data = view.data;
  size_t pos = 0;
  for (int64_t e = 0; e < hi; ++e) {
    if (!view.offsets.empty()) {
      pos = view.offsets[static_cast<size_t>(e)];
    }
    if (pos >= data.size()) {
      return CorruptionError("string entry " + std::to_string(e) + " starts past the basket data");
    }
    size_t n = data[pos++];
    if (n == 255) {
      if (data.size() - pos < 4) {
        return CorruptionError("string length truncated");
      }
      n = LoadBE<uint32_t>(data.data() + pos);
      pos += 4;
    }
    if (n > data.size() - pos) {
      return CorruptionError("string entry " + std::to_string(e) + " runs past the basket data");
    }
    if (e >= lo) {
      out->bytes.insert(out->bytes.end(), data.begin() + static_cast<ptrdiff_t>(pos),
                        data.begin() + static_cast<ptrdiff_t>(pos + n));
      out->offsets.push_back(out->bytes.size());
    }
    pos += n;
  }
  return OkStatus();
}

// Fixed-size entries: one swap for a single-leaf branch, else the leaf's slice of each entry.
Status AppendFixed(
    const Leaf& l, const Branch& b, const BasketView& view, int64_t lo, int64_t hi, Column* out) {
  const std::span<const uint8_t> data = view.data;
  const size_t entry_size = b.fixed_entry_size;
  const auto len = static_cast<size_t>(l.len);
  if (entry_size == 0 || data.size() / entry_size < static_cast<size_t>(view.num_entries)) {
    return CorruptionError("basket data is " + std::to_string(data.size()) + " bytes, "
                           + std::to_string(view.num_entries) + " entries of "
                           + std::to_string(entry_size) + " bytes need more");
  }
  if (b.leaves.size() == 1) {
    AppendSwapped(l.type, data.data() + static_cast<size_t>(lo) * entry_size,
                  static_cast<size_t>(hi - lo) * len, &out->bytes);
  } else {
    for (int64_t e = lo; e < hi; ++e) {
      AppendSwapped(l.type, data.data() + static_cast<size_t>(e) * entry_size + l.entry_offset, len,
                    &out->bytes);
    }
  }
  return OkStatus();
}

// Jagged entries with stored entry offsets.
Status AppendJaggedByOffsets(const Leaf& l,
                             const BasketView& view,
                             const BasketRef& ref,
                             int64_t lo,
                             int64_t hi,
                             Column* out) {
  const size_t elem = LeafTypeSize(l.type);
  const std::span<const uint8_t> data = view.data;
  // Entries [lo, hi) are contiguous in the basket: swap them in one pass. Element sizes are
  // powers of two, so the per-entry work is a shift, and misaligned entries are caught by
  // one OR-reduction after the loop rather than a division per entry.
  const uint32_t first = view.offsets[static_cast<size_t>(lo)];
  const uint64_t base = out->bytes.size() / elem;
  const auto shift = static_cast<unsigned>(std::countr_zero(elem));
  const auto n = static_cast<size_t>(hi - lo);
  const size_t at = out->offsets.size();
  std::vector<uint64_t>& offsets = out->offsets.Mutable();
  ReserveGeometric(&offsets, at + n);
  offsets.resize(at + n);
  uint64_t* dst = offsets.data() + at;
  const uint32_t* src = view.offsets.data() + lo + 1;
  uint32_t misaligned = 0;
  for (size_t k = 0; k < n; ++k) {
    uint32_t rel = src[k] - first;
    misaligned |= rel;
    dst[k] = base + (rel >> shift);
  }
  if ((misaligned & static_cast<uint32_t>(elem - 1)) != 0) {
    return CorruptionError("an entry of entries [" + std::to_string(ref.first_entry + lo) + ", "
                           + std::to_string(ref.first_entry + hi) + ") is not a multiple of "
                           + std::to_string(elem) + " bytes");
  }
  const uint32_t last = view.offsets[static_cast<size_t>(hi)];
  AppendSwapped(l.type, data.data() + first, (last - first) / elem, &out->bytes);
  return OkStatus();
}

// Jagged entries without offsets: element counts rebuilt from the counter leaf's values.
Status AppendJaggedByCounts(const Leaf& l,
                            const BasketView& view,
                            const BasketRef& ref,
                            const Column* counts,
                            int64_t lo,
                            int64_t hi,
                            Column* out) {
  const size_t elem = LeafTypeSize(l.type);
  const auto unit = static_cast<uint64_t>(l.len);
  const std::span<const uint8_t> data = view.data;
  if (counts == nullptr || counts->num_entries != ref.num_entries) {
    return CorruptionError("jagged basket without entry offsets and no counter values");
  }
  uint64_t pos = 0;
  ReserveGeometric(&out->offsets, out->offsets.size() + static_cast<size_t>(hi - lo));
  for (int64_t e = 0; e < hi; ++e) {
    uint64_t n = counts->AsUint64(static_cast<size_t>(e)) * unit;
    if (n > (data.size() - pos) / elem) {
      return CorruptionError("counter " + std::to_string(n) + " at entry "
                             + std::to_string(ref.first_entry + e) + " runs past the basket data");
    }
    if (e >= lo) {
      AppendSwapped(l.type, data.data() + pos, n, &out->bytes);
      out->offsets.push_back(out->bytes.size() / elem);
    }
    pos += n * elem;
  }
  return OkStatus();
}

}  // namespace

Status Tree::AppendFromBasket(int32_t leaf,
                              const BasketView& view,
                              const BasketRef& ref,
                              EntryRange want,
                              const Column* counts,
                              Column* out) const {
  const Leaf& l = info_.leaves[static_cast<size_t>(leaf)];
  const Branch& b = info_.branches[static_cast<size_t>(l.branch)];
  if (view.num_entries != ref.num_entries) {
    return CorruptionError("basket holds " + std::to_string(view.num_entries)
                           + " entries, the branch's entry table says "
                           + std::to_string(ref.num_entries));
  }
  int64_t lo = std::max(want.begin, ref.first_entry) - ref.first_entry;
  int64_t hi = std::min(want.end, ref.first_entry + ref.num_entries) - ref.first_entry;
  if (lo >= hi) {
    return OkStatus();
  }
  if (l.type == LeafType::kString) {
    FERRY_TRY(AppendStrings(view, lo, hi, out));
  } else if (!l.jagged()) {
    FERRY_TRY(AppendFixed(l, b, view, lo, hi, out));
  } else if (!view.offsets.empty()) {
    FERRY_TRY(AppendJaggedByOffsets(l, view, ref, lo, hi, out));
  } else {
    FERRY_TRY(AppendJaggedByCounts(l, view, ref, counts, lo, hi, out));
  }
  out->num_entries += hi - lo;
  return OkStatus();
}

Result<Column> Tree::ReadLeaf(int32_t leaf, EntryRange range) const {
  Column col;
  FERRY_TRY(ReadLeafInto(leaf, range, &col));
  return col;
}

Status Tree::ReadLeafInto(int32_t leaf,
                          EntryRange range,
                          Column* out,
                          BasketDecoder* decoder) const {
  FERRY_TRY(CheckReadable(leaf));
  const Leaf& l = info_.leaves[static_cast<size_t>(leaf)];
  const Branch& b = info_.branches[static_cast<size_t>(l.branch)];
  if (range.begin < 0 || range.end > info_.entries || range.begin > range.end) {
    return InvalidArgumentError("entry range [" + std::to_string(range.begin) + ", "
                                + std::to_string(range.end) + ") outside [0, "
                                + std::to_string(info_.entries) + ")");
  }
  StartColumn(leaf, range.begin, out);
  BasketDecoder own;
  if (decoder == nullptr) {
    decoder = &own;
  }
  Column counts;  // reused across baskets
  for (size_t i : BasketsOverlapping(l.branch, range)) {
    const BasketRef& ref = b.baskets[i];
    BasketView view = FERRY_TRY(ReadBasket(l.branch, i, decoder));
    const Column* counts_ptr = nullptr;
    if (l.jagged() && view.offsets.empty()) {
      // The counter's baskets are decoded with a decoder of their own: view points into ours.
      FERRY_TRY_CTX(
          ReadLeafInto(l.count_leaf, {ref.first_entry, ref.first_entry + ref.num_entries}, &counts),
          "counter of " + l.name);
      counts_ptr = &counts;
    }
    FERRY_TRY_CTX(AppendFromBasket(leaf, view, ref, range, counts_ptr, out), BasketContext(b, i));
  }
  if (out->num_entries != range.size()) {
    return CorruptionError("branch " + b.name + ": baskets cover "
                           + std::to_string(out->num_entries) + " of "
                           + std::to_string(range.size()) + " requested entries");
  }
  return OkStatus();
}

Result<Column> Tree::ReadLeaf(std::string_view name, EntryRange range) const {
  int32_t leaf = info_.FindLeaf(name);
  if (leaf < 0) {
    return NotFoundError("tree " + info_.name + " has no leaf or branch '" + std::string(name)
                         + "'");
  }
  return ReadLeaf(leaf, range);
}

}  // namespace ferry::rootio
