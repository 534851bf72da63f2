// RunAgcPass: one pass of the AGC analysis over a dataset, with its accounting.
//
// Phases:
// 1. open every input (the caller's opener gives a ByteSource: local file, XRootD, ...), its
//    ROOT file, the dataset (rootio::Dataset: a TTree or an RNTuple) and its cluster reader's
//    read plan, up to `opens_in_flight` at once (an open is round trips, not CPU: over a WAN a
//    file's open and metadata cost two or three round trips, and opening one file after the
//    other would add them up);
// 2. process every read unit (cluster) of every file, in file order: a worker fetches a unit
//    (Fetch: one vector read), then — holding one of `threads` compute slots —
//    decodes it and runs the event loops. `threads + reads_in_flight` workers exist, so up to
//    that many units are fetched ahead while `threads` units are computed;
// 3. merge the per-unit results in unit order (so means and digests do not depend on thread
//    timing), close the inputs in parallel.
//
// Accounting (PassStats): wall time; process CPU (getrusage: every thread, including XrdCl's
// and a cache plug-in's); thread CPU spent decompressing+decoding baskets and in the event
// loops; I/O wait (wall time workers spent blocked in fetches, summed over workers); bytes,
// requests and chunks the ByteSources delivered (ByteSource::stats), against the dataset size.
//
// Thread-safety: RunAgcPass may be called from one thread at a time per set of sources; the
// opener and the progress callback are called from worker threads (concurrently).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "analysis/agc.h"
#include "base/result.h"
#include "io/byte_source.h"

namespace ferry::analysis {

using SourceOpener = std::function<Result<std::unique_ptr<io::ByteSource>>(const std::string&)>;

struct PassOptions {
  unsigned threads = 0;          // compute threads; 0 = hardware concurrency
  unsigned reads_in_flight = 8;  // units fetched ahead of the compute threads
  // Inputs opened at once in phase 1 (at least threads + reads_in_flight); 1 opens them one
  // after the other, as a TChain does.
  unsigned opens_in_flight = 8;
  std::string tree = "Events";  // a TTree or an RNTuple
  uint32_t max_ranges_per_read = 1024;
  // Called after each unit with (events done, events total); may be empty.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct PassStats {
  double wall_s = 0;
  double open_s = 0;  // phase 1 (opens, tree metadata, planning), wall
  double cpu_s = 0;   // process user + system
  double io_wait_s = 0;
  double decompress_cpu_s = 0;
  double analysis_cpu_s = 0;
  double other_cpu_s() const { return std::max(0.0, cpu_s - decompress_cpu_s - analysis_cpu_s); }

  uint64_t files = 0;
  uint64_t events = 0;
  uint64_t units = 0;
  uint64_t dataset_bytes = 0;  // sum of the input sizes
  uint64_t planned_bytes = 0;  // basket records of the active branches
  uint64_t bytes_read = 0;     // ByteSource::stats().bytes, metadata included
  uint64_t requests = 0;       // ReadAt + ReadV calls
  uint64_t vector_reads = 0;
  uint64_t chunks = 0;
  double fraction_read() const {
    return dataset_bytes == 0
               ? 0.0
               : static_cast<double>(bytes_read) / static_cast<double>(dataset_bytes);
  }
};

struct FileSummary {
  std::string name;
  uint64_t bytes = 0;
  int64_t entries = 0;
  uint64_t units = 0;
  uint64_t planned_bytes = 0;
  // CPU seconds its units took to decode and analyze (what an in-order reader spends on it
  // once its bytes are there; bench/readahead_wan's in-order limit).
  double cpu_s = 0;
};

struct AgcReport {
  std::vector<FileSummary> files;
  AgcResult result;
  PassStats stats;
  unsigned threads = 0;
  unsigned reads_in_flight = 0;
};

// InvalidArgument for no inputs; the first error of any input or unit otherwise (with the
// input's name as context).
Result<AgcReport> RunAgcPass(std::span<const std::string> inputs,
                             const SourceOpener& open,
                             const PassOptions& options = {});

// The report as one JSON document (see docs/analysis.md).
std::string AgcReportJson(const AgcReport& report, int indent = 0);

}  // namespace ferry::analysis
