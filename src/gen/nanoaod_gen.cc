#include "gen/nanoaod_gen.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "gen/batch_pipeline.h"
#include "gen/event_ids.h"
#include "gen/event_template.h"
#include "gen/resampler.h"
#include "rootwrite/dataset_writer.h"
#include "rootwrite/file_writer.h"

namespace ferry::gen {
namespace {

// 2016-07-01 00:00:00 as a packed TDatime: a fixed date keeps the output reproducible.
constexpr uint32_t kFixedDatime = (21u << 26) | (7u << 22) | (1u << 17);

Status ValidateOptions(const GenOptions& o) {
  if (o.template_path.empty() || o.out_dir.empty()) {
    return InvalidArgumentError("a template file and an output directory are required");
  }
  if (o.files < 1 || o.events < o.files) {
    return InvalidArgumentError("need at least one event per file (" + std::to_string(o.events)
                                + " events, " + std::to_string(o.files) + " files)");
  }
  if (o.batch_events < 1) {
    return InvalidArgumentError("batch size must be positive");
  }
  return OkStatus();
}

// What writing one file needs besides its number and size.
struct FileJob {
  const GenOptions& options;
  const EventTemplate& tmpl;
  BatchPipeline& batches;
  GenProgress& done;
  const GenProgressFn& progress;
};

// Declares the template's branches, feeds n events of batches and closes writer and file.
Result<GenFile> Fill(rootwrite::DatasetWriter& w,
                     rootwrite::FileWriter& file,
                     FileJob& job,
                     int64_t n) {
  for (const TemplateBranch& b : job.tmpl.branches) {
    FERRY_TRY(w.AddBranch(b.spec));
  }
  const uint64_t file_start_bytes = job.done.file_bytes;
  std::vector<const rootio::Column*> ptrs;
  for (int64_t written = 0; written < n;) {
    const int64_t batch = std::min(job.options.batch_events, n - written);
    const std::vector<rootio::Column>* columns = job.batches.Next();
    if (columns == nullptr || columns->empty() || (*columns)[0].num_entries != batch) {
      return CorruptionError("generator batches out of step");
    }
    ptrs.clear();
    for (const rootio::Column& c : *columns) {
      ptrs.push_back(&c);
    }
    FERRY_TRY(w.WriteColumns(ptrs));
    written += batch;
    job.done.events += batch;
    // file.end() is the background thread's while a tree is open.
    job.done.file_bytes = file_start_bytes + static_cast<uint64_t>(w.zip_bytes());
    if (job.progress) {
      job.progress(job.done);
    }
  }
  FERRY_TRY(w.Close());
  FERRY_TRY(file.Close());
  GenFile gf;
  gf.events = n;
  gf.file_bytes = file.end();
  gf.tot_bytes = w.tot_bytes();
  gf.zip_bytes = w.zip_bytes();
  gf.cluster_size = w.cluster_size();
  job.done.file_bytes = file_start_bytes + gf.file_bytes;
  return gf;
}

Result<GenFile> WriteFile(FileJob& job, int32_t f, int64_t n) {
  const GenOptions& o = job.options;
  char name[64];
  std::snprintf(name, sizeof name, "%s_%04d.root", o.prefix.c_str(), f);
  const std::string path = o.out_dir + "/" + name;
  rootwrite::FileOptions fo;
  fo.compression = o.codec;
  fo.datime = kFixedDatime;
  fo.uuid_seed = Mix64(o.seed * 1000003 + static_cast<uint64_t>(f) + 1);
  auto file = FERRY_TRY(rootwrite::FileWriter::Create(path, fo));
  rootwrite::DatasetWriterOptions wo;
  wo.format = o.format;
  wo.name = "Events";
  wo.title = job.tmpl.tree_title;
  wo.basket_size = o.basket_size;
  wo.auto_flush = o.auto_flush;
  wo.zipped_cluster_bytes = o.cluster_bytes;
  // A TTree's baskets are compressed on a thread of their own while this one serialises the
  // next entries (the output is the same as with one thread); an RNTuple's pages are
  // compressed on this thread.
  wo.background_compression = o.pipeline;
  std::unique_ptr<rootwrite::DatasetWriter> w = rootwrite::DatasetWriter::Make(*file, wo);
  Result<GenFile> gf = Fill(*w, *file, job, n);
  if (!gf.has_value()) {
    return std::move(gf).error().AddContext("file " + path);
  }
  gf->path = path;
  return gf;
}

}  // namespace

Result<GenReport> GenerateNanoAod(const GenOptions& o, const GenProgressFn& progress) {
  FERRY_TRY(ValidateOptions(o));
  EventTemplate tmpl = FERRY_TRY_CTX(LoadTemplate(o.template_path), "template " + o.template_path);
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    return IoError("cannot create directory " + o.out_dir + ": " + ec.message(), ec.value());
  }

  GenReport report;
  report.branches = tmpl.branches.size();
  report.skipped = tmpl.skipped;
  EventIdSequence ids(o.seed);
  std::unique_ptr<Resampler> resampler = MakeResampler(o.mode, tmpl, o.seed);
  // Batch sizes of every file in order: batches never straddle files.
  std::vector<int64_t> sizes;
  for (int32_t f = 0; f < o.files; ++f) {
    const int64_t n = o.events / o.files + (f < o.events % o.files ? 1 : 0);
    for (int64_t written = 0; written < n; written += o.batch_events) {
      sizes.push_back(std::min(o.batch_events, n - written));
    }
  }
  BatchPipeline batches(*resampler, ids, std::move(sizes), o.pipeline);
  GenProgress done;
  FileJob job{o, tmpl, batches, done, progress};
  for (int32_t f = 0; f < o.files; ++f) {
    const int64_t n = o.events / o.files + (f < o.events % o.files ? 1 : 0);
    GenFile gf = FERRY_TRY(WriteFile(job, f, n));
    report.events += n;
    report.file_bytes += gf.file_bytes;
    report.tot_bytes += gf.tot_bytes;
    report.files.push_back(std::move(gf));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.measure_agc) {
    std::vector<std::string> paths;
    for (const GenFile& gf : report.files) {
      paths.push_back(gf.path);
    }
    report.agc = FERRY_TRY(MeasureAgcFraction(paths));
  }
  return report;
}

}  // namespace ferry::gen
