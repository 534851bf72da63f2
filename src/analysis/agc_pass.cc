#include "analysis/agc_pass.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <optional>
#include <semaphore>
#include <thread>

#include "base/json_writer.h"
#include "base/mutex.h"
#include "rootio/dataset.h"
#include "rootio/root_file.h"

namespace ferry::analysis {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// Runs fn(i) for i in [0, n) on up to `threads` threads.
template <class Fn>
void ParallelFor(size_t n, size_t threads, Fn fn) {
  threads = std::max<size_t>(1, std::min(threads, n));
  std::atomic<size_t> next{0};
  auto body = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      fn(i);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    pool.emplace_back(body);
  }
  body();
  for (std::thread& t : pool) {
    t.join();
  }
}

// One opened input: its dataset (which owns the file and the ByteSource) and the reader of
// the analysis's fields; the reader borrows the dataset, so it goes first.
struct Input {
  std::unique_ptr<rootio::Dataset> data;
  std::unique_ptr<rootio::ClusterReader> reader;
  AgcColumnMap map{};
  int64_t entries = 0;
};

void Close(Input& i) {
  i.reader.reset();
  i.data.reset();
}

Status OpenInput(const std::string& name,
                 const SourceOpener& open,
                 const PassOptions& options,
                 Input* in) {
  std::unique_ptr<io::ByteSource> source = FERRY_TRY(open(name));
  std::unique_ptr<rootio::RootFile> file = FERRY_TRY(rootio::RootFile::Open(std::move(source)));
  in->data = FERRY_TRY(rootio::Dataset::Open(std::move(file), options.tree));
  in->reader = FERRY_TRY(
      in->data->ReadClusters(AgcLeaves(), {.max_ranges_per_read = options.max_ranges_per_read}));
  in->map = FERRY_TRY(MapAgcColumns(*in->reader));
  in->entries = in->data->entries();
  return OkStatus();
}

// Remembers the first error of any thread.
class FirstError {
 public:
  void Set(Error e) {
    MutexLock lock(mu_);
    if (!error_.has_value()) {
      error_ = std::move(e);
    }
    failed_.store(true, std::memory_order_relaxed);
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // After every thread that may Set() was joined.
  Error Take() {
    MutexLock lock(mu_);
    return std::move(*error_);
  }

 private:
  Mutex mu_;
  std::optional<Error> error_ FERRY_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

// Phase 1: every input opened in parallel; on an error every input is closed again.
Status OpenAll(std::span<const std::string> inputs,
               const SourceOpener& open,
               const PassOptions& options,
               size_t openers,
               std::vector<Input>* in) {
  FirstError first_error;
  ParallelFor(inputs.size(), openers, [&](size_t i) {
    if (first_error.failed()) {
      return;
    }
    Status s = OpenInput(inputs[i], open, options, &(*in)[i]);
    if (!s.has_value()) {
      first_error.Set(std::move(s).error().AddContext(inputs[i]));
    }
  });
  if (first_error.failed()) {
    ParallelFor(in->size(), openers, [&](size_t i) { Close((*in)[i]); });
    return first_error.Take();
  }
  return OkStatus();
}

struct UnitRef {
  uint32_t input;
  uint32_t unit;
};

// Every input's units in input order, and each file's summary into the report.
std::vector<UnitRef> ListUnits(std::span<const std::string> inputs,
                               std::span<const Input> in,
                               AgcReport* report) {
  std::vector<UnitRef> units;
  PassStats& st = report->stats;
  for (size_t i = 0; i < in.size(); ++i) {
    const rootio::ClusterReader& reader = *in[i].reader;
    for (size_t u = 0; u < reader.unit_count(); ++u) {
      units.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(u)});
    }
    FileSummary f;
    f.name = inputs[i];
    f.bytes = in[i].data->source().size();
    f.entries = in[i].entries;
    f.units = reader.unit_count();
    f.planned_bytes = reader.bytes();
    st.dataset_bytes += f.bytes;
    st.planned_bytes += f.planned_bytes;
    report->files.push_back(std::move(f));
  }
  return units;
}

// Phase 2: workers take the units in order and fetch them (more fetches in flight than
// compute slots, so reads overlap compute), then decode and analyze holding one of `threads`
// compute slots. Results merge in unit order, so the sum does not depend on scheduling.
class UnitPass {
 public:
  UnitPass(std::span<const std::string> inputs,
           std::span<const Input> in,
           std::span<const UnitRef> units,
           const PassOptions& options,
           unsigned threads,
           FirstError* first_error)
      : inputs_(inputs),
        in_(in),
        units_(units),
        options_(options),
        compute_(std::min<unsigned>(threads, 4096)),
        first_error_(first_error),
        pending_(units.size()),
        file_cpu_(in.size(), 0.0) {
    for (const Input& i : in) {
      events_total_ += static_cast<uint64_t>(i.entries);
    }
  }

  // Runs `workers` workers, one of them on this thread.
  void Run(size_t workers) {
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers; ++w) {
      pool.emplace_back([this] { Work(); });
    }
    Work();
    for (std::thread& t : pool) {
      t.join();
    }
  }

  uint64_t events_done() const { return events_done_.load(); }
  // The merged result and the summed times (call after Run).
  AgcResult TakeTotal(PassStats* st) FERRY_EXCLUDES(merge_mu_) {
    MutexLock lock(merge_mu_);
    st->io_wait_s = io_wait_;
    st->decompress_cpu_s = decompress_;
    st->analysis_cpu_s = analysis_;
    return std::move(total_);
  }
  // Per input: the CPU seconds of its units (call after Run).
  std::vector<double> FileCpu() FERRY_EXCLUDES(merge_mu_) {
    MutexLock lock(merge_mu_);
    return file_cpu_;
  }

 private:
  // One worker's buffers and times.
  struct Worker {
    rootio::DatasetScratch data_scratch;
    ByteVector buffer;
    std::vector<rootio::Column> columns;
    AgcScratch scratch;
    double io = 0, decompress = 0, analysis = 0;
  };

  void Work() FERRY_EXCLUDES(merge_mu_) {
    Worker me;
    for (size_t k = next_.fetch_add(1); k < units_.size() && !first_error_->failed();
         k = next_.fetch_add(1)) {
      auto part = std::make_unique<AgcResult>();
      double cpu = 0;
      Status s = RunUnit(units_[k], &me, part.get(), &cpu);
      if (!s.has_value()) {
        first_error_->Set(std::move(s).error().AddContext(inputs_[units_[k].input]));
        break;
      }
      const Input& input = in_[units_[k].input];
      const auto n = static_cast<uint64_t>(input.reader->UnitEntries(units_[k].unit).size());
      const uint64_t done = events_done_.fetch_add(n) + n;
      Merge(k, std::move(part), units_[k].input, cpu);
      if (options_.progress) {
        options_.progress(done, events_total_);
      }
    }
    MutexLock lock(merge_mu_);
    io_wait_ += me.io;
    decompress_ += me.decompress;
    analysis_ += me.analysis;
  }

  Status RunUnit(const UnitRef& ref, Worker* me, AgcResult* part, double* cpu) {
    const Input& input = in_[ref.input];
    const auto t0 = Clock::now();
    FERRY_TRY(input.reader->Fetch(ref.unit, &me->buffer));
    me->io += Seconds(Clock::now() - t0);
    compute_.acquire();
    const double c0 = ThreadCpuSeconds();
    Status s = input.reader->Decode(ref.unit, me->buffer, &me->data_scratch, &me->columns);
    const double c1 = ThreadCpuSeconds();
    if (s.has_value()) {
      s = AnalyzeUnit(input.map, me->columns, &me->scratch, part);
    }
    const double c2 = ThreadCpuSeconds();
    compute_.release();
    me->decompress += c1 - c0;
    me->analysis += c2 - c1;
    *cpu = c2 - c0;
    return s;
  }

  void Merge(size_t k, std::unique_ptr<AgcResult> part, uint32_t input, double cpu)
      FERRY_EXCLUDES(merge_mu_) {
    MutexLock lock(merge_mu_);
    file_cpu_[input] += cpu;
    pending_[k] = std::move(part);
    while (merge_next_ < pending_.size() && pending_[merge_next_] != nullptr) {
      total_.Merge(*pending_[merge_next_]);
      pending_[merge_next_].reset();
      ++merge_next_;
    }
  }

  std::span<const std::string> inputs_;
  std::span<const Input> in_;
  std::span<const UnitRef> units_;
  const PassOptions& options_;
  std::counting_semaphore<4096> compute_;
  FirstError* first_error_;
  uint64_t events_total_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<uint64_t> events_done_{0};
  Mutex merge_mu_;
  std::vector<std::unique_ptr<AgcResult>> pending_ FERRY_GUARDED_BY(merge_mu_);
  size_t merge_next_ FERRY_GUARDED_BY(merge_mu_) = 0;
  AgcResult total_ FERRY_GUARDED_BY(merge_mu_);
  double io_wait_ FERRY_GUARDED_BY(merge_mu_) = 0;
  double decompress_ FERRY_GUARDED_BY(merge_mu_) = 0;
  double analysis_ FERRY_GUARDED_BY(merge_mu_) = 0;
  std::vector<double> file_cpu_ FERRY_GUARDED_BY(merge_mu_);
};

// Phase 3's accounting: the inputs' I/O counters.
void AddIoStats(std::span<const Input> in, PassStats* st) {
  for (const Input& i : in) {
    const io::IoStats s = i.data->source().stats();
    st->bytes_read += s.bytes;
    st->requests += s.requests();
    st->vector_reads += s.vector_calls;
    st->chunks += s.chunks;
  }
}

}  // namespace

Result<AgcReport> RunAgcPass(std::span<const std::string> inputs,
                             const SourceOpener& open,
                             const PassOptions& options) {
  if (inputs.empty()) {
    return InvalidArgumentError("no input files");
  }
  const unsigned threads =
      options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const unsigned ahead = options.reads_in_flight;
  const auto t_start = Clock::now();
  const double cpu_start = ProcessCpuSeconds();

  AgcReport report;
  report.threads = threads;
  report.reads_in_flight = ahead;
  PassStats& st = report.stats;

  std::vector<Input> in(inputs.size());
  FERRY_TRY(OpenAll(inputs, open, options,
                    std::max<size_t>(threads + ahead, options.opens_in_flight), &in));
  st.open_s = Seconds(Clock::now() - t_start);
  const std::vector<UnitRef> units = ListUnits(inputs, in, &report);

  FirstError first_error;
  UnitPass pass(inputs, in, units, options, threads, &first_error);
  pass.Run(std::max<size_t>(1, std::min<size_t>(threads + ahead, units.size())));

  // Phase 3: accounting, then close the inputs in parallel.
  AddIoStats(in, &st);
  ParallelFor(in.size(), threads + ahead, [&](size_t i) { Close(in[i]); });
  if (first_error.failed()) {
    return first_error.Take();
  }
  st.files = inputs.size();
  st.units = units.size();
  st.events = pass.events_done();
  report.result = pass.TakeTotal(&st);
  const std::vector<double> file_cpu = pass.FileCpu();
  for (size_t i = 0; i < report.files.size() && i < file_cpu.size(); ++i) {
    report.files[i].cpu_s = file_cpu[i];
  }
  st.wall_s = Seconds(Clock::now() - t_start);
  st.cpu_s = ProcessCpuSeconds() - cpu_start;
  return report;
}

std::string AgcReportJson(const AgcReport& report, int indent) {
  JsonWriter w(indent);
  const PassStats& s = report.stats;
  w.BeginObject();
  w.Field("analysis", "agc_ttbar");
  w.Key("files").BeginArray();
  for (const FileSummary& f : report.files) {
    w.BeginObject()
        .Field("name", f.name)
        .Field("bytes", f.bytes)
        .Field("entries", f.entries)
        .Field("units", f.units)
        .Field("planned_bytes", f.planned_bytes)
        .Field("cpu_s", f.cpu_s)
        .EndObject();
  }
  w.EndArray();
  w.Field("threads", static_cast<uint64_t>(report.threads));
  w.Field("reads_in_flight", static_cast<uint64_t>(report.reads_in_flight));
  w.Field("events", s.events);
  w.Key("cutflow").BeginObject();
  for (Variation v : kVariations) {
    const Cutflow& c = report.result.cutflow(v);
    w.Key(VariationName(v))
        .BeginObject()
        .Field("events", c.events)
        .Field("one_lepton", c.one_lepton)
        .Field("four_jets", c.four_jets)
        .Field("one_btag", c.one_btag)
        .Field("4j1b", c.region_4j1b)
        .Field("4j2b", c.region_4j2b)
        .EndObject();
  }
  w.EndObject();
  w.Key("histograms").BeginArray();
  for (Variation v : kVariations) {
    for (Observable o : kObservables) {
      const Histogram& h = report.result.histogram(v, o);
      w.BeginObject()
          .Field("name", h.name())
          .Field("observable", ObservableName(o))
          .Field("variation", VariationName(v))
          .Field("bins", static_cast<int64_t>(h.bins()))
          .Field("lo", h.lo())
          .Field("hi", h.hi())
          .Field("entries", h.entries())
          .Field("mean", h.Mean())
          .Field("integral", h.Integral())
          .Field("underflow", h.underflow())
          .Field("overflow", h.overflow())
          .Field("digest", DigestHex(h.Digest()));
      w.Key("contents").BeginArray();
      for (int b = 1; b <= h.bins(); ++b) {
        w.Double(h.contents()[static_cast<size_t>(b)]);
      }
      w.EndArray().EndObject();
    }
  }
  w.EndArray();
  w.Field("digest", DigestHex(report.result.Digest()));
  w.Key("io")
      .BeginObject()
      .Field("dataset_bytes", s.dataset_bytes)
      .Field("planned_bytes", s.planned_bytes)
      .Field("bytes_read", s.bytes_read)
      .Field("fraction_read", s.fraction_read())
      .Field("requests", s.requests)
      .Field("vector_reads", s.vector_reads)
      .Field("chunks", s.chunks)
      .Field("units", s.units)
      .EndObject();
  w.Key("time")
      .BeginObject()
      .Field("wall_s", s.wall_s)
      .Field("open_s", s.open_s)
      .Field("cpu_s", s.cpu_s)
      .Field("io_wait_s", s.io_wait_s)
      .Field("decompress_cpu_s", s.decompress_cpu_s)
      .Field("analysis_cpu_s", s.analysis_cpu_s)
      .Field("other_cpu_s", s.other_cpu_s())
      .EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace ferry::analysis
