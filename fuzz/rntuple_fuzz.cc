// Fuzz target: the RNTuple reader (docs/format/rntuple.md) over arbitrary bytes.
//
// Input: a whole ROOT file (starting with "root"): every RNTuple is opened and every top-level
// field read (at most 4096 entries each), as values and, where flat, as bulk columns. Otherwise the
// first byte picks one parser and the rest is its input:
//   0 anchor payload        1 header payload      2 footer payload
//   3 page-list payload     4 envelope (verify)   5 page: type, bits, element count, bytes
//                                                   (decoded as values and as native arrays)
// A parser may refuse its input; it must never crash, hang or allocate without bound.
#include "rootio/rntuple.h"

#include <cstdint>
#include <span>
#include <vector>

#include "io/local_source.h"
#include "rootio/rntuple_columns.h"
#include "rootio/rntuple_envelope.h"

namespace {

using namespace ferry::rootio;  // NOLINT(google-build-using-namespace): one fuzz entry point

constexpr uint64_t kMaxEntries = 4096;

void ReadWholeFile(const uint8_t* data, size_t size) {
  ferry::io::MemorySource src(std::vector<uint8_t>(data, data + size), "fuzz.root");
  auto f = RootFile::Open(src);
  if (!f.has_value()) {
    return;
  }
  auto names = RntupleNames(**f);
  if (!names.has_value()) {
    return;
  }
  for (const auto& name : *names) {
    auto r = Rntuple::Open(**f, name);
    if (!r.has_value()) {
      continue;
    }
    uint64_t n = (*r)->entries() < kMaxEntries ? (*r)->entries() : kMaxEntries;
    RntupleScratch scratch;
    ferry::rootio::Column column;
    for (uint32_t id : (*r)->TopLevelFields()) {
      (void)(*r)->Read(id, 0, n);
      // The bulk path (rntuple_columns.h) over the same pages.
      auto leaf = ResolveRntupleLeaf(**r, (*r)->FieldPath(id));
      if (leaf.has_value()) {
        (void)ReadRntupleLeaf(**r, *leaf, {0, static_cast<int64_t>(n)}, &scratch, &column);
      }
    }
  }
}

void DecodeOnePage(std::span<const uint8_t> in) {
  if (in.size() < 4) {
    return;
  }
  ColumnRecord column;
  column.type = static_cast<uint16_t>(in[0] % (kMaxColumnType + 1));
  column.bits = in[1];
  column.flags = ColumnFlags::kRange;
  column.min = -1;
  column.max = 1;
  if (const ColumnTypeInfo* info = FindColumnType(column.type);
      info != nullptr && info->min_bits == info->max_bits) {
    column.bits = info->min_bits;
  }
  uint32_t elements = in[2] | (uint32_t{in[3]} << 8);
  ColumnValues out;
  (void)DecodePage(column, in.subspan(4), elements, "page", &out);
  ferry::ByteVector native;
  (void)DecodePageNative(column, in.subspan(4), elements, "page", &native);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 4 && data[0] == 'r' && data[1] == 'o' && data[2] == 'o' && data[3] == 't') {
    ReadWholeFile(data, size);
    return 0;
  }
  if (size == 0) {
    return 0;
  }
  std::span<const uint8_t> in(data + 1, size - 1);
  switch (data[0]) {
    case 0:
      (void)ParseAnchor(in, "anchor");
      break;
    case 1:
      (void)ParseHeader(in, "header");
      break;
    case 2:
      (void)ParseFooter(in, "footer");
      break;
    case 3:
      if (!in.empty()) {
        (void)ParsePageList(in.subspan(1), in[0], "page list");
      }
      break;
    case 4:
      (void)VerifyEnvelope(in, EnvelopeType::kHeader, "envelope");
      break;
    case 5:
      DecodeOnePage(in);
      break;
    default:
      break;
  }
  return 0;
}
