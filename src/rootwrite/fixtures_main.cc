// rootwrite_fixtures OUTDIR [ROOT_DATA_DIR]: writes the files the jsroot cross-check reads (one
// per codec, the big form, fixed clusters, two trees in one file) and, as the replica tier serves
// them, relocated copies (every basket re-encoded and moved, replica/overlay_writer.h) of those
// and of the real files in ROOT_DATA_DIR; and the sample RNTuple under every codec in
// OUTDIR/rntuple, with relocated copies (every page moved).
// Test support; prints the file names.
//
// rootwrite_fixtures --relocate-rntuples FILE OUTDIR: OUTDIR/relocated-NAME, FILE's RNTuples
// with every page moved as the replica tier serves them.
//
// rootwrite_fixtures --rntuple-values FILE: prints what ferry's reader reads from the RNTuples
// of FILE as JSON (sample_rntuple.h), for jsroot to be compared with.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "replica/overlay_writer.h"
#include "rootwrite/sample_rntuple.h"
#include "rootwrite/sample_tree.h"

namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes OUT/relocated-NAME for every path (its TTrees' baskets moved, or its RNTuples' pages
// when it has no TTree); the codec rotates so each one is exercised.
bool WriteRelocated(const std::vector<std::string>& paths, const std::string& dir) {
  const char* codecs[] = {"zstd:3", "lz4", "none"};
  size_t n = 0;
  for (const std::string& path : paths) {
    const auto setting = ferry::codec::Setting::Parse(codecs[n++ % 3]).value();
    auto virt = ferry::replica::RelocateInMemory(ReadFile(path), setting);
    if (!virt.has_value()) {
      if (virt.error().code() == ferry::ErrorCode::kNotFound) {
        continue;  // no TTree, no RNTuple
      }
      std::fprintf(stderr, "rootwrite_fixtures: relocating %s: %s\n", path.c_str(),
                   virt.error().ToString().c_str());
      return false;
    }
    const std::string out = dir + "/relocated-" + path.substr(path.rfind('/') + 1);
    std::ofstream(out, std::ios::binary)
        .write(reinterpret_cast<const char*>(virt->data()),
               static_cast<std::streamsize>(virt->size()));
    std::printf("%s\n", out.c_str());
  }
  return true;
}

std::vector<std::string> RootFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 5 && name.ends_with(".root")) {
        out.push_back(std::string(dir).append("/").append(name));
      }
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ferry::rootwrite;
  if (argc == 3 && std::string(argv[1]) == "--rntuple-values") {
    auto json = sample::RntupleValuesJson(argv[2]);
    if (!json.has_value()) {
      std::fprintf(stderr, "rootwrite_fixtures: %s\n", json.error().ToString().c_str());
      return 1;
    }
    std::printf("%s\n", json->c_str());
    return 0;
  }
  if (argc == 4 && std::string(argv[1]) == "--relocate-rntuples") {
    // --relocate-rntuples FILE OUTDIR: OUTDIR/relocated-NAME, every page moved.
    return WriteRelocated({argv[2]}, argv[3]) ? 0 : 1;
  }
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: rootwrite_fixtures OUTDIR [ROOT_DATA_DIR]\n");
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
  std::vector<std::string> written;
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
    written.push_back(path);
  }
  std::vector<std::string> rntuples;
  ::mkdir((dir + "/rntuple").c_str(), 0755);
  ferry::Status st = sample::WriteRntupleFixtures(dir + "/rntuple", &rntuples);
  if (!st.has_value()) {
    std::fprintf(stderr, "rootwrite_fixtures: %s\n", st.error().ToString().c_str());
    return 1;
  }
  for (const std::string& path : rntuples) {
    std::printf("%s\n", path.c_str());
  }
  // As the replica tier serves them: every page re-encoded and moved.
  if (!WriteRelocated(rntuples, dir + "/rntuple")) {
    return 1;
  }
  if (argc == 3) {
    std::vector<std::string> real = RootFilesIn(argv[2]);
    written.insert(written.end(), real.begin(), real.end());
  }
  return WriteRelocated(written, dir) ? 0 : 1;
}
