// rootio_read_bench: the reader's decode rate beside the bare codec's decompression rate of the
// same baskets. The baskets are held in memory, so the comparison isolates the reader's own
// work (basket parsing, entry offsets, byte swapping into columns) from I/O.
//
// usage: rootio_read_bench [--json OUT] [--repeat N] FILE...
// Prints per file: baskets, compressed and uncompressed bytes, bare decompression MB/s, reader
// MB/s, and the reader's overhead over decompression (target: under 20%).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/json_writer.h"
#include "codec/compression.h"
#include "io/local_source.h"
#include "rootio/basket.h"
#include "rootio/root_file.h"
#include "rootio/storage.h"

namespace {

using Clock = std::chrono::steady_clock;
using ferry::rootio::RootFile;

struct FileResult {
  std::string file;
  std::string codecs;
  uint64_t baskets = 0;
  uint64_t zbytes = 0;
  uint64_t bytes = 0;
  double bare_s = 0;
  double reader_s = 0;
};

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

bool RunFile(const std::string& path, int repeat, FileResult* out) {
  // Whole file in memory: both sides read the same bytes without touching the disk.
  auto disk = ferry::io::FileSource::Open(path);
  if (!disk.has_value()) {
    std::fprintf(stderr, "%s\n", disk.error().ToString().c_str());
    return false;
  }
  std::vector<uint8_t> all((*disk)->size());
  if (!(*disk)->ReadAt(0, all).has_value()) {
    return false;
  }
  ferry::io::MemorySource mem(std::move(all), path);
  auto file = RootFile::Open(mem);
  if (!file.has_value()) {
    std::fprintf(stderr, "%s\n", file.error().ToString().c_str());
    return false;
  }
  out->file = path.substr(path.rfind('/') + 1);
  auto paths = (*file)->TreePaths();
  std::vector<std::unique_ptr<ferry::rootio::Tree>> trees;
  uint32_t algos = 0;
  for (const auto& p : *paths) {
    auto t = (*file)->OpenTree(p);
    if (t.has_value()) {
      if (auto s = ferry::rootio::SurveyStorage(**t); s.has_value()) {
        for (const auto& b : *s) {
          algos |= b.algorithms;
        }
      }
      trees.push_back(std::move(*t));
    }
  }
  // The records of every on-disk basket of readable branches.
  std::vector<std::vector<uint8_t>> records;
  for (const auto& t : trees) {
    for (size_t bi = 0; bi < t->info().branches.size(); ++bi) {
      const auto& b = t->info().branches[bi];
      if (!b.supported) {
        continue;
      }
      for (size_t k = 0; k < b.baskets.size(); ++k) {
        if (b.baskets[k].embedded >= 0) {
          continue;
        }
        auto r = t->ReadBasketRecord(static_cast<int32_t>(bi), k);
        if (r.has_value()) {
          out->zbytes += r->size();
          records.push_back(std::move(*r));
        }
      }
    }
  }
  out->baskets = records.size();
  for (int a = 0; a < 6; ++a) {
    if ((algos & (1u << a)) != 0) {
      if (!out->codecs.empty()) {
        out->codecs += "+";
      }
      out->codecs += ferry::codec::AlgorithmName(static_cast<ferry::codec::Algorithm>(a));
    }
  }
  ferry::ByteVector scratch;
  ferry::rootio::Column column;
  ferry::rootio::BasketDecoder decoder;
  double best_bare = 1e30;
  double best_reader = 1e30;
  for (int rep = 0; rep < repeat; ++rep) {
    // Bare codec: decompress every basket payload into a reused buffer.
    out->bytes = 0;
    auto t0 = Clock::now();
    for (const auto& rec : records) {
      auto h = ferry::rootio::ParseBasketHeader(rec);
      if (!h.has_value()) {
        return false;
      }
      auto stored = std::span<const uint8_t>(rec).subspan(h->key.keylen);
      scratch.resize(static_cast<size_t>(h->key.objlen));
      if (h->key.compressed()) {
        if (!ferry::codec::DecompressPayload(stored, scratch).has_value()) {
          return false;
        }
      } else {
        std::memcpy(scratch.data(), stored.data(), scratch.size());
      }
      out->bytes += scratch.size();
    }
    auto t1 = Clock::now();
    // Reader: every readable leaf of every tree into columns. One column and one decoder are
    // reused, as an event loop reuses them cluster after cluster (and as the bare side reuses
    // its buffer), so both sides measure decoding rather than the kernel zeroing fresh pages.
    uint64_t values = 0;
    for (const auto& t : trees) {
      for (size_t li = 0; li < t->info().leaves.size(); ++li) {
        auto leaf = static_cast<int32_t>(li);
        if (!t->CheckReadable(leaf).has_value()) {
          continue;
        }
        if (auto st = t->ReadLeafInto(leaf, t->All(), &column, &decoder); !st.has_value()) {
          std::fprintf(stderr, "%s\n", st.error().ToString().c_str());
          return false;
        }
        values += column.num_values();
      }
    }
    auto t2 = Clock::now();
    (void)values;
    best_bare = std::min(best_bare, Seconds(t0, t1));
    best_reader = std::min(best_reader, Seconds(t1, t2));
  }
  out->bare_s = best_bare;
  out->reader_s = best_reader;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  int repeat = 5;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: rootio_read_bench [--json OUT] [--repeat N] FILE...\n");
    return 2;
  }
  std::printf("%-42s %-14s %8s %10s %10s %12s %12s %9s\n", "file", "codecs", "baskets", "stored",
              "raw", "bare MB/s", "reader MB/s", "overhead");
  ferry::JsonWriter w(2);
  w.BeginObject()
      .Field("benchmark", "rootio_read")
      .Field("repeat", repeat)
      .Key("files")
      .BeginArray();
  bool all_ok = true;
  for (const auto& f : files) {
    FileResult r;
    if (!RunFile(f, repeat, &r)) {
      all_ok = false;
      continue;
    }
    double mb = static_cast<double>(r.bytes) / 1e6;
    double overhead = r.bare_s > 0 ? (r.reader_s - r.bare_s) / r.bare_s : 0;
    std::printf("%-42s %-14s %8llu %10.2f %10.2f %12.1f %12.1f %8.1f%%\n", r.file.c_str(),
                r.codecs.c_str(), static_cast<unsigned long long>(r.baskets),
                static_cast<double>(r.zbytes) / 1e6, mb, mb / r.bare_s, mb / r.reader_s,
                overhead * 100);
    w.BeginObject()
        .Field("file", r.file)
        .Field("codecs", r.codecs)
        .Field("baskets", r.baskets)
        .Field("stored_bytes", r.zbytes)
        .Field("raw_bytes", r.bytes)
        .Field("bare_decompress_s", r.bare_s)
        .Field("reader_s", r.reader_s)
        .Field("bare_mb_per_s", mb / r.bare_s)
        .Field("reader_mb_per_s", mb / r.reader_s)
        .Field("reader_overhead", overhead)
        .EndObject();
  }
  w.EndArray().EndObject();
  if (!json_path.empty()) {
    if (FILE* out = std::fopen(json_path.c_str(), "w")) {
      std::fputs(w.str().c_str(), out);
      std::fputs("\n", out);
      std::fclose(out);
    }
  }
  return all_ok ? 0 : 1;
}
