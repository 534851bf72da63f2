#include "rootio/key.h"

#include <algorithm>

#include "codec/compression.h"

namespace ferry::rootio {

Result<Key> ParseKey(Cursor& c) {
  Key k;
  k.nbytes = c.I32();
  k.version = c.I16();
  k.objlen = c.I32();
  k.datime = c.U32();
  k.keylen = static_cast<uint16_t>(c.I16());
  k.cycle = c.I16();
  bool wide = k.version > 1000;
  k.seek_key = c.Seek64(wide);
  // The top 16 bits of a wide fSeekPdir hold a process-id offset.
  k.seek_pdir = c.Seek64(wide) & 0x0000FFFFFFFFFFFFull;
  k.class_name = c.TString();
  k.name = c.TString();
  k.title = c.TString();
  if (!c.ok()) {
    return CorruptionError("key header truncated");
  }
  if (k.nbytes < static_cast<int32_t>(k.keylen) || k.keylen < 26 || k.objlen < 0) {
    return CorruptionError("key header has inconsistent sizes (fNbytes " + std::to_string(k.nbytes)
                           + ", fKeylen " + std::to_string(k.keylen) + ", fObjlen "
                           + std::to_string(k.objlen) + ")");
  }
  return k;
}

Result<Key> ReadKey(io::ByteSource& source, uint64_t offset) {
  if (offset >= source.size()) {
    return CorruptionError("key offset " + std::to_string(offset) + " is past the end of the file");
  }
  size_t n = static_cast<size_t>(std::min<uint64_t>(kKeyHeaderReadSize, source.size() - offset));
  std::vector<uint8_t> buf(n);
  FERRY_TRY(source.ReadAt(offset, buf));
  Cursor c(buf);
  return FERRY_TRY_CTX(ParseKey(c), "key at " + std::to_string(offset));
}

Status DecodePayload(std::span<const uint8_t> stored, int32_t objlen, ByteVector* out) {
  auto want = static_cast<size_t>(objlen);
  if (stored.size() == want) {
    out->assign(stored.begin(), stored.end());
    return OkStatus();
  }
  out->clear();
  size_t in_pos = 0;
  while (out->size() < want) {
    auto h = FERRY_TRY(codec::ParseBlockHeader(stored.subspan(in_pos)));
    size_t block_end = in_pos + codec::kBlockHeaderSize + h.compressed_size;
    if (block_end > stored.size()) {
      return CorruptionError("compression block truncated (needs " + std::to_string(block_end)
                             + " bytes, record has " + std::to_string(stored.size()) + ")");
    }
    if (h.uncompressed_size > want - out->size()) {
      return CorruptionError("compression blocks expand past fObjlen " + std::to_string(want));
    }
    size_t at = out->size();
    out->resize(at + h.uncompressed_size);
    FERRY_TRY(codec::DecompressPayload(stored.subspan(in_pos, block_end - in_pos),
                                       std::span<uint8_t>(*out).subspan(at)));
    in_pos = block_end;
  }
  return OkStatus();
}

Result<std::vector<uint8_t>> ReadPayload(io::ByteSource& source, const Key& key) {
  // Check before allocating: a corrupt fNbytes must not turn into a huge allocation.
  FERRY_TRY(io::CheckRange(source.name(), source.size(), key.seek_key,
                           static_cast<uint64_t>(key.nbytes)));
  std::vector<uint8_t> record(static_cast<size_t>(key.nbytes));
  FERRY_TRY(source.ReadAt(key.seek_key, record));
  ByteVector out;
  FERRY_TRY(DecodePayload(std::span<const uint8_t>(record).subspan(key.keylen), key.objlen, &out));
  return std::vector<uint8_t>(out.begin(), out.end());
}

}  // namespace ferry::rootio
