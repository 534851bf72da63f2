// Fuzz target: the whole open-and-read path of the ROOT reader (header, directories, keys,
// streamed TTree metadata, baskets, every codec) over arbitrary bytes.
#include <cstdint>
#include <vector>

#include "io/local_source.h"
#include "rootio/root_file.h"
#include "rootio/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ferry::io::MemorySource src(std::vector<uint8_t>(data, data + size), "fuzz.root");
  auto f = ferry::rootio::RootFile::Open(src);
  if (f.has_value()) {
    (void)(*f)->ReadStreamerInfo();
    (void)ferry::rootio::ReadAllTrees(**f, 256);
  }
  return 0;
}
