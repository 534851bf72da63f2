#include "rootio/rntuple_anchor.h"

#include "base/hash.h"
#include "rootio/cursor.h"

namespace ferry::rootio {

std::string Anchor::Version() const {
  return std::to_string(epoch) + "." + std::to_string(major) + "." + std::to_string(minor) + "."
         + std::to_string(patch);
}

Result<Anchor> ParseAnchor(std::span<const uint8_t> payload, std::string_view what) {
  using L = AnchorLayout;
  if (payload.size() < L::kMinSize) {
    return CorruptionError(std::string(what) + ": " + std::to_string(payload.size())
                           + " bytes, fewer than the " + std::to_string(L::kMinSize)
                           + " of format 1.0");
  }
  size_t checksum_at = payload.size() - L::kChecksumSize;
  auto stored = LoadBE<uint64_t>(payload.data() + checksum_at);
  uint64_t computed =
      hash::Xxh3(payload.subspan(L::kChecksummedBegin, checksum_at - L::kChecksummedBegin));
  if (stored != computed) {
    return CorruptionError(std::string(what) + ": checksum mismatch");
  }
  Cursor c(payload, L::kChecksummedBegin);
  Anchor a;
  a.epoch = c.U16();
  a.major = c.U16();
  a.minor = c.U16();
  a.patch = c.U16();
  a.seek_header = c.U64();
  a.nbytes_header = c.U64();
  a.len_header = c.U64();
  a.seek_footer = c.U64();
  a.nbytes_footer = c.U64();
  a.len_footer = c.U64();
  a.max_key_size = c.U64();
  if (a.epoch != 1) {
    return UnsupportedError(std::string(what) + ": format epoch " + std::to_string(a.epoch)
                            + " (this reader reads epoch 1)");
  }
  return a;
}

Result<std::vector<RntupleEntry>> FindRntuples(const RootFile& file) {
  auto objects = FERRY_TRY(file.ListObjects());
  std::vector<RntupleEntry> out;
  for (auto& o : objects) {
    if (o.key.class_name == kRntupleClassName) {
      out.push_back({std::move(o.path), std::move(o.key)});
    }
  }
  return out;
}

Result<Anchor> ReadAnchor(const RootFile& file, const Key& key) {
  if (static_cast<size_t>(key.objlen) < AnchorLayout::kMinSize) {
    return CorruptionError("RNTuple '" + key.name + "' anchor: object length "
                           + std::to_string(key.objlen) + " is too small");
  }
  std::string what = "RNTuple '" + key.name + "' anchor";
  auto payload = FERRY_TRY_CTX(file.ReadObject(key), what);
  return ParseAnchor(payload, what);
}

}  // namespace ferry::rootio
