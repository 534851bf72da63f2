// Rntuple's value reading: a field's columns and subfields turned into RntupleValues, one per
// entry, following the spec's mapping of C++ types to fields and columns.
#include <algorithm>
#include <string>
#include <utility>

#include "rootio/rntuple.h"

namespace ferry::rootio {

namespace {

using Values = std::vector<RntupleValue>;

// How a field's values are built from its columns and subfields.
enum class Shape {
  kScalar,       // one column of numbers
  kString,       // std::string: Index + Char columns
  kCardinality,  // ROOT::RNTupleCardinality<T>: the lengths an Index column counts
  kCollection,   // vector, RVec, set, map...: Index column + one subfield
  kOptional,     // std::optional, std::unique_ptr: a collection of 0 or 1
  kRecord,       // struct, pair, tuple: subfields side by side
  kArray,        // std::array, C arrays: a repetitive field with one subfield
  kBitset,       // std::bitset: a repetitive leaf with one Bit column
  kVariant,      // std::variant: Switch column + one subfield per alternative
  kWrapper,      // std::atomic, enums: a leaf without columns around one subfield
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

enum class Scalar { kBool, kSigned, kUnsigned, kFloat, kDouble, kUnknown };

// ROOT's normalized names of the fundamental types an RNTuple leaf can hold.
Scalar ScalarOf(std::string_view type) {
  if (type == "bool") {
    return Scalar::kBool;
  }
  if (type == "float") {
    return Scalar::kFloat;
  }
  if (type == "double") {
    return Scalar::kDouble;
  }
  if (type == "char" || type == "std::int8_t" || type == "std::int16_t" || type == "std::int32_t"
      || type == "std::int64_t") {
    return Scalar::kSigned;
  }
  if (type == "std::byte" || type == "std::uint8_t" || type == "std::uint16_t"
      || type == "std::uint32_t" || type == "std::uint64_t") {
    return Scalar::kUnsigned;
  }
  return Scalar::kUnknown;
}

RntupleValue MakeScalar(Scalar kind, const ColumnValues& v, size_t i) {
  switch (kind) {
    case Scalar::kBool:
      return RntupleValue::Bool(v.ints[i] != 0);
    case Scalar::kSigned:
      return RntupleValue::Int(v.ints[i]);
    case Scalar::kUnsigned:
      return RntupleValue::UInt(static_cast<uint64_t>(v.ints[i]));
    case Scalar::kFloat:
      return RntupleValue::Float(static_cast<float>(v.reals[i]));
    default:
      return RntupleValue::Real(v.reals[i]);
  }
}

// An entry's slice of a collection's items: [begin, end) in the item field's elements.
struct Span {
  uint64_t begin = 0;
  uint64_t end = 0;
};

}  // namespace

class RntupleFieldReader {
 public:
  explicit RntupleFieldReader(const Rntuple& r) : r_(r) {}

  // Values of a field over a range of its own elements (entries, for a top-level field).
  Result<Values> Read(uint32_t field, uint64_t first, uint64_t count);
  // The part of a value of chain[i] that belongs to the field chain.back(), chain running from
  // a top-level field down to one of its subfields: members of records, per item of
  // collections and arrays.
  Result<RntupleValue> Project(RntupleValue v, const std::vector<uint32_t>& chain, size_t i) const;

 private:
  Result<Shape> ShapeOf(uint32_t field) const;
  Error Fail(uint32_t field, const std::string& why) const {
    return UnsupportedError(r_.What("field '" + r_.FieldPath(field) + "'") + ": " + why);
  }
  Result<Values> Scalars(uint32_t field, uint64_t first, uint64_t count);
  Result<Values> Strings(uint32_t field, uint64_t first, uint64_t count);
  Result<Values> Collections(uint32_t field, uint64_t first, uint64_t count, bool optional);
  Result<Values> Records(uint32_t field, uint64_t first, uint64_t count);
  Result<Values> Arrays(uint32_t field, uint64_t first, uint64_t count);
  Result<Values> Bitsets(uint32_t field, uint64_t first, uint64_t count);
  Result<Values> Variants(uint32_t field, uint64_t first, uint64_t count);
  Result<Values> Cardinalities(uint32_t field, uint64_t first, uint64_t count);
  // Per entry, the slice of items its Index column points at; relative (to the cluster)
  // when absolute is false.
  Result<std::vector<Span>> Spans(uint32_t field, uint64_t first, uint64_t count, bool absolute);
  // Spans(absolute), checked to lie in order inside [front().begin, back().end) and to hold at
  // most max_items each; `what` names the items in the error.
  Result<std::vector<Span>> OrderedSpans(
      uint32_t field, uint64_t first, uint64_t count, uint64_t max_items, const char* what);
  // The element range of a field's first column in each cluster that holds some of it.
  struct Range {
    uint64_t begin = 0;
    uint64_t end = 0;
    size_t cluster = 0;
  };
  std::vector<Range> Ranges(uint32_t field) const;
  Status CheckScalarType(uint32_t field, bool real) const;

  const Rntuple& r_;
};

Result<Shape> RntupleFieldReader::ShapeOf(uint32_t field) const {
  const FieldRecord& f = r_.fields_[field];
  bool has_columns = !r_.representations_[field].empty();
  size_t children = r_.children_[field].size();
  switch (static_cast<FieldRole>(f.role)) {
    case FieldRole::kLeaf:
      if (f.repetitive()) {
        return has_columns ? Shape::kBitset : Shape::kArray;
      }
      if (f.type_name == "std::string") {
        return Shape::kString;
      }
      if (StartsWith(f.type_name, "ROOT::RNTupleCardinality<")) {
        return Shape::kCardinality;
      }
      if (!has_columns && children == 1) {
        return Shape::kWrapper;
      }
      if (has_columns && r_.representations_[field][0].size() == 1) {
        return Shape::kScalar;
      }
      break;
    case FieldRole::kCollection:
      if (children == 1) {
        bool optional = StartsWith(f.type_name, "std::optional<")
                        || StartsWith(f.type_name, "std::unique_ptr<");
        return optional ? Shape::kOptional : Shape::kCollection;
      }
      break;
    case FieldRole::kRecord:
      return f.repetitive() ? Shape::kArray : Shape::kRecord;
    case FieldRole::kVariant:
      return Shape::kVariant;
    case FieldRole::kStreamer:
      return Fail(field, "objects serialized by the ROOT streamer are not decoded");
  }
  return Fail(field, "role " + std::to_string(f.role) + " with type '" + f.type_name
                         + "' has no known column layout");
}

Result<Values> RntupleFieldReader::Read(uint32_t field, uint64_t first, uint64_t count) {
  // Subfields' counts come from the file (offsets, array sizes): bound them before allocating.
  if (count > Rntuple::kMaxValuesPerRead) {
    return Fail(field, std::to_string(count) + " values in one read, more than the "
                           + std::to_string(Rntuple::kMaxValuesPerRead) + " this reader holds");
  }
  switch (FERRY_TRY(ShapeOf(field))) {
    case Shape::kScalar:
      return Scalars(field, first, count);
    case Shape::kString:
      return Strings(field, first, count);
    case Shape::kCardinality:
      return Cardinalities(field, first, count);
    case Shape::kCollection:
      return Collections(field, first, count, /*optional=*/false);
    case Shape::kOptional:
      return Collections(field, first, count, /*optional=*/true);
    case Shape::kRecord:
      return Records(field, first, count);
    case Shape::kArray:
      return Arrays(field, first, count);
    case Shape::kBitset:
      return Bitsets(field, first, count);
    case Shape::kVariant:
      return Variants(field, first, count);
    case Shape::kWrapper:
      return Read(r_.children_[field][0], first, count);
  }
  return Fail(field, "unknown shape");
}

Result<std::vector<RntupleValue>> Rntuple::Read(uint32_t field,
                                                uint64_t first,
                                                uint64_t count) const {
  if (field >= fields_.size()) {
    return InvalidArgumentError(What("has no field id " + std::to_string(field)));
  }
  if (count > kMaxValuesPerRead) {
    return InvalidArgumentError(What("field '" + FieldPath(field) + "'") + ": "
                                + std::to_string(count) + " entries in one read; read at most "
                                + std::to_string(kMaxValuesPerRead) + " at a time");
  }
  if (first > entries_ || count > entries_ - first) {
    return InvalidArgumentError(What("has " + std::to_string(entries_) + " entries; asked for ["
                                     + std::to_string(first) + ", +" + std::to_string(count)
                                     + ")"));
  }
  if (const std::string& why = unreadable_[TopLevelOf(field)]; !why.empty()) {
    return UnsupportedError(What("field '" + FieldPath(field) + "'") + ": " + why);
  }
  RntupleFieldReader reader(*this);
  uint32_t top = TopLevelOf(field);
  if (top == field) {
    return reader.Read(field, first, count);
  }
  // A subfield per entry: its top-level field's values, projected down to it.
  std::vector<uint32_t> chain = {field};
  while (chain.back() != top) {
    chain.push_back(fields_[chain.back()].parent_id);
  }
  std::reverse(chain.begin(), chain.end());
  Values values = FERRY_TRY(reader.Read(top, first, count));
  for (RntupleValue& v : values) {
    v = FERRY_TRY(reader.Project(std::move(v), chain, 0));
  }
  return values;
}

Result<RntupleValue> RntupleFieldReader::Project(RntupleValue v,
                                                 const std::vector<uint32_t>& chain,
                                                 size_t i) const {
  if (i + 1 == chain.size()) {
    return v;
  }
  const std::string& child = r_.fields_[chain[i + 1]].name;
  switch (FERRY_TRY(ShapeOf(chain[i]))) {
    case Shape::kRecord: {
      const RntupleValue* member = v.Member(child);
      if (member == nullptr) {
        return Fail(chain[i], "no member '" + child + "'");
      }
      return Project(*member, chain, i + 1);
    }
    case Shape::kCollection:
    case Shape::kArray:
      for (RntupleValue& item : v.items) {
        item = FERRY_TRY(Project(std::move(item), chain, i + 1));
      }
      return v;
    case Shape::kOptional:  // null, or the value itself
      return v.kind == RntupleValue::Kind::kNull ? v : Project(std::move(v), chain, i + 1);
    case Shape::kWrapper:
      return Project(std::move(v), chain, i + 1);
    default:
      return Fail(chain.back(), "a subfield of a variant is read through its variant");
  }
}

std::vector<RntupleFieldReader::Range> RntupleFieldReader::Ranges(uint32_t field) const {
  std::vector<Range> out;
  for (size_t c = 0; c < r_.clusters_.size(); ++c) {
    if (auto col = r_.PrimaryColumn(field, 0, c)) {
      const ColumnPages& pages = r_.clusters_[c].columns[*col];
      out.push_back({pages.element_offset, pages.element_offset + pages.elements(), c});
    }
  }
  return out;
}

Status RntupleFieldReader::CheckScalarType(uint32_t field, bool real) const {
  for (const auto& rep : r_.representations_[field]) {
    const ColumnTypeInfo* info = FindColumnType(r_.columns_[rep[0]].type);
    bool column_real = info->kind == ElementKind::kReal;
    bool column_int = info->kind == ElementKind::kSigned || info->kind == ElementKind::kUnsigned;
    if (real ? !column_real : !column_int) {
      return Fail(field, "type '" + r_.fields_[field].type_name + "' cannot be read from a "
                             + std::string(info->name) + " column");
    }
  }
  return OkStatus();
}

Result<Values> RntupleFieldReader::Scalars(uint32_t field, uint64_t first, uint64_t count) {
  Scalar kind = ScalarOf(r_.fields_[field].type_name);
  if (kind == Scalar::kUnknown) {
    return Fail(field, "type '" + r_.fields_[field].type_name + "' is not a known scalar");
  }
  FERRY_TRY(CheckScalarType(field, kind == Scalar::kFloat || kind == Scalar::kDouble));
  ColumnValues v;
  FERRY_TRY(r_.ReadElements(field, 0, first, count, &v));
  Values out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    out.push_back(MakeScalar(kind, v, i));
  }
  return out;
}

Result<std::vector<Span>> RntupleFieldReader::Spans(uint32_t field,
                                                    uint64_t first,
                                                    uint64_t count,
                                                    bool absolute) {
  if (r_.representations_[field].empty()) {
    return Fail(field, "a collection without an index column");
  }
  const ColumnTypeInfo* info = FindColumnType(r_.columns_[r_.Representation(field, 0)[0]].type);
  if (info->kind != ElementKind::kIndex) {
    return Fail(field, "its first column is " + std::string(info->name) + ", not an index");
  }
  uint64_t lo = first > 0 ? first - 1 : 0;
  ColumnValues idx;
  FERRY_TRY(r_.ReadElements(field, 0, lo, first + count - lo, &idx));
  std::vector<Range> ranges = Ranges(field);
  std::vector<Span> out(count);
  size_t ri = 0;
  size_t prev_cluster = SIZE_MAX;
  uint64_t base = 0;
  uint64_t prev_end = 0;
  for (uint64_t e = lo; e < first + count; ++e) {
    while (ri < ranges.size() && ranges[ri].end <= e) {
      ++ri;
    }
    bool in_range = ri < ranges.size() && ranges[ri].begin <= e;
    size_t cluster = in_range ? ranges[ri].cluster : SIZE_MAX - 1;
    if (cluster != prev_cluster) {
      base = absolute && in_range ? FERRY_TRY(r_.IndexBase(field, cluster)) : 0;
      prev_end = base;  // the first entry of a cluster starts at the cluster's base
    }
    uint64_t end = static_cast<uint64_t>(idx.ints[e - lo]) + base;
    if (e >= first) {
      out[e - first] = {prev_end, end};
    }
    prev_end = end;
    prev_cluster = cluster;
  }
  return out;
}

Result<std::vector<Span>> RntupleFieldReader::OrderedSpans(
    uint32_t field, uint64_t first, uint64_t count, uint64_t max_items, const char* what) {
  auto spans = FERRY_TRY(Spans(field, first, count, /*absolute=*/true));
  if (spans.empty()) {
    return spans;
  }
  const uint64_t lo = spans.front().begin;
  const uint64_t hi = spans.back().end;
  for (const Span& s : spans) {
    if (s.begin > s.end || s.begin < lo || s.end > hi || s.end - s.begin > max_items) {
      return CorruptionError(r_.What("field '" + r_.FieldPath(field) + "'") + ": " + what
                             + " offsets out of order");
    }
  }
  return spans;
}

Result<Values> RntupleFieldReader::Strings(uint32_t field, uint64_t first, uint64_t count) {
  auto spans = FERRY_TRY(OrderedSpans(field, first, count, UINT64_MAX, "string"));
  Values out;
  if (count == 0) {
    return out;
  }
  const uint64_t lo = spans.front().begin;
  const uint64_t hi = spans.back().end;
  ColumnValues chars;
  FERRY_TRY(r_.ReadElements(field, 1, lo, hi - lo, &chars));
  out.reserve(count);
  for (const Span& s : spans) {
    std::string text;
    text.reserve(s.end - s.begin);
    for (uint64_t k = s.begin; k < s.end; ++k) {
      text.push_back(static_cast<char>(chars.ints[k - lo]));
    }
    out.push_back(RntupleValue::String(std::move(text)));
  }
  return out;
}

Result<Values> RntupleFieldReader::Collections(uint32_t field,
                                               uint64_t first,
                                               uint64_t count,
                                               bool optional) {
  auto spans =
      FERRY_TRY(OrderedSpans(field, first, count, optional ? 1 : UINT64_MAX, "collection"));
  Values out;
  if (count == 0) {
    return out;
  }
  const uint64_t lo = spans.front().begin;
  const uint64_t hi = spans.back().end;
  Values items = FERRY_TRY(Read(r_.children_[field][0], lo, hi - lo));
  out.reserve(count);
  for (const Span& s : spans) {
    if (optional) {
      out.push_back(s.end > s.begin ? std::move(items[s.begin - lo]) : RntupleValue::Null());
      continue;
    }
    Values list;
    list.reserve(s.end - s.begin);
    for (uint64_t k = s.begin; k < s.end; ++k) {
      list.push_back(std::move(items[k - lo]));
    }
    out.push_back(RntupleValue::List(std::move(list)));
  }
  return out;
}

Result<Values> RntupleFieldReader::Cardinalities(uint32_t field, uint64_t first, uint64_t count) {
  if (r_.representations_[field].empty()) {
    return Fail(field, "a cardinality field without a column");
  }
  auto spans = FERRY_TRY(Spans(field, first, count, /*absolute=*/false));
  Values out;
  out.reserve(count);
  for (const Span& s : spans) {
    if (s.end < s.begin) {
      return CorruptionError(r_.What("field '" + r_.FieldPath(field) + "'")
                             + ": collection offsets out of order");
    }
    out.push_back(RntupleValue::UInt(s.end - s.begin));
  }
  return out;
}

Result<Values> RntupleFieldReader::Records(uint32_t field, uint64_t first, uint64_t count) {
  Values out(count);
  for (RntupleValue& v : out) {
    v.kind = RntupleValue::Kind::kRecord;
  }
  for (uint32_t child : r_.children_[field]) {
    Values member = FERRY_TRY(Read(child, first, count));
    for (size_t i = 0; i < count; ++i) {
      out[i].names.push_back(r_.fields_[child].name);
      out[i].items.push_back(std::move(member[i]));
    }
  }
  return out;
}

Result<Values> RntupleFieldReader::Arrays(uint32_t field, uint64_t first, uint64_t count) {
  uint64_t n = r_.fields_[field].array_size;
  if (r_.children_[field].size() != 1 || n == 0 || first + count > UINT64_MAX / n) {
    return Fail(field, "an array of size " + std::to_string(n) + " with "
                           + std::to_string(r_.children_[field].size()) + " item fields");
  }
  Values items = FERRY_TRY(Read(r_.children_[field][0], first * n, count * n));
  Values out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    auto b = std::make_move_iterator(items.begin() + static_cast<ptrdiff_t>(i * n));
    out.push_back(RntupleValue::List(Values(b, b + static_cast<ptrdiff_t>(n))));
  }
  return out;
}

Result<Values> RntupleFieldReader::Bitsets(uint32_t field, uint64_t first, uint64_t count) {
  uint64_t n = r_.fields_[field].array_size;
  if (n == 0 || first + count > UINT64_MAX / n) {
    return Fail(field, "a bitset of size " + std::to_string(n));
  }
  FERRY_TRY(CheckScalarType(field, /*real=*/false));
  ColumnValues bits;
  FERRY_TRY(r_.ReadElements(field, 0, first * n, count * n, &bits));
  Values out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    Values entry;
    entry.reserve(n);
    for (uint64_t k = 0; k < n; ++k) {
      entry.push_back(RntupleValue::Bool(bits.ints[i * n + k] != 0));
    }
    out.push_back(RntupleValue::List(std::move(entry)));
  }
  return out;
}

Result<Values> RntupleFieldReader::Variants(uint32_t field, uint64_t first, uint64_t count) {
  const auto& alternatives = r_.children_[field];
  ColumnValues sw;
  FERRY_TRY(r_.ReadElements(field, 0, first, count, &sw));
  if (sw.tags.size() != count) {
    return Fail(field, "a variant without a Switch column");
  }
  std::vector<Range> ranges = Ranges(field);
  size_t ri = 0;
  Values out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t tag = sw.tags[i];
    if (tag == 0) {
      out.push_back(RntupleValue::Null());  // the variant holds no alternative
      continue;
    }
    if (tag > alternatives.size()) {
      return CorruptionError(r_.What("field '" + r_.FieldPath(field) + "'") + ": variant tag "
                             + std::to_string(tag) + " out of range");
    }
    while (ri < ranges.size() && ranges[ri].end <= first + i) {
      ++ri;
    }
    uint32_t child = alternatives[tag - 1];
    auto base = ri < ranges.size() ? r_.ElementBase(child, ranges[ri].cluster) : 0;
    if (!base) {
      return Fail(field, "alternative '" + r_.fields_[child].name + "' has no column");
    }
    Values v = FERRY_TRY(Read(child, static_cast<uint64_t>(sw.ints[i]) + *base, 1));
    out.push_back(std::move(v[0]));
  }
  return out;
}

}  // namespace ferry::rootio
