#include "store/converter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <numeric>

#include "base/fd.h"
#include "rootio/root_file.h"
#include "store/shard_writer.h"

namespace ferry::store {
namespace {

using rootio::LeafType;

constexpr int64_t kChunkEntries = 32768;
constexpr int64_t kSampleEntries = 4096;

struct OpenInput {
  std::unique_ptr<rootio::RootFile> file;
  std::unique_ptr<rootio::Tree> tree;
};

Result<OpenInput> OpenInputTree(const std::string& path, const std::string& tree) {
  OpenInput in;
  in.file = FERRY_TRY(rootio::RootFile::OpenPath(path));
  in.tree = FERRY_TRY_CTX(in.file->OpenTree(tree), "file " + path);
  return in;
}

// The schema of a tree plus, per column, the leaf it is read from.
struct TreeSchema {
  Schema schema;
  std::vector<int32_t> leaves;
  std::vector<std::string> skipped;
};

Result<TreeSchema> SchemaOf(const rootio::TreeInfo& info) {
  TreeSchema out;
  std::vector<ColumnSpec> cols;
  std::vector<int32_t> column_of_leaf(info.leaves.size(), -1);
  // Fixed columns first so every counter has a column before its jagged leaves need it.
  for (int pass = 0; pass < 2; ++pass) {
    for (const rootio::Branch& b : info.branches) {
      if (pass == 0 && !b.supported) {
        out.skipped.push_back(b.name + ": " + b.unsupported_reason);
        continue;
      }
      if (!b.supported || b.leaves.empty()) {
        continue;
      }
      if (b.leaves.size() != 1) {
        if (pass == 0) {
          out.skipped.push_back(b.name + ": leaf-list branch (not stored in the event store)");
        }
        continue;
      }
      const int32_t li = b.leaves[0];
      const rootio::Leaf& l = info.leaves[static_cast<size_t>(li)];
      if (l.type == LeafType::kString || l.type == LeafType::kUnknown) {
        if (pass == 0) {
          out.skipped.push_back(b.name + ": " + std::string(rootio::LeafTypeName(l.type))
                                + " leaf (not stored in the event store)");
        }
        continue;
      }
      if (l.jagged() != (pass == 1)) {
        continue;
      }
      ColumnSpec c;
      c.name = b.name;
      c.type = l.type;
      c.len = static_cast<uint32_t>(std::max(1, l.len));
      if (l.jagged()) {
        int32_t k = column_of_leaf[static_cast<size_t>(l.count_leaf)];
        const ColumnSpec* kc = k >= 0 ? &cols[static_cast<size_t>(k)] : nullptr;
        if (kc == nullptr || kc->len != 1 || !rootio::IsIntegerLeafType(kc->type)) {
          out.skipped.push_back(b.name + ": its counter is not a stored integer scalar");
          continue;
        }
        c.kind = ColumnKind::kJagged;
        c.counter = k;
      }
      column_of_leaf[static_cast<size_t>(li)] = static_cast<int32_t>(cols.size());
      cols.push_back(std::move(c));
      out.leaves.push_back(li);
    }
  }
  out.schema = FERRY_TRY(Schema::Build(std::move(cols)));
  return out;
}

Status SameSchema(const Schema& a, const Schema& b, const std::string& path) {
  if (a.columns.size() != b.columns.size()) {
    return InvalidArgumentError("file " + path + " has " + std::to_string(b.columns.size())
                                + " storable columns, the first input has "
                                + std::to_string(a.columns.size()));
  }
  for (size_t i = 0; i < a.columns.size(); ++i) {
    const ColumnSpec& x = a.columns[i];
    const ColumnSpec& y = b.columns[i];
    if (x.name != y.name || x.type != y.type || x.kind != y.kind || x.len != y.len
        || x.counter != y.counter) {
      return InvalidArgumentError("file " + path + ": column " + y.name
                                  + " differs from the first input's " + x.name);
    }
  }
  return OkStatus();
}

struct Coord {
  uint64_t run;
  uint64_t lumi;
  uint64_t event;
  uint32_t input;
  uint64_t entry;
};

Result<std::vector<uint64_t>> ReadCoordinate(const rootio::Tree& tree,
                                             const std::string& name,
                                             bool* present) {
  int32_t leaf = tree.info().FindLeaf(name);
  *present = leaf >= 0;
  if (leaf < 0) {
    return std::vector<uint64_t>{};
  }
  const rootio::Leaf& l = tree.info().leaves[static_cast<size_t>(leaf)];
  if (!rootio::IsIntegerLeafType(l.type) || l.jagged() || l.len != 1) {
    return InvalidArgumentError("leaf " + name + " is not an integer scalar ("
                                + std::string(rootio::LeafTypeName(l.type)) + ")");
  }
  rootio::Column col = FERRY_TRY(tree.ReadLeaf(leaf, tree.All()));
  std::vector<uint64_t> out(static_cast<size_t>(col.num_entries));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = col.AsUint64(i);
    if (rootio::IsSignedLeafType(l.type) && static_cast<int64_t>(out[i]) < 0) {
      return InvalidArgumentError(name + " is negative at entry " + std::to_string(i));
    }
  }
  return out;
}

// Mean uncompressed bytes of jagged values per event, from a sample of the first input.
Result<double> JaggedBytesPerEvent(const rootio::Tree& tree, const TreeSchema& ts) {
  const Schema& s = ts.schema;
  if (s.jagged.empty() || tree.entries() == 0) {
    return 0.0;
  }
  rootio::EntryRange sample{0, std::min<int64_t>(tree.entries(), kSampleEntries)};
  double bytes = 0;
  for (size_t g = 0; g < s.groups(); ++g) {
    int32_t k = s.group_counters[g];
    rootio::Column counts = FERRY_TRY(tree.ReadLeaf(ts.leaves[static_cast<size_t>(k)], sample));
    double elements = 0;
    for (int64_t i = 0; i < counts.num_entries; ++i) {
      elements += static_cast<double>(counts.AsUint64(static_cast<size_t>(i)));
    }
    double per_element = 0;
    for (int32_t j : s.jagged) {
      const ColumnSpec& c = s.columns[static_cast<size_t>(j)];
      if (c.group == static_cast<int32_t>(g)) {
        per_element += static_cast<double>(c.len * c.value_size());
      }
    }
    bytes += elements * per_element / static_cast<double>(sample.size());
  }
  return bytes;
}

std::string CoordName(const Coord& c) {
  return std::to_string(c.run) + ":" + std::to_string(c.lumi) + ":" + std::to_string(c.event);
}

}  // namespace

Result<ConvertReport> Convert(const ConvertOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  if (opt.inputs.empty()) {
    return InvalidArgumentError("no input files");
  }
  if (opt.log2_ks > 20 || opt.block_size == 0) {
    return InvalidArgumentError("bad block shape");
  }
  ConvertReport report;
  Manifest& m = report.manifest;
  m.tree = opt.tree;
  m.codec = opt.codec;
  m.block_size = opt.block_size;
  m.log2_ks = opt.log2_ks;

  // Pass 1: schema, coordinates, slots.
  std::vector<Coord> coords;
  TreeSchema first;
  bool any_lumi = false;
  bool any_missing_lumi = false;
  double jagged_bytes = 0;
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    const std::string& path = opt.inputs[i];
    OpenInput in = FERRY_TRY(OpenInputTree(path, opt.tree));
    report.input_bytes += in.file->source().size();
    TreeSchema ts = FERRY_TRY_CTX(SchemaOf(in.tree->info()), "file " + path);
    if (i == 0) {
      first = std::move(ts);
      jagged_bytes = FERRY_TRY_CTX(JaggedBytesPerEvent(*in.tree, first), "file " + path);
    } else {
      FERRY_TRY(SameSchema(first.schema, ts.schema, path));
    }
    bool has_run = false;
    bool has_lumi = false;
    bool has_event = false;
    auto runs = FERRY_TRY_CTX(ReadCoordinate(*in.tree, "run", &has_run), "file " + path);
    auto lumis =
        FERRY_TRY_CTX(ReadCoordinate(*in.tree, "luminosityBlock", &has_lumi), "file " + path);
    auto events = FERRY_TRY_CTX(ReadCoordinate(*in.tree, "event", &has_event), "file " + path);
    if (!has_run || !has_event) {
      return InvalidArgumentError("file " + path + ": tree " + opt.tree + " has no '"
                                  + (has_run ? "event" : "run")
                                  + "' leaf; events cannot be addressed");
    }
    any_lumi |= has_lumi;
    any_missing_lumi |= !has_lumi;
    m.inputs.push_back({path, static_cast<uint64_t>(in.tree->entries())});
    for (size_t e = 0; e < runs.size(); ++e) {
      coords.push_back({runs[e], has_lumi ? lumis[e] : 0, events[e], static_cast<uint32_t>(i), e});
    }
  }
  if (any_lumi && any_missing_lumi) {
    return InvalidArgumentError("some inputs have luminosityBlock and some do not");
  }
  if (coords.empty()) {
    return InvalidArgumentError("the inputs hold no events");
  }
  if (!any_lumi) {
    m.flags |= kManifestFlagNoLumi;
  }
  m.schema = first.schema;

  std::vector<uint32_t> order(coords.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Coord& x = coords[a];
    const Coord& y = coords[b];
    return std::tie(x.run, x.lumi, x.event) < std::tie(y.run, y.lumi, y.event);
  });
  struct SlotOf {
    uint32_t run_slot;
    uint32_t lumi_slot;
    uint64_t event_slot;
  };
  std::vector<std::vector<SlotOf>> slots(opt.inputs.size());
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    slots[i].resize(m.inputs[i].entries);
  }
  std::vector<ShardPlan> plans;
  for (size_t k = 0; k < order.size(); ++k) {
    const Coord& c = coords[order[k]];
    if (k > 0) {
      const Coord& p = coords[order[k - 1]];
      if (p.run == c.run && p.lumi == c.lumi && p.event == c.event) {
        return InvalidArgumentError("duplicate event " + CoordName(c) + ": " + opt.inputs[p.input]
                                    + " entry " + std::to_string(p.entry) + " and "
                                    + opt.inputs[c.input] + " entry " + std::to_string(c.entry));
      }
    }
    if (plans.empty() || plans.back().run != c.run) {
      plans.push_back({.run = c.run, .run_slot = plans.size()});
    }
    ShardPlan& p = plans.back();
    if (p.lumis.empty() || p.lumis.back().lumi != c.lumi) {
      p.lumis.push_back({c.lumi, p.event_numbers.size(), 0});
    }
    LumiEntry& l = p.lumis.back();
    slots[c.input][c.entry] = {static_cast<uint32_t>(p.run_slot),
                               static_cast<uint32_t>(p.lumis.size() - 1), l.count};
    p.event_numbers.push_back(c.event);
    ++l.count;
  }
  m.run_extent = plans.size();
  for (const ShardPlan& p : plans) {
    m.lumi_extent = std::max<uint64_t>(m.lumi_extent, p.lumis.size());
    for (const LumiEntry& l : p.lumis) {
      m.event_extent = std::max<uint64_t>(m.event_extent, l.count);
    }
  }
  m.events = coords.size();
  Layout grid = FERRY_TRY(m.GridLayout());
  m.padding = grid.total_slots() - m.events;
  // Collection block: the largest power of two of events that fits block_size (at least 1).
  uint8_t log2_kc = 0;
  while (log2_kc < m.log2_ks
         && jagged_bytes * static_cast<double>(uint64_t{2} << log2_kc)
                <= static_cast<double>(opt.block_size)) {
    ++log2_kc;
  }
  m.log2_kc = log2_kc;
  coords.clear();
  coords.shrink_to_fit();

  // Output directory: old shards and manifest go first, so a failed run leaves no stale store.
  std::error_code ec;
  std::filesystem::create_directories(opt.out_dir, ec);
  if (ec) {
    return IoError("cannot create " + opt.out_dir + ": " + ec.message(), ec.value());
  }
  for (const auto& entry : std::filesystem::directory_iterator(opt.out_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name == kManifestName || (name.starts_with("run-") && name.ends_with(".shard"))) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
  std::vector<uint8_t> ignored = m.Serialize();  // sets schema_hash for the shard headers
  (void)ignored;

  std::vector<std::unique_ptr<ShardWriter>> writers(plans.size());
  for (size_t r = 0; r < plans.size(); ++r) {
    m.runs.push_back({plans[r].run, plans[r].event_numbers.size(), plans[r].lumis.size(), 0});
    writers[r] = FERRY_TRY(ShardWriter::Create(opt.out_dir + "/" + ShardFileName(plans[r].run), m,
                                               std::move(plans[r])));
  }

  // Pass 2: stream every input in entry order.
  uint64_t done = 0;
  std::vector<rootio::Column> cols(m.schema.columns.size());
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    const std::string& path = opt.inputs[i];
    OpenInput in = FERRY_TRY(OpenInputTree(path, opt.tree));
    for (rootio::EntryRange cluster : in.tree->info().Clusters()) {
      for (int64_t b = cluster.begin; b < cluster.end; b += kChunkEntries) {
        rootio::EntryRange range{b, std::min(cluster.end, b + kChunkEntries)};
        for (size_t c = 0; c < cols.size(); ++c) {
          cols[c] = FERRY_TRY_CTX(in.tree->ReadLeaf(first.leaves[c], range), "file " + path);
        }
        for (int64_t e = 0; e < range.size(); ++e) {
          const SlotOf& s = slots[i][static_cast<size_t>(range.begin + e)];
          FERRY_TRY_CTX(writers[s.run_slot]->Add(cols, e, s.lumi_slot, s.event_slot),
                        "file " + path + " > entry " + std::to_string(range.begin + e));
        }
        done += static_cast<uint64_t>(range.size());
        if (opt.progress) {
          opt.progress(done, m.events);
        }
      }
    }
  }
  for (size_t r = 0; r < writers.size(); ++r) {
    ShardWriteStats st = FERRY_TRY(writers[r]->Finish());
    m.runs[r].shard_bytes = st.bytes;
    report.store_bytes += st.bytes;
    report.raw_payload_bytes += st.raw_bytes;
    report.stored_payload_bytes += st.stored_bytes;
    report.c_blocks += st.c_blocks;
    writers[r].reset();
  }

  std::vector<uint8_t> manifest = m.Serialize();
  const std::string final_path = opt.out_dir + "/" + kManifestName;
  const std::string tmp_path = final_path + ".tmp";
  {
    Fd fd = FERRY_TRY(Fd::Open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    FERRY_TRY_CTX(PwriteFull(fd.get(), manifest.data(), manifest.size(), 0), tmp_path);
    if (::fsync(fd.get()) != 0) {
      return IoError("fsync " + tmp_path, errno);
    }
    FERRY_TRY_CTX(fd.Close(), tmp_path);
  }
  std::filesystem::rename(tmp_path, final_path, ec);
  if (ec) {
    return IoError("rename " + tmp_path + ": " + ec.message(), ec.value());
  }
  report.store_bytes += manifest.size();
  report.skipped = std::move(first.skipped);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace ferry::store
