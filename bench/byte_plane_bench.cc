// Byte-plane transposes (base/byte_plane.h) per instruction set: GB/s of split (the RNTuple
// writer's and the store's encoding) and unsplit (the RNTuple reader's and the store's
// decoding) for the widths of NanoAOD's columns, scalar against SSE2 against AVX2 in one run.
// The scalar loop is what the RNTuple writer used before the module; SSE2 what the store used.
//
// usage: byte_plane_bench [--json FILE] [--values N] [--repeat R]
#include "base/byte_plane.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using ferry::ByteIsa;

double BestSeconds(int repeat, const auto& fn) {
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

struct Row {
  size_t width;
  std::string op;
  double gbps[3];  // by ByteIsa
};

}  // namespace

int main(int argc, char** argv) {
  std::string json;
  size_t values = 16384;  // a page's worth: the transposes run on decompressed pages
  int repeat = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = argv[i + 1];
    } else if (a == "--values") {
      values = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (a == "--repeat") {
      repeat = std::atoi(argv[i + 1]);
    }
  }
  const ByteIsa isas[] = {ByteIsa::kScalar, ByteIsa::kSse2, ByteIsa::kAvx2};
  std::vector<Row> rows;
  for (size_t w : {2UL, 4UL, 8UL}) {
    std::vector<uint8_t> in(values * w);
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = static_cast<uint8_t>(i * 2654435761U >> 13);
    }
    std::vector<uint8_t> planes(in.size());
    std::vector<uint8_t> out(in.size());
    Row split{w, "split", {}};
    Row unsplit{w, "unsplit", {}};
    for (ByteIsa isa : isas) {
      const auto i = static_cast<size_t>(isa);
      const double bytes = static_cast<double>(in.size());
      split.gbps[i] =
          bytes
          / BestSeconds(
              repeat,
              [&] { ferry::SplitBytesWith(isa, in.data(), values, w, planes.data(), values); })
          / 1e9;
      unsplit.gbps[i] =
          bytes
          / BestSeconds(
              repeat,
              [&] { ferry::UnsplitBytesWith(isa, planes.data(), values, values, w, out.data()); })
          / 1e9;
      if (out != in) {
        std::fprintf(stderr, "byte_plane_bench: %s round trip differs at width %zu\n",
                     ferry::ByteIsaName(isa), w);
        return 1;
      }
    }
    rows.push_back(split);
    rows.push_back(unsplit);
  }
  std::printf("newest: %s; %zu values, best of %d\n", ferry::ByteIsaName(ferry::BestByteIsa()),
              values, repeat);
  std::printf("%-8s %5s %10s %10s %10s %9s %9s %7s\n", "op", "width", "scalar", "sse2", "avx2",
              "sse2/sc", "avx2/sse2", "chosen");
  for (const Row& r : rows) {
    const char* chosen = ferry::ByteIsaName(ferry::ChosenByteIsa(r.op == "split", r.width));
    std::printf("%-8s %5zu %8.2f GB/s %6.2f GB/s %6.2f GB/s %8.2fx %8.2fx %7s\n", r.op.c_str(),
                r.width, r.gbps[0], r.gbps[1], r.gbps[2], r.gbps[1] / r.gbps[0],
                r.gbps[2] / r.gbps[1], chosen);
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (f == nullptr) {
      std::perror(json.c_str());
      return 1;
    }
    std::fprintf(f, "{\"best_isa\": \"%s\", \"values\": %zu, \"rows\": [",
                 ferry::ByteIsaName(ferry::BestByteIsa()), values);
    for (size_t k = 0; k < rows.size(); ++k) {
      const Row& r = rows[k];
      std::fprintf(f,
                   "%s{\"op\": \"%s\", \"width\": %zu, \"scalar_gbps\": %.3f, \"sse2_gbps\": %.3f, "
                   "\"avx2_gbps\": %.3f}",
                   k == 0 ? "" : ", ", r.op.c_str(), r.width, r.gbps[0], r.gbps[1], r.gbps[2]);
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
