#include "store/converter.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "base/endian.h"
#include "base/fd.h"
#include "io/local_source.h"
#include "store/convert_internal.h"
#include "store/dictionary.h"
#include "store/shard_builder.h"
#include "store/shuffle.h"
#include "store/store_dir.h"
#include "store/task_pool.h"

namespace ferry::store {
namespace {

using convert_internal::LeafScratch;
using convert_internal::OpenInput;
using convert_internal::OpenInputData;
using convert_internal::PlanInputs;
using convert_internal::Plans;
using convert_internal::SameSchema;
using convert_internal::SlotOf;

// Entries decoded at once: a whole cluster (ROOT keeps one basket per branch and cluster, so a
// smaller range would decompress each basket several times), split only past this.
constexpr int64_t kChunkEntries = 65536;
// Jobs in flight over all shards before the router waits for the oldest (bounds memory).
constexpr size_t kMaxPendingJobs = 64;

double ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// A dictionary for the E blocks, trained on the first input's first blocks, laid out exactly as
// the builder lays them out (group totals, then every column shuffled). 112 KiB from 8,192
// events keeps a zstd-2 store under its source's size (64 KiB from 4,096: 1.002x at 2M events).
constexpr int64_t kDictionarySampleEvents = 8192;
constexpr size_t kDictionaryBytes = size_t{112} * 1024;

Result<std::vector<uint8_t>> TrainEBlockDictionary(const ConvertOptions& opt,
                                                   const Plans& plans,
                                                   const Schema& schema,
                                                   uint8_t log2_kc) {
  std::unique_ptr<OpenInput> in = FERRY_TRY(OpenInputData(opt.inputs[0], opt.tree));
  const rootio::EntryRange range{0, std::min(in->entries(), kDictionarySampleEvents)};
  std::vector<rootio::Column> cols(schema.columns.size());
  LeafScratch scratch;
  for (size_t c = 0; c < cols.size(); ++c) {
    FERRY_TRY_CTX(in->ReadInto(plans.leaves[0][c], range, &cols[c], &scratch),
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
    std::vector<LeafScratch> decoders(tasks);
    std::vector<Status> task_status(tasks);
    std::atomic<uint64_t> cpu_ns{0};
    bool have_prev = false;
    uint64_t done = 0;
    std::unique_ptr<OpenInput> open;
    std::unique_ptr<OpenInput> prev_open;
    for (size_t i = 0; i < opt_.inputs.size(); ++i) {
      prev_open = std::move(open);
      open = FERRY_TRY(OpenInputData(opt_.inputs[i], opt_.tree));
      for (rootio::EntryRange cluster : open->Clusters()) {
        for (int64_t b = cluster.begin; b < cluster.end; b += kChunkEntries) {
          cur.input = i;
          cur.range = {b, std::min(cluster.end, b + kChunkEntries)};
          // Decode: the columns dealt round-robin over a few tasks per thread, so a thread
          // that finishes early takes the next task.
          std::vector<TaskPool::Ticket> tickets;
          const OpenInput* input = open.get();
          for (size_t t = 0; t < tasks; ++t) {
            tickets.push_back(pool_->Submit([&, t, input] {
              const double c0 = ThreadCpu();
              task_status[t] = OkStatus();
              for (size_t c = t; c < cur.cols.size(); c += tasks) {
                Status st =
                    input->ReadInto(plans_.leaves[i][c], cur.range, &cur.cols[c], &decoders[t]);
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

// FERRY_STORE_TRACE=1: the phases' wall times on stderr (for tuning on a shared machine).
class PhaseTrace {
 public:
  PhaseTrace() : on_(std::getenv("FERRY_STORE_TRACE") != nullptr) {}
  void Mark(const char* what) const {
    if (on_) {
      std::fprintf(stderr, "convert: %-12s at %7.2f s\n", what, seconds());
    }
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  bool on_;
};

// The store as it is now, if any: append extends it (and needs one of version 3); convert
// replaces it (an unreadable one too).
Result<std::optional<Manifest>> ReadExisting(const ConvertOptions& opt) {
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
    return UnsupportedError("append: " + opt.out_dir + " is a version-"
                            + std::to_string(old->version)
                            + " store; convert its inputs again to make a version-3 store");
  }
  return old;
}

// The new manifest's settings: the options', or on append the store's own (every shard of a
// store has one block shape and codec).
void SetSettings(const ConvertOptions& opt, const Manifest* old, Manifest* m) {
  m->version = kFormatVersion;
  m->tree = opt.tree;
  m->codec = opt.codec;
  m->block_size = opt.block_size;
  m->log2_ks = opt.log2_ks;
  m->flags = opt.j_chunks ? kManifestFlagJChunks : 0;
  if (old != nullptr) {
    m->tree = old->tree;
    m->codec = old->codec;
    m->block_size = old->block_size;
    m->log2_ks = old->log2_ks;
    m->log2_kc = old->log2_kc;
    m->flags = old->flags;
    m->inputs = old->inputs;
    m->dictionary = old->dictionary;
    m->next_copy_id = old->next_copy_id;
  }
}

// Schema and block shape from pass 1: an append checks that the inputs match the store; a
// convert sizes its E blocks and (zstd) trains their dictionary.
Status SetSchemaAndShape(const ConvertOptions& opt,
                         const ConvertOptions& in_opt,
                         const Manifest* old,
                         const Plans& plans,
                         const PhaseTrace& trace,
                         Manifest* m) {
  m->schema = plans.first.schema;
  if (plans.no_lumi) {
    m->flags |= kManifestFlagNoLumi;
  }
  if (old != nullptr) {
    FERRY_TRY_CTX(SameSchema(old->schema, m->schema, opt.inputs[0]), "append to " + opt.out_dir);
    if ((old->flags & kManifestFlagNoLumi) != (m->flags & kManifestFlagNoLumi)) {
      return InvalidArgumentError("append: the store and the inputs disagree on luminosityBlock");
    }
    return OkStatus();
  }
  // E block: the largest power of two of events whose columns fit block_size (at least 1).
  uint8_t log2_kc = 0;
  while (log2_kc < m->log2_ks
         && plans.bytes_per_event * static_cast<double>(uint64_t{2} << log2_kc)
                <= static_cast<double>(opt.block_size)) {
    ++log2_kc;
  }
  m->log2_kc = log2_kc;
  if (m->codec.algorithm == codec::Algorithm::kZstd) {
    m->dictionary = FERRY_TRY(TrainEBlockDictionary(in_opt, plans, m->schema, log2_kc));
    trace.Mark("dictionary");
  }
  return OkStatus();
}

// The manifest's runs: the old ones (append) that the inputs do not touch, then the new
// shards of this generation; the grid extents follow from them.
Status PlaceRuns(const ConvertOptions& opt,
                 const Manifest* old,
                 const Plans& plans,
                 uint32_t generation,
                 ConvertReport* report) {
  std::map<uint64_t, RunEntry> runs;
  if (old != nullptr) {
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
      report->replaced_runs.push_back(run);
    } else {
      report->new_runs.push_back(run);
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
  Manifest& m = report->manifest;
  m.runs.clear();
  m.events = 0;
  m.padding = 0;
  m.lumi_extent = 0;
  m.event_extent = 0;
  // Column copies of untouched shards stay; a rebuilt run's copies went with its old shard
  // (the next scan with copies, or `copies --add`, makes new ones).
  m.copies.clear();
  if (old != nullptr) {
    for (const CopyEntry& c : old->copies) {
      if (runs.at(c.run).generation == c.generation) {
        m.copies.push_back(c);
      }
    }
  }
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
  return OkStatus();
}

// Pass 2: one ShardBuilder per planned run on one task pool, the inputs routed to them, every
// shard finished (written, fsynced, read back); sizes go to the manifest and the report.
Status BuildShards(const ConvertOptions& opt,
                   const ConvertOptions& in_opt,
                   Plans& plans,
                   const Dictionary* dict,
                   uint32_t generation,
                   const PhaseTrace& trace,
                   ConvertReport* report) {
  Manifest& m = report->manifest;
  const size_t threads =
      opt.threads != 0 ? opt.threads : std::max<size_t>(1, std::thread::hardware_concurrency());
  report->threads = threads;
  std::vector<std::unique_ptr<ShardBuilder>> builders(plans.plans.size());
  TaskPool pool(threads);
  for (size_t p = 0; p < plans.plans.size(); ++p) {
    plans.plans[p].run_slot = static_cast<uint64_t>(m.RunSlot(plans.plans[p].run));
    builders[p] = FERRY_TRY(
        ShardBuilder::Create(opt.out_dir + "/" + ShardFileName(plans.plans[p].run, generation), m,
                             std::move(plans.plans[p]), &pool, dict));
  }
  Router router(in_opt, plans, m.schema, &pool);
  FERRY_TRY(router.Run(builders, report));
  trace.Mark("routed");
  for (size_t p = 0; p < builders.size(); ++p) {
    ShardBuildStats st = FERRY_TRY(builders[p]->Finish());
    builders[p].reset();
    m.runs[static_cast<size_t>(m.RunSlot(plans.plans[p].run))].shard_bytes = st.bytes;
    report->store_bytes += st.bytes;
    report->raw_payload_bytes += st.raw_bytes;
    report->stored_payload_bytes += st.stored_bytes;
    report->c_blocks += st.e_blocks;
    report->verified_bytes += st.verified_bytes;
  }
  return OkStatus();
}

// After the publish: a convert replaced the whole store, so the old shards go now. An append
// keeps the shards it superseded until the next write, for readers that opened the previous
// manifest.
void RemoveSuperseded(const ConvertOptions& opt,
                      const Manifest& m,
                      const std::set<std::string>& old_names) {
  uint32_t unused = 0;
  std::set<std::string> keep = NamedFiles(&m, &unused);
  if (opt.append) {
    keep.insert(old_names.begin(), old_names.end());
  }
  RemoveUnnamed(opt.out_dir, keep);
}

}  // namespace

Result<ConvertReport> Convert(const ConvertOptions& opt) {
  const PhaseTrace trace;
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
  const std::optional<Manifest> old = FERRY_TRY(ReadExisting(opt));
  const Manifest* const base = opt.append ? &*old : nullptr;
  uint32_t generation = 0;
  const std::set<std::string> old_names = NamedFiles(old ? &*old : nullptr, &generation);
  ++generation;
  // Leftovers of killed writes go first (the current store's shards are kept).
  RemoveUnnamed(opt.out_dir, old_names);

  ConvertReport report;
  Manifest& m = report.manifest;
  SetSettings(opt, base, &m);
  ConvertOptions in_opt = opt;
  in_opt.tree = m.tree;
  Plans plans = FERRY_TRY(PlanInputs(in_opt, m, base != nullptr ? &base->schema : nullptr));
  trace.Mark("planned");
  report.input_bytes = plans.input_bytes;
  FERRY_TRY(SetSchemaAndShape(opt, in_opt, base, plans, trace, &m));
  std::shared_ptr<const Dictionary> dict;
  if (!m.dictionary.empty()) {
    dict = FERRY_TRY(Dictionary::Make(m.dictionary, m.codec.level));
  }
  FERRY_TRY(PlaceRuns(opt, base, plans, generation, &report));
  FERRY_TRY(BuildShards(opt, in_opt, plans, dict.get(), generation, trace, &report));
  report.events_written = plans.events;
  // Untouched shards of an append count too.
  for (const RunEntry& r : m.runs) {
    if (r.generation != generation) {
      report.store_bytes += r.shard_bytes;
    }
  }
  uint64_t manifest_bytes = 0;
  trace.Mark("finished");
  FERRY_TRY(PublishManifest(opt.out_dir, m, &manifest_bytes));
  trace.Mark("published");
  report.store_bytes += manifest_bytes;
  RemoveSuperseded(opt, m, old_names);
  report.skipped = std::move(plans.first.skipped);
  report.seconds = trace.seconds();
  return report;
}

}  // namespace ferry::store
