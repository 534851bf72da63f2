#include "store/converter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <numeric>

#include <sys/file.h>
#include <time.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "base/fd.h"
#include "io/local_source.h"
#include "rootio/root_file.h"
#include "store/dictionary.h"
#include "store/shard_builder.h"
#include "store/shuffle.h"
#include "store/task_pool.h"

namespace ferry::store {
namespace {

using rootio::LeafType;

// Entries decoded at once: a whole cluster (ROOT keeps one basket per branch and cluster, so a
// smaller range would decompress each basket several times), split only past this.
constexpr int64_t kChunkEntries = 65536;
// Jobs in flight over all shards before the router waits for the oldest (bounds memory).
constexpr size_t kMaxPendingJobs = 64;
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

// Mean uncompressed bytes of every column per event, from a sample of the first input.
Result<double> BytesPerEvent(const rootio::Tree& tree, const TreeSchema& ts) {
  const Schema& s = ts.schema;
  double fixed = 0;
  for (int32_t f : s.fixed) {
    const ColumnSpec& c = s.columns[static_cast<size_t>(f)];
    fixed += static_cast<double>(c.len * c.value_size());
  }
  if (s.jagged.empty() || tree.entries() == 0) {
    return fixed;
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
  return fixed + bytes;
}

std::string CoordName(const Coord& c) {
  return std::to_string(c.run) + ":" + std::to_string(c.lumi) + ":" + std::to_string(c.event);
}


double ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Where pass 1 put an input entry: the index of its run's plan, and its slots there.
struct SlotOf {
  uint32_t plan;
  EventSlot slot;
};

// Pass 1's result: the schema, per-run plans (ascending runs) and every entry's slots.
struct Plans {
  TreeSchema first;
  bool no_lumi = false;
  double bytes_per_event = 0;
  std::vector<ShardPlan> plans;
  std::vector<std::vector<SlotOf>> slots;  // per input, per entry
  // Per plan: the first event (input order) for error messages.
  std::vector<std::string> first_event;
  uint64_t input_bytes = 0;
  uint64_t events = 0;
};

Result<Plans> PlanInputs(const ConvertOptions& opt, Manifest& m) {
  Plans out;
  std::vector<Coord> coords;
  bool any_lumi = false;
  bool any_missing_lumi = false;
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    const std::string& path = opt.inputs[i];
    OpenInput in = FERRY_TRY(OpenInputTree(path, opt.tree));
    out.input_bytes += in.file->source().size();
    TreeSchema ts = FERRY_TRY_CTX(SchemaOf(in.tree->info()), "file " + path);
    if (i == 0) {
      out.first = std::move(ts);
      out.bytes_per_event = FERRY_TRY_CTX(BytesPerEvent(*in.tree, out.first), "file " + path);
    } else {
      FERRY_TRY(SameSchema(out.first.schema, ts.schema, path));
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
  out.no_lumi = !any_lumi;
  out.events = coords.size();
  std::vector<uint32_t> order(coords.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Coord& x = coords[a];
    const Coord& y = coords[b];
    return std::tie(x.run, x.lumi, x.event) < std::tie(y.run, y.lumi, y.event);
  });
  out.slots.resize(opt.inputs.size());
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    out.slots[i].resize(m.inputs[m.inputs.size() - opt.inputs.size() + i].entries);
  }
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
    if (out.plans.empty() || out.plans.back().run != c.run) {
      out.plans.push_back({.run = c.run, .run_slot = 0});
      out.first_event.push_back(CoordName(c) + " (" + opt.inputs[c.input] + " entry "
                                + std::to_string(c.entry) + ")");
    }
    ShardPlan& p = out.plans.back();
    if (p.lumis.empty() || p.lumis.back().lumi != c.lumi) {
      p.lumis.push_back({c.lumi, p.event_numbers.size(), 0});
    }
    LumiEntry& l = p.lumis.back();
    out.slots[c.input][c.entry] = {static_cast<uint32_t>(out.plans.size() - 1),
                                   {static_cast<uint32_t>(p.lumis.size() - 1), l.count}};
    p.event_numbers.push_back(c.event);
    ++l.count;
  }
  return out;
}

// Shard files a manifest names, and the largest generation among them.
std::set<std::string> NamedShards(const Manifest* m, uint32_t* max_generation) {
  std::set<std::string> out;
  if (m != nullptr) {
    for (const RunEntry& r : m->runs) {
      out.insert(r.file_name());
      *max_generation = std::max(*max_generation, r.generation);
    }
  }
  return out;
}

// Removes shard files (and a stale manifest draft) that none of the kept names mention: the
// leftovers of a killed write, or shards superseded before the previous write.
void RemoveUnnamed(const std::string& dir, const std::set<std::string>& keep) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    const bool shard = name.starts_with("run-") && name.ends_with(".shard");
    if ((shard && keep.count(name) == 0) || name == std::string(kManifestName) + ".tmp") {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

Status SyncDir(const std::string& dir) {
  Fd d = FERRY_TRY(Fd::Open(dir, O_RDONLY | O_DIRECTORY, 0));
  if (::fsync(d.get()) != 0) {
    return IoError("fsync " + dir, errno);
  }
  return OkStatus();
}

// Written aside, fsynced, renamed over MANIFEST, directory fsynced: readers see the old
// manifest or the new one, never a mix, and a crash leaves one of them.
Status PublishManifest(const std::string& dir, Manifest& m, uint64_t* bytes) {
  std::vector<uint8_t> manifest = m.Serialize();
  const std::string final_path = dir + "/" + kManifestName;
  const std::string tmp_path = final_path + ".tmp";
  {
    Fd fd = FERRY_TRY(Fd::Open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    FERRY_TRY_CTX(PwriteFull(fd.get(), manifest.data(), manifest.size(), 0), tmp_path);
    if (::fsync(fd.get()) != 0) {
      return IoError("fsync " + tmp_path, errno);
    }
    FERRY_TRY_CTX(fd.Close(), tmp_path);
  }
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    return IoError("rename " + tmp_path, errno);
  }
  *bytes = manifest.size();
  return SyncDir(dir);
}

Result<Manifest> ReadManifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  auto src = FERRY_TRY(io::OpenLocal(path));
  std::vector<uint8_t> bytes(src->size());
  FERRY_TRY_CTX(src->ReadAt(0, bytes), path);
  return FERRY_TRY_CTX(Manifest::Parse(bytes), path);
}

// A dictionary for the E blocks, trained on the first input's first blocks, laid out exactly as
// the builder lays them out (group totals, then every column shuffled).
constexpr int64_t kDictionarySampleEvents = 4096;
constexpr size_t kDictionaryBytes = 64 * 1024;

Result<std::vector<uint8_t>> TrainEBlockDictionary(const ConvertOptions& opt,
                                                   const Plans& plans,
                                                   const Schema& schema,
                                                   uint8_t log2_kc) {
  OpenInput in = FERRY_TRY(OpenInputTree(opt.inputs[0], opt.tree));
  const rootio::EntryRange range{0, std::min(in.tree->entries(), kDictionarySampleEvents)};
  std::vector<rootio::Column> cols(schema.columns.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    FERRY_TRY_CTX(in.tree->ReadLeafInto(plans.first.leaves[c], range, &cols[c]),
                  "file " + opt.inputs[0]);
  }
  const int64_t kc = int64_t{1} << log2_kc;
  std::vector<ByteVector> samples;
  for (int64_t b = 0; b + kc <= range.size(); b += kc) {
    ByteVector& out = samples.emplace_back();
    for (size_t g = 0; g < schema.groups(); ++g) {
      const rootio::Column& k = cols[static_cast<size_t>(schema.group_counters[g])];
      uint64_t n = 0;
      for (int64_t i = b; i < b + kc; ++i) {
        n += k.AsUint64(static_cast<size_t>(i));
      }
      const size_t at = out.size();
      out.resize(at + 4);
      StoreLE<uint32_t>(out.data() + at, static_cast<uint32_t>(n));
    }
    for (size_t c = 0; c < cols.size(); ++c) {
      const size_t w = schema.columns[c].value_size();
      auto [lo, x] = cols[c].EntryValues(b);
      auto [y, hi] = cols[c].EntryValues(b + kc - 1);
      (void)x;
      (void)y;
      const size_t at = out.size();
      out.resize(at + (hi - lo) * w);
      ShuffleBytes(cols[c].bytes.data() + lo * w, hi - lo, w, out.data() + at);
    }
  }
  return TrainDictionary(samples, kDictionaryBytes);
}

// Pass 2: every input decoded range by range on the pool and routed to its run's builder.
class Router {
 public:
  Router(const ConvertOptions& opt, const Plans& plans, const Schema& schema, TaskPool* pool)
      : opt_(opt), plans_(plans), schema_(schema), pool_(pool) {}

  Status Run(std::vector<std::unique_ptr<ShardBuilder>>& builders, ConvertReport* report) {
    struct Batch {
      std::vector<rootio::Column> cols;
      size_t input = 0;
      rootio::EntryRange range{};
    };
    Batch cur;
    Batch prev;
    cur.cols.resize(schema_.columns.size());
    prev.cols.resize(schema_.columns.size());
    const size_t tasks = std::max<size_t>(1, pool_->threads()) * 4;
    std::vector<rootio::BasketDecoder> decoders(tasks);
    std::vector<Status> task_status(tasks);
    std::atomic<uint64_t> cpu_ns{0};
    bool have_prev = false;
    uint64_t done = 0;
    std::unique_ptr<OpenInput> open;
    std::unique_ptr<OpenInput> prev_open;
    for (size_t i = 0; i < opt_.inputs.size(); ++i) {
      prev_open = std::move(open);
      open = std::make_unique<OpenInput>(FERRY_TRY(OpenInputTree(opt_.inputs[i], opt_.tree)));
      for (rootio::EntryRange cluster : open->tree->info().Clusters()) {
        for (int64_t b = cluster.begin; b < cluster.end; b += kChunkEntries) {
          cur.input = i;
          cur.range = {b, std::min(cluster.end, b + kChunkEntries)};
          // Decode: the columns dealt round-robin over a few tasks per thread, so a thread
          // that finishes early takes the next task.
          std::vector<TaskPool::Ticket> tickets;
          const rootio::Tree* tree = open->tree.get();
          for (size_t t = 0; t < tasks; ++t) {
            tickets.push_back(pool_->Submit([&, t, tree] {
              const double c0 = ThreadCpu();
              task_status[t] = OkStatus();
              for (size_t c = t; c < cur.cols.size(); c += tasks) {
                Status st = tree->ReadLeafInto(plans_.first.leaves[c], cur.range, &cur.cols[c],
                                               &decoders[t]);
                if (!st.has_value()) {
                  task_status[t] = std::move(st);
                  break;
                }
              }
              cpu_ns += static_cast<uint64_t>(1e9 * (ThreadCpu() - c0));
            }));
          }
          // Meanwhile the previous range goes to the builders (and their jobs to the pool).
          if (have_prev) {
            FERRY_TRY(Route(prev, builders));
            done += static_cast<uint64_t>(prev.range.size());
            if (opt_.progress) {
              opt_.progress(done, plans_.events);
            }
          }
          for (auto& t : tickets) {
            t.Wait();
          }
          for (Status& st : task_status) {
            FERRY_TRY_CTX(std::move(st), "file " + opt_.inputs[i]);
          }
          for (const rootio::Column& c : cur.cols) {
            report->raw_input_bytes += c.bytes.size();
          }
          std::swap(cur, prev);
          have_prev = true;
        }
      }
    }
    if (have_prev) {
      FERRY_TRY(Route(prev, builders));
      done += static_cast<uint64_t>(prev.range.size());
      if (opt_.progress) {
        opt_.progress(done, plans_.events);
      }
    }
    report->decode_cpu_seconds = 1e-9 * static_cast<double>(cpu_ns.load());
    return OkStatus();
  }

 private:
  template <class B>
  Status Route(const B& batch, std::vector<std::unique_ptr<ShardBuilder>>& builders) {
    const std::vector<SlotOf>& slots = plans_.slots[batch.input];
    const auto n = static_cast<size_t>(batch.range.size());
    // Consecutive rows of one run go to its builder as one range.
    for (size_t k = 0; k < n;) {
      const uint32_t plan = slots[static_cast<size_t>(batch.range.begin) + k].plan;
      size_t e = k + 1;
      while (e < n && slots[static_cast<size_t>(batch.range.begin) + e].plan == plan) {
        ++e;
      }
      slot_buf_.clear();
      for (size_t r = k; r < e; ++r) {
        slot_buf_.push_back(slots[static_cast<size_t>(batch.range.begin) + r].slot);
      }
      FERRY_TRY_CTX(builders[plan]->Add(batch.cols, static_cast<int64_t>(k), e - k, slot_buf_),
                    "file " + opt_.inputs[batch.input] + " > entries "
                        + std::to_string(batch.range.begin + static_cast<int64_t>(k)) + " to "
                        + std::to_string(batch.range.begin + static_cast<int64_t>(e) - 1));
      k = e;
    }
    size_t pending = 0;
    for (auto& b : builders) {
      FERRY_TRY(b->Drain(false));
      pending += b->pending();
    }
    if (pending > kMaxPendingJobs) {
      for (auto& b : builders) {
        FERRY_TRY(b->Drain(true));
      }
    }
    return OkStatus();
  }

  const ConvertOptions& opt_;
  const Plans& plans_;
  const Schema& schema_;
  TaskPool* pool_;
  std::vector<EventSlot> slot_buf_;
};

// One writer at a time per store directory (an advisory lock on DIR/.lock).
Result<Fd> LockStore(const std::string& dir) {
  Fd fd = FERRY_TRY(Fd::Open(dir + "/.lock", O_RDWR | O_CREAT, 0644));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return Error(ErrorCode::kIo, "another convert or append is writing " + dir, errno);
  }
  return fd;
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
  std::error_code ec;
  std::filesystem::create_directories(opt.out_dir, ec);
  if (ec) {
    return IoError("cannot create " + opt.out_dir + ": " + ec.message(), ec.value());
  }
  Fd lock = FERRY_TRY(LockStore(opt.out_dir));
  // The store as it is now (if any): append extends it; convert replaces it.
  std::optional<Manifest> old;
  if (std::filesystem::exists(opt.out_dir + "/" + kManifestName)) {
    auto parsed = ReadManifest(opt.out_dir);
    if (parsed.has_value()) {
      old = std::move(*parsed);
    } else if (opt.append) {
      return std::move(parsed).error().AddContext("append to " + opt.out_dir);
    }
  }
  if (opt.append && !old.has_value()) {
    return NotFoundError("append: " + opt.out_dir + " is not an event store (no MANIFEST)");
  }
  if (opt.append && old->version < 3) {
    return UnsupportedError("append: " + opt.out_dir + " is a version-" + std::to_string(old->version)
                            + " store; convert its inputs again to make a version-3 store");
  }
  uint32_t generation = 0;
  const std::set<std::string> old_names = NamedShards(old ? &*old : nullptr, &generation);
  ++generation;
  // Leftovers of killed writes go first (the current store's shards are kept).
  RemoveUnnamed(opt.out_dir, old_names);

  ConvertReport report;
  Manifest& m = report.manifest;
  m.version = kFormatVersion;
  m.tree = opt.tree;
  m.codec = opt.codec;
  m.block_size = opt.block_size;
  m.log2_ks = opt.log2_ks;
  m.flags = opt.j_chunks ? kManifestFlagJChunks : 0;
  if (opt.append) {
    // The store's own settings win: every shard of a store has one block shape and codec.
    m.tree = old->tree;
    m.codec = old->codec;
    m.block_size = old->block_size;
    m.log2_ks = old->log2_ks;
    m.log2_kc = old->log2_kc;
    m.flags = old->flags;
    m.inputs = old->inputs;
    m.dictionary = old->dictionary;
  }
  ConvertOptions in_opt = opt;
  in_opt.tree = m.tree;
  // FERRY_STORE_TRACE=1: the phases' wall times on stderr (for tuning on a shared machine).
  const bool trace = std::getenv("FERRY_STORE_TRACE") != nullptr;
  auto phase = [&](const char* what) {
    if (trace) {
      std::fprintf(stderr, "convert: %-12s at %7.2f s\n", what,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  };
  Plans plans = FERRY_TRY(PlanInputs(in_opt, m));
  phase("planned");
  report.input_bytes = plans.input_bytes;
  m.schema = plans.first.schema;
  if (plans.no_lumi) {
    m.flags |= kManifestFlagNoLumi;
  }
  if (opt.append) {
    FERRY_TRY_CTX(SameSchema(old->schema, m.schema, opt.inputs[0]), "append to " + opt.out_dir);
    if ((old->flags & kManifestFlagNoLumi) != (m.flags & kManifestFlagNoLumi)) {
      return InvalidArgumentError("append: the store and the inputs disagree on luminosityBlock");
    }
  } else {
    // E block: the largest power of two of events whose columns fit block_size (at least 1).
    uint8_t log2_kc = 0;
    while (log2_kc < m.log2_ks
           && plans.bytes_per_event * static_cast<double>(uint64_t{2} << log2_kc)
                  <= static_cast<double>(opt.block_size)) {
      ++log2_kc;
    }
    m.log2_kc = log2_kc;
    if (m.codec.algorithm == codec::Algorithm::kZstd) {
      m.dictionary = FERRY_TRY(TrainEBlockDictionary(in_opt, plans, m.schema, log2_kc));
      phase("dictionary");
    }
  }
  std::shared_ptr<const Dictionary> dict;
  if (!m.dictionary.empty()) {
    dict = FERRY_TRY(Dictionary::Make(m.dictionary, m.codec.level));
  }
  // Runs: the old ones (append) that the inputs do not touch, then the new shards.
  std::map<uint64_t, RunEntry> runs;
  if (opt.append) {
    for (const RunEntry& r : old->runs) {
      runs[r.run] = r;
    }
  }
  for (size_t p = 0; p < plans.plans.size(); ++p) {
    const uint64_t run = plans.plans[p].run;
    if (runs.count(run) != 0) {
      if (!opt.replace_runs) {
        return InvalidArgumentError("run " + std::to_string(run) + " is already in the store "
                                    + opt.out_dir + ": event " + plans.first_event[p]
                                    + "; use --replace-run to rebuild that run");
      }
      report.replaced_runs.push_back(run);
    } else {
      report.new_runs.push_back(run);
    }
    RunEntry e{.run = run,
               .events = plans.plans[p].event_numbers.size(),
               .lumis = plans.plans[p].lumis.size(),
               .lumi_extent = plans.plans[p].lumis.size(),
               .generation = generation};
    for (const LumiEntry& l : plans.plans[p].lumis) {
      e.event_extent = std::max<uint64_t>(e.event_extent, l.count);
    }
    runs[run] = e;
  }
  m.runs.clear();
  m.events = 0;
  m.padding = 0;
  m.lumi_extent = 0;
  m.event_extent = 0;
  for (auto& [run, e] : runs) {
    m.runs.push_back(e);
    m.events += e.events;
    m.padding += e.lumi_extent * e.event_extent - e.events;
    m.lumi_extent = std::max(m.lumi_extent, e.lumi_extent);
    m.event_extent = std::max(m.event_extent, e.event_extent);
  }
  m.run_extent = m.runs.size();
  FERRY_TRY(m.GridLayout());
  (void)m.Serialize();  // sets schema_hash for the shard headers

  const size_t threads = opt.threads != 0
                             ? opt.threads
                             : std::max<size_t>(1, std::thread::hardware_concurrency());
  report.threads = threads;
  std::vector<std::unique_ptr<ShardBuilder>> builders(plans.plans.size());
  {
    TaskPool pool(threads);
    for (size_t p = 0; p < plans.plans.size(); ++p) {
      plans.plans[p].run_slot = static_cast<uint64_t>(m.RunSlot(plans.plans[p].run));
      builders[p] = FERRY_TRY(ShardBuilder::Create(
          opt.out_dir + "/" + ShardFileName(plans.plans[p].run, generation), m,
          std::move(plans.plans[p]), &pool, dict.get()));
    }
    Router router(in_opt, plans, m.schema, &pool);
    FERRY_TRY(router.Run(builders, &report));
    phase("routed");
    for (size_t p = 0; p < builders.size(); ++p) {
      ShardBuildStats st = FERRY_TRY(builders[p]->Finish());
      builders[p].reset();
      m.runs[static_cast<size_t>(m.RunSlot(plans.plans[p].run))].shard_bytes = st.bytes;
      report.store_bytes += st.bytes;
      report.raw_payload_bytes += st.raw_bytes;
      report.stored_payload_bytes += st.stored_bytes;
      report.c_blocks += st.e_blocks;
      report.verified_bytes += st.verified_bytes;
    }
  }
  report.events_written = plans.events;
  // Untouched shards of an append count too.
  for (const RunEntry& r : m.runs) {
    if (r.generation != generation) {
      report.store_bytes += r.shard_bytes;
    }
  }
  uint64_t manifest_bytes = 0;
  phase("finished");
  FERRY_TRY(PublishManifest(opt.out_dir, m, &manifest_bytes));
  phase("published");
  report.store_bytes += manifest_bytes;
  // A convert replaced the whole store: the old shards go now. An append keeps the shards it
  // superseded until the next write, for readers that opened the previous manifest.
  std::set<std::string> keep;
  for (const RunEntry& r : m.runs) {
    keep.insert(r.file_name());
  }
  if (opt.append) {
    keep.insert(old_names.begin(), old_names.end());
  }
  RemoveUnnamed(opt.out_dir, keep);
  report.skipped = std::move(plans.first.skipped);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace ferry::store
