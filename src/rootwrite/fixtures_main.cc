// rootwrite_fixtures OUTDIR: writes the files the jsroot cross-check reads (one per codec, the
// big form, fixed clusters, two trees in one file). Test support; prints the file names.
#include <cstdio>
#include <string>

#include "rootwrite/sample_tree.h"

int main(int argc, char** argv) {
  using namespace ferry::rootwrite;
  if (argc != 2) {
    std::fprintf(stderr, "usage: rootwrite_fixtures OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  struct Fixture {
    const char* name;
    const char* codec;
    bool big;
    int64_t auto_flush;
    int32_t basket_size;
    bool two_trees;
  };
  const Fixture fixtures[] = {
      {"types-none.root", "none", false, -30000000, 1000, false},
      {"types-zlib.root", "zlib:6", false, -30000000, 1000, false},
      {"types-lzma.root", "lzma:4", false, -30000000, 1000, false},
      {"types-zstd.root", "zstd:5", false, -30000000, 1000, false},
      {"types-lz4.root", "lz4", false, -30000000, 1000, false},
      {"types-big.root", "zlib:1", true, -30000000, 32000, false},
      {"types-clusters.root", "zstd:3", false, 128, 32000, true},
  };
  for (const Fixture& f : fixtures) {
    FileOptions fo;
    fo.compression = *ferry::codec::Setting::Parse(f.codec);
    fo.force_big = f.big;
    TreeOptions to;
    to.auto_flush = f.auto_flush;
    to.basket_size = f.basket_size;
    std::string path = dir + "/" + f.name;
    ferry::Status st = sample::Write(path, fo, to, /*with_nan=*/false, f.two_trees);
    if (!st.has_value()) {
      std::fprintf(stderr, "rootwrite_fixtures: %s\n", st.error().ToString().c_str());
      return 1;
    }
    std::printf("%s\n", path.c_str());
  }
  return 0;
}
