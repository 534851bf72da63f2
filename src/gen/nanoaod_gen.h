// GenerateNanoAod: writes a NanoAOD-like dataset of any size from a template file.
//
// Creates out_dir if needed and writes `files` ROOT files <prefix>_0000.root ... holding
// `events` events in total (split evenly, the first files taking the remainder), each with an
// "Events" tree of the template's schema (branch names, types, titles, counters) or, with
// OutputFormat::kRntuple, an "Events" RNTuple of the same branches laid out as ROOT's
// RNTupleImporter converts such a tree (rootwrite/rntuple_model.h: RVec fields and their
// cardinalities); either way the same events for a seed. Events are filled by
// the Resampler of options.mode (resampler.h: objects drawn from the template's pools by
// default, or whole template events) with realistic run/lumi/event numbers continuing from
// file to file. The output is byte-for-byte deterministic for a seed: file
// dates and UUIDs are derived from it.
//
// Threads (pipeline = true): one resamples the next batch, the caller's serialises the current
// one into baskets, and a third compresses and writes full baskets (TreeOptions::
// background_compression); all three produce the same bytes as one thread would. RNTuple
// pages are compressed on the caller's thread.
// Memory: the template, two column batches (batch_events events each), one basket per branch
// and at most 64 MiB of baskets waiting for the compressor.
// Progress is reported through the callback after every batch. Errors carry the file path.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "codec/compression.h"
#include "gen/agc_selection.h"
#include "gen/resampler.h"
#include "rootwrite/dataset_writer.h"

namespace ferry::gen {

// The output's format: rootwrite::DatasetFormat::kTree or kRntuple (DatasetFormatName and
// ParseDatasetFormat spell them "ttree" and "rntuple").
using OutputFormat = rootwrite::DatasetFormat;

struct GenOptions {
  std::string template_path;
  std::string out_dir;
  int64_t events = 10000;  // in total
  int32_t files = 1;
  codec::Setting codec{codec::Algorithm::kZlib, 1};
  uint64_t seed = 1;
  GenMode mode = GenMode::kObject;
  OutputFormat format = OutputFormat::kTree;
  int32_t basket_size = 32000;     // TTree only
  int64_t auto_flush = -30000000;  // TTree only
  // RNTuple only: a cluster ends at about this many compressed bytes (ROOT's default).
  uint64_t cluster_bytes = uint64_t{128} << 20;
  int64_t batch_events = 1000;
  std::string prefix = "nanoaod";
  bool measure_agc = true;
  // Resample the next batch on a second thread, and compress baskets on a third, while this
  // one serialises (same output); false does everything on the caller's thread.
  bool pipeline = true;
};

struct GenFile {
  std::string path;
  int64_t events = 0;
  uint64_t file_bytes = 0;   // size on disk
  int64_t tot_bytes = 0;     // uncompressed basket (page) bytes
  int64_t zip_bytes = 0;     // stored basket (page and envelope) bytes
  int64_t cluster_size = 0;  // entries of the first cluster
};

struct GenReport {
  std::vector<GenFile> files;
  int64_t events = 0;
  uint64_t file_bytes = 0;
  int64_t tot_bytes = 0;
  size_t branches = 0;
  std::vector<std::string> skipped;  // template branches left out
  double seconds = 0;  // generation and writing (wall), without template loading and AGC survey
  AgcReport agc;
};

struct GenProgress {
  int64_t events = 0;       // written so far
  uint64_t file_bytes = 0;  // bytes written to disk so far
};
using GenProgressFn = std::function<void(const GenProgress&)>;

Result<GenReport> GenerateNanoAod(const GenOptions& options, const GenProgressFn& progress = {});

}  // namespace ferry::gen
