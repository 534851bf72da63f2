#include "rootio/rntuple.h"

#include <algorithm>
#include <string>

#include "rootio/rntuple_envelope.h"

namespace ferry::rootio {
namespace {

// Deeper schemas exist only in crafted files; the field readers recurse once per level.
constexpr int kMaxFieldDepth = 64;

template <class T>
void Append(std::vector<T>* to, const std::vector<T>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

}  // namespace

std::string Rntuple::What(std::string_view part) const {
  return "RNTuple '" + name_ + "' " + std::string(part);
}

Result<std::unique_ptr<Rntuple>> Rntuple::Open(const RootFile& file, std::string_view name) {
  auto found = FERRY_TRY(FindRntuples(file));
  auto it = std::find_if(found.begin(), found.end(),
                         [&](const RntupleEntry& e) { return e.path == name; });
  if (it == found.end()) {
    return NotFoundError("no RNTuple named '" + std::string(name) + "' in " + file.name());
  }
  std::unique_ptr<Rntuple> r(new Rntuple());
  r->source_ = &file.source();
  r->name_ = std::string(name);
  r->anchor_ = FERRY_TRY(ReadAnchor(file, it->key));
  FERRY_TRY(r->LoadEnvelopes());
  FERRY_TRY(r->BuildSchema());
  FERRY_TRY(r->LoadPageLists());
  return r;
}

Status Rntuple::LoadEnvelopes() {
  EnvelopeLink header_link{anchor_.len_header, {anchor_.seek_header, anchor_.nbytes_header}};
  EnvelopeLink footer_link{anchor_.len_footer, {anchor_.seek_footer, anchor_.nbytes_footer}};
  std::string header_what = What("header envelope");
  std::string footer_what = What("footer envelope");
  Envelope h = FERRY_TRY(ReadEnvelope(*source_, header_link, EnvelopeType::kHeader,
                                      anchor_.max_key_size, header_what));
  Envelope f = FERRY_TRY(ReadEnvelope(*source_, footer_link, EnvelopeType::kFooter,
                                      anchor_.max_key_size, footer_what));
  header_ = FERRY_TRY(ParseHeader(h.payload(), header_what));
  footer_ = FERRY_TRY(ParseFooter(f.payload(), footer_what));
  header_checksum_ = h.checksum;
  if (footer_.header_checksum != header_checksum_) {
    return CorruptionError(footer_what + ": header checksum does not match the header");
  }
  return OkStatus();
}

Status Rntuple::LoadPageLists() {
  for (size_t g = 0; g < footer_.groups.size(); ++g) {
    const ClusterGroup& group = footer_.groups[g];
    std::string what = What("page list envelope " + std::to_string(g));
    Envelope env = FERRY_TRY(ReadEnvelope(*source_, group.page_list, EnvelopeType::kPageList,
                                          anchor_.max_key_size, what));
    PageList list = FERRY_TRY(ParsePageList(env.payload(), columns_.size(), what));
    if (list.header_checksum != header_checksum_) {
      return CorruptionError(what + ": header checksum does not match the header");
    }
    if (list.clusters.size() != group.clusters) {
      return CorruptionError(what + ": " + std::to_string(list.clusters.size())
                             + " clusters, the footer announces " + std::to_string(group.clusters));
    }
    for (ClusterInfo& c : list.clusters) {
      clusters_.push_back(std::move(c));
    }
    entries_ = std::max(entries_, group.min_entry + group.entry_span);
  }
  groups_ = footer_.groups.size();
  std::stable_sort(
      clusters_.begin(), clusters_.end(),
      [](const ClusterInfo& a, const ClusterInfo& b) { return a.first_entry < b.first_entry; });
  return OkStatus();
}

Status Rntuple::BuildSchema() {
  fields_ = header_.schema.fields;
  Append(&fields_, footer_.extension.fields);
  columns_ = header_.schema.columns;
  Append(&columns_, footer_.extension.columns);
  aliases_ = header_.schema.aliases;
  Append(&aliases_, footer_.extension.aliases);
  children_.assign(fields_.size(), {});
  for (uint32_t id = 0; id < fields_.size(); ++id) {
    FERRY_TRY(CheckField(id));
    if (fields_[id].parent_id != id) {
      children_[fields_[id].parent_id].push_back(id);
    }
  }
  std::vector<std::vector<uint32_t>> by_field(fields_.size());
  for (uint32_t c = 0; c < columns_.size(); ++c) {
    const ColumnRecord& col = columns_[c];
    if (col.field_id >= fields_.size()) {
      return CorruptionError(What("column " + std::to_string(c)) + ": field id "
                             + std::to_string(col.field_id) + " out of range");
    }
    by_field[col.field_id].push_back(c);
  }
  for (const AliasColumn& a : aliases_) {
    if (a.physical_id >= columns_.size() || a.field_id >= fields_.size()
        || !fields_[a.field_id].projected()) {
      return CorruptionError(What("alias column") + ": bad physical column or field id");
    }
    by_field[a.field_id].push_back(a.physical_id);
  }
  representations_.assign(fields_.size(), {});
  unreadable_.assign(fields_.size(), {});
  for (uint32_t f = 0; f < fields_.size(); ++f) {
    FERRY_TRY(GroupColumns(f, by_field[f]));
  }
  return OkStatus();
}

Status Rntuple::CheckField(uint32_t id) const {
  const FieldRecord& f = fields_[id];
  // Parents precede their subfields, which rules out cycles.
  if (f.parent_id > id) {
    return CorruptionError(What("field " + std::to_string(id)) + ": parent id "
                           + std::to_string(f.parent_id) + " does not precede it");
  }
  if (f.projected() && (f.source_field_id >= fields_.size() || f.source_field_id == id)) {
    return CorruptionError(What("field '" + f.name + "'") + ": bad projection source");
  }
  int depth = 0;
  for (uint32_t p = id; fields_[p].parent_id != p; p = fields_[p].parent_id) {
    if (++depth > kMaxFieldDepth) {
      return UnsupportedError(What("field '" + f.name + "'") + ": nested deeper than "
                              + std::to_string(kMaxFieldDepth) + " levels");
    }
  }
  return OkStatus();
}

Status Rntuple::GroupColumns(uint32_t field, const std::vector<uint32_t>& ids) {
  auto& reps = representations_[field];
  for (uint32_t c : ids) {
    auto checked = CheckColumnRecord(columns_[c], What("column " + std::to_string(c)));
    if (!checked.has_value()) {
      if (checked.error().code() != ErrorCode::kUnsupported) {
        return std::move(checked).error();
      }
      // A column type from a newer format version: the spec asks readers to ignore the whole
      // top-level field (and so to keep reading the others).
      uint32_t top = TopLevelOf(field);
      if (unreadable_[top].empty()) {
        unreadable_[top] = "column " + std::to_string(c) + " has type "
                           + std::to_string(columns_[c].type)
                           + ", unknown to format 1.0 (a newer writer's)";
      }
    }
    size_t r = columns_[c].representation;
    if (r > ids.size()) {
      return CorruptionError(What("field '" + fields_[field].name + "'") + ": representation index "
                             + std::to_string(r) + " out of range");
    }
    if (reps.size() <= r) {
      reps.resize(r + 1);
    }
    reps[r].push_back(c);
  }
  for (const auto& rep : reps) {
    if (rep.size() != reps[0].size()) {
      return CorruptionError(What("field '" + fields_[field].name + "'")
                             + ": column representations differ in their number of columns");
    }
  }
  return OkStatus();
}

uint32_t Rntuple::TopLevelOf(uint32_t field) const {
  while (fields_[field].parent_id != field) {
    field = fields_[field].parent_id;
  }
  return field;
}

std::vector<uint32_t> Rntuple::TopLevelFields() const {
  std::vector<uint32_t> out;
  for (uint32_t id = 0; id < fields_.size(); ++id) {
    if (fields_[id].parent_id == id) {
      out.push_back(id);
    }
  }
  return out;
}

std::string Rntuple::FieldPath(uint32_t field) const {
  // Walk up to the top-level field, then join the names from the top down.
  std::vector<uint32_t> chain = {field};
  for (uint32_t p = field; fields_[p].parent_id != p;) {
    p = fields_[p].parent_id;
    chain.push_back(p);
  }
  std::string path;
  std::reverse(chain.begin(), chain.end());
  for (uint32_t id : chain) {
    path += (path.empty() ? "" : ".") + fields_[id].name;
  }
  return path;
}

bool Rntuple::PathIs(uint32_t field, std::string_view path) const {
  // Compared from the field up, name by name, with no string built: FindField runs this for
  // every field, and real files have thousands (ATLAS PHYSLITE 2,401).
  for (uint32_t id = field;;) {
    const std::string& name = fields_[id].name;
    if (!path.ends_with(name)) {
      return false;
    }
    path.remove_suffix(name.size());
    const uint32_t parent = fields_[id].parent_id;
    if (parent == id) {
      return path.empty();
    }
    if (!path.ends_with('.')) {
      return false;
    }
    path.remove_suffix(1);
    id = parent;
  }
}

Result<uint32_t> Rntuple::FindField(std::string_view path) const {
  for (uint32_t id = 0; id < fields_.size(); ++id) {
    if (PathIs(id, path)) {
      return id;
    }
  }
  return NotFoundError(What("has no field '" + std::string(path) + "'"));
}

Result<std::vector<std::string>> RntupleNames(const RootFile& file) {
  auto found = FERRY_TRY(FindRntuples(file));
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& e : found) {
    out.push_back(std::move(e.path));
  }
  return out;
}

}  // namespace ferry::rootio
