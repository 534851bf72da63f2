#include "rootio/rntuple_blob.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/endian.h"
#include "codec/compression.h"

namespace ferry::rootio {
namespace {

constexpr uint64_t kChunkOffsetSize = 8;

Status ReadRange(io::ByteSource& source,
                 uint64_t offset,
                 std::span<uint8_t> dest,
                 std::string_view what) {
  if (offset > source.size() || dest.size() > source.size() - offset) {
    return CorruptionError(std::string(what) + ": byte range [" + std::to_string(offset) + ", +"
                           + std::to_string(dest.size()) + ") lies outside the file");
  }
  return source.ReadAt(offset, dest);
}

}  // namespace

uint64_t ChunkCount(uint64_t nbytes, uint64_t max_key_size) {
  uint64_t chunks = (nbytes + max_key_size - 1) / max_key_size;
  uint64_t tail = nbytes % max_key_size;
  // The offsets of the later chunks take room in the first one; when the slack of the last
  // chunk cannot absorb them, one more chunk is needed (and its offset too).
  uint64_t slack = tail > 0 ? max_key_size - tail : 0;
  uint64_t offsets_size = (chunks - 1) * kChunkOffsetSize;
  if (offsets_size > slack) {
    ++chunks;
    offsets_size += kChunkOffsetSize;
  }
  return offsets_size < max_key_size ? chunks : 0;
}

Status ReadBlob(io::ByteSource& source,
                uint64_t offset,
                uint64_t nbytes,
                uint64_t max_key_size,
                std::string_view what,
                ByteVector* out) {
  // Chunks never overlap, so no blob is larger than the file: this bounds the allocation.
  if (nbytes > source.size()) {
    return CorruptionError(std::string(what) + ": " + std::to_string(nbytes)
                           + " bytes, more than the file holds");
  }
  out->resize(static_cast<size_t>(nbytes));
  std::span<uint8_t> dest(*out);
  if (max_key_size == 0 || nbytes <= max_key_size) {
    return ReadRange(source, offset, dest, what);
  }
  uint64_t chunks = ChunkCount(nbytes, max_key_size);
  if (max_key_size <= kChunkOffsetSize || chunks == 0) {
    return CorruptionError(std::string(what) + ": cannot split " + std::to_string(nbytes)
                           + " bytes into keys of " + std::to_string(max_key_size));
  }
  uint64_t offsets_size = (chunks - 1) * kChunkOffsetSize;
  uint64_t first_payload = max_key_size - offsets_size;
  std::vector<uint8_t> first(static_cast<size_t>(max_key_size));
  FERRY_TRY(ReadRange(source, offset, first, what));
  std::copy_n(first.begin(), first_payload, dest.begin());
  uint64_t done = first_payload;
  for (uint64_t i = 0; i + 1 < chunks && done < nbytes; ++i) {
    auto at = LoadLE<uint64_t>(first.data() + first_payload + i * kChunkOffsetSize);
    uint64_t n = std::min(max_key_size, nbytes - done);
    FERRY_TRY(ReadRange(source, at, dest.subspan(done, n), what));
    done += n;
  }
  if (done != nbytes) {
    return CorruptionError(std::string(what) + ": chunked blob ends early");
  }
  return OkStatus();
}

Status Unzip(std::span<const uint8_t> stored,
             uint64_t length,
             std::string_view what,
             ByteVector* out) {
  if (stored.size() == length) {
    out->assign(stored.begin(), stored.end());
    return OkStatus();
  }
  out->clear();
  size_t in_pos = 0;
  while (out->size() < length) {
    auto h = FERRY_TRY_CTX(codec::ParseBlockHeader(stored.subspan(in_pos)), std::string(what));
    size_t block_end = in_pos + codec::kBlockHeaderSize + h.compressed_size;
    if (block_end > stored.size() || h.uncompressed_size > length - out->size()) {
      return CorruptionError(std::string(what) + ": compression block " + std::to_string(in_pos)
                             + " overruns the stored or the uncompressed size");
    }
    size_t at = out->size();
    out->resize(at + h.uncompressed_size);
    FERRY_TRY_CTX(codec::DecompressPayload(stored.subspan(in_pos, block_end - in_pos),
                                           std::span<uint8_t>(*out).subspan(at)),
                  std::string(what));
    in_pos = block_end;
  }
  if (in_pos != stored.size()) {
    return CorruptionError(std::string(what) + ": " + std::to_string(stored.size() - in_pos)
                           + " stored bytes after the last compression block");
  }
  return OkStatus();
}

}  // namespace ferry::rootio
