// Fuzz target: the parsers of column copies (docs/format/store.md section 12) over arbitrary
// bytes. The first byte selects: 0, the store's conf text (DIR/store.conf); otherwise a copy
// file: its header against the input's size, then the directory its header points at. (The
// manifest's copy table, behind manifest flag bit 2, is parsed by store_fuzz's Manifest::Parse.)
#include <cstdint>
#include <span>
#include <string_view>

#include "store/column_copy.h"
#include "store/copies.h"

using namespace ferry::store;  // NOLINT: fuzz driver

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) {
    return 0;
  }
  std::span<const uint8_t> in(data + 1, size - 1);
  if (data[0] == 0) {
    (void)ParseCopiesConf({reinterpret_cast<const char*>(in.data()), in.size()});
    return 0;
  }
  auto header = CopyHeader::Parse(in, in.size());
  if (!header.has_value()) {
    return 0;
  }
  const uint64_t at = header->directory_offset(in.size());
  (void)ParseCopyDirectory(in.subspan(at), *header, in.size());
  return 0;
}
