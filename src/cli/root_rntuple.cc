#include "cli/root_rntuple.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"
#include "codec/compression.h"

namespace ferry::cli {
namespace {

using rootio::Rntuple;

const char* RoleName(uint16_t role) {
  switch (static_cast<rootio::FieldRole>(role)) {
    case rootio::FieldRole::kLeaf:
      return "leaf";
    case rootio::FieldRole::kCollection:
      return "collection";
    case rootio::FieldRole::kRecord:
      return "record";
    case rootio::FieldRole::kVariant:
      return "variant";
    case rootio::FieldRole::kStreamer:
      return "streamer";
  }
  return "unknown";
}

// The algorithm of a compression setting (100 * algorithm + level); 0 is none.
std::string CodecName(uint32_t setting) {
  uint32_t algorithm = setting / 100;
  if (algorithm > static_cast<uint32_t>(codec::Algorithm::kZstd)) {
    return "unknown";
  }
  return std::string(codec::AlgorithmName(static_cast<codec::Algorithm>(algorithm)));
}

struct ColumnStorage {
  uint64_t pages = 0;
  uint64_t zbytes = 0;  // stored, as the locators say
  uint64_t bytes = 0;   // uncompressed
  std::string codec;    // of the compressed pages (settings); "mixed" when clusters differ

  const std::string& CodecName() const {
    static const std::string kNone = "none";
    return codec.empty() ? kNone : codec;
  }
};

std::vector<ColumnStorage> SurveyColumns(const Rntuple& r) {
  std::vector<ColumnStorage> out(r.columns().size());
  for (const rootio::ClusterInfo& c : r.clusters()) {
    for (size_t id = 0; id < c.columns.size(); ++id) {
      const rootio::ColumnPages& col = c.columns[id];
      if (col.suppressed) {
        continue;
      }
      ColumnStorage& s = out[id];
      for (const rootio::PageInfo& p : col.pages) {
        uint64_t length = rootio::PageLength(p.elements, r.columns()[id].bits);
        ++s.pages;
        s.zbytes += p.locator.size;
        s.bytes += length;
        // Pages that compression did not shrink are stored raw; they do not make a column
        // mixed (as for TTree baskets, rootio/storage.h).
        if (p.locator.size != length) {
          std::string codec = CodecName(col.compression);
          s.codec = s.codec.empty() || s.codec == codec ? codec : "mixed";
        }
      }
    }
  }
  return out;
}

void WriteFieldJson(JsonWriter& w, const Rntuple& r, uint32_t id) {
  const rootio::FieldRecord& f = r.fields()[id];
  w.BeginObject().Field("name", f.name).Field("type", f.type_name);
  w.Field("role", RoleName(f.role));
  if (f.repetitive()) {
    w.Field("array_size", f.array_size);
  }
  if (f.projected()) {
    w.Field("projected_from", r.FieldPath(f.source_field_id));
  }
  w.Key("columns").BeginArray();
  for (size_t rep = 0; rep < r.RepresentationCount(id); ++rep) {
    for (uint32_t c : r.Representation(id, rep)) {
      w.Uint(c);
    }
  }
  w.EndArray().Key("fields").BeginArray();
  for (uint32_t child : r.Children(id)) {
    WriteFieldJson(w, r, child);
  }
  w.EndArray().EndObject();
}

void PrintField(const Rntuple& r, uint32_t id, int depth) {
  const rootio::FieldRecord& f = r.fields()[id];
  std::string name = std::string(static_cast<size_t>(depth) * 2, ' ') + f.name;
  std::printf("    %-40s %-50s %s\n", name.c_str(),
              f.type_name.empty() ? "(untyped)" : f.type_name.c_str(), RoleName(f.role));
  for (uint32_t child : r.Children(id)) {
    PrintField(r, child, depth + 1);
  }
}

// The field a physical column belongs to; projected fields only alias it.
std::string ColumnField(const Rntuple& r, uint32_t column) {
  return r.FieldPath(r.columns()[column].field_id);
}

void WriteRntuple(JsonWriter& w, const Rntuple& r, const std::string& path, bool json) {
  std::vector<ColumnStorage> storage = SurveyColumns(r);
  uint64_t zbytes = 0;
  uint64_t bytes = 0;
  for (const ColumnStorage& s : storage) {
    zbytes += s.zbytes;
    bytes += s.bytes;
  }
  w.BeginObject().Field("path", path).Field("entries", r.entries());
  w.Field("format_version", r.anchor().Version());
  w.Field("clusters", static_cast<uint64_t>(r.clusters().size()));
  w.Field("cluster_groups", static_cast<uint64_t>(r.cluster_groups()));
  w.Field("zbytes", zbytes).Field("bytes", bytes);
  w.Key("fields").BeginArray();
  for (uint32_t id : r.TopLevelFields()) {
    WriteFieldJson(w, r, id);
  }
  w.EndArray().Key("columns").BeginArray();
  for (uint32_t c = 0; c < r.columns().size(); ++c) {
    const rootio::ColumnRecord& col = r.columns()[c];
    const rootio::ColumnTypeInfo* info = rootio::FindColumnType(col.type);
    w.BeginObject().Field("id", static_cast<uint64_t>(c)).Field("field", ColumnField(r, c));
    w.Field("encoding", info != nullptr ? std::string(info->name) : "unknown");
    w.Field("bits", static_cast<uint64_t>(col.bits));
    w.Field("representation", static_cast<uint64_t>(col.representation));
    w.Field("pages", storage[c].pages).Field("zbytes", storage[c].zbytes);
    w.Field("bytes", storage[c].bytes).Field("codec", storage[c].CodecName());
    w.EndObject();
  }
  w.EndArray().EndObject();
  if (json) {
    return;
  }
  std::printf(
      "\n  RNTuple %s (format %s): %llu entries, %zu fields, %zu clusters, %s stored, %s "
      "uncompressed\n",
      path.c_str(), r.anchor().Version().c_str(), static_cast<unsigned long long>(r.entries()),
      r.TopLevelFields().size(), r.clusters().size(),
      HumanBytes(static_cast<double>(zbytes)).c_str(),
      HumanBytes(static_cast<double>(bytes)).c_str());
  for (uint32_t id : r.TopLevelFields()) {
    PrintField(r, id, 0);
  }
  std::printf("    %-6s %-40s %-14s %6s %10s %10s  %s\n", "column", "field", "encoding", "pages",
              "stored", "raw", "codec");
  for (uint32_t c = 0; c < r.columns().size(); ++c) {
    const rootio::ColumnTypeInfo* info = rootio::FindColumnType(r.columns()[c].type);
    std::printf("    %-6u %-40s %-14s %6llu %10s %10s  %s\n", c, ColumnField(r, c).c_str(),
                info != nullptr ? std::string(info->name).c_str() : "unknown",
                static_cast<unsigned long long>(storage[c].pages),
                HumanBytes(static_cast<double>(storage[c].zbytes)).c_str(),
                HumanBytes(static_cast<double>(storage[c].bytes)).c_str(),
                storage[c].CodecName().c_str());
  }
}

// A field's values over the range as one JSON array, read a batch of entries at a time: a
// value tree costs ~100 bytes, so a whole 100-million-entry field would not fit in memory.
Result<std::string> FieldJson(const Rntuple& ntuple, uint32_t id, rootio::EntryRange range) {
  constexpr int64_t kBatchEntries = 65536;
  JsonWriter w;
  w.BeginArray();
  for (int64_t first = range.begin; first < range.end; first += kBatchEntries) {
    int64_t n = std::min(kBatchEntries, range.end - first);
    auto values =
        FERRY_TRY(ntuple.Read(id, static_cast<uint64_t>(first), static_cast<uint64_t>(n)));
    for (const rootio::RntupleValue& v : values) {
      v.WriteJson(w);
    }
  }
  w.EndArray();
  return w.Take();
}

}  // namespace

Status ListRntuples(const rootio::RootFile& file, bool json, JsonWriter& w) {
  auto names = FERRY_TRY(rootio::RntupleNames(file));
  w.Key("rntuples").BeginArray();
  for (const std::string& name : names) {
    auto r = FERRY_TRY(Rntuple::Open(file, name));
    WriteRntuple(w, *r, name, json);
  }
  w.EndArray();
  return OkStatus();
}

Status DumpRntuple(const Rntuple& ntuple,
                   rootio::EntryRange range,
                   const std::vector<std::string>& fields,
                   bool json) {
  std::vector<uint32_t> ids;
  ids.reserve(fields.size());
  for (const std::string& name : fields) {
    ids.push_back(FERRY_TRY(ntuple.FindField(name)));
  }
  bool all = fields.empty();
  if (all) {
    ids = ntuple.TopLevelFields();
  }
  JsonWriter w;
  w.BeginObject().Field("tree", ntuple.name()).Key("entries").BeginArray();
  w.Int(range.begin).Int(range.end).EndArray();
  w.Key("branches").BeginObject();
  for (uint32_t id : ids) {
    auto values = FieldJson(ntuple, id, range);
    if (!values.has_value()) {
      if (all && values.error().code() == ErrorCode::kUnsupported) {
        std::fprintf(stderr, "ferry: skipping field %s: %s\n", ntuple.FieldPath(id).c_str(),
                     values.error().ToString().c_str());
        continue;
      }
      return std::move(values).error();
    }
    w.Key(ntuple.FieldPath(id)).Raw(*values);
    if (!json) {
      std::printf("%s: %s\n", ntuple.FieldPath(id).c_str(), values->c_str());
    }
  }
  w.EndObject().EndObject();
  if (json) {
    std::printf("%s\n", w.str().c_str());
  }
  return OkStatus();
}

}  // namespace ferry::cli
