#include "store/column_copy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/byte_io.h"
#include "base/crc32c.h"
#include "base/endian.h"
#include "store/shuffle.h"

namespace ferry::store {
namespace {

constexpr size_t kHeaderCrcAt = 60;
constexpr uint32_t kMaxLog2Ks = 24;
// Chunks under this are stored raw, as in the shards (section 5).
constexpr size_t kMinCompressBytes = 64;

}  // namespace

std::vector<uint8_t> CopyHeader::Serialize() const {
  ByteWriter w;
  w.Bytes({reinterpret_cast<const uint8_t*>(kCopyMagic), 8});
  w.U32(kCopyVersion);
  w.U32(kCopyHeaderSize);
  w.U64(run);
  w.U32(generation);
  w.U32(column);
  w.U64(schema_hash);
  w.U64(events);
  w.U32(s_blocks);
  w.U8(log2_ks);
  w.U8(0);
  w.U16(0);
  w.U32(crc_directory);
  w.U32(crc32c::Value(w.bytes()));
  return std::move(w.bytes());
}

Result<CopyHeader> CopyHeader::Parse(std::span<const uint8_t> bytes, uint64_t file_size) {
  if (bytes.size() < kCopyHeaderSize || std::memcmp(bytes.data(), kCopyMagic, 8) != 0) {
    return CorruptionError("column copy: bad magic (not a ferry column copy)");
  }
  ByteReader r(bytes.first(kCopyHeaderSize));
  r.Take(8);
  const uint32_t version = r.U32();
  if (version != kCopyVersion) {
    return Error(version > kCopyVersion ? ErrorCode::kUnsupported : ErrorCode::kCorruption,
                 "column copy: format version " + std::to_string(version) + ", this ferry reads "
                     + std::to_string(kCopyVersion));
  }
  if (LoadLE<uint32_t>(bytes.data() + kHeaderCrcAt) != crc32c::Value(bytes.data(), kHeaderCrcAt)) {
    return CorruptionError("column copy: header checksum mismatch");
  }
  CopyHeader h;
  const uint32_t header_size = r.U32();
  h.run = r.U64();
  h.generation = r.U32();
  h.column = r.U32();
  h.schema_hash = r.U64();
  h.events = r.U64();
  h.s_blocks = r.U32();
  h.log2_ks = r.U8();
  const uint8_t zero8 = r.U8();
  const uint16_t zero16 = r.U16();
  h.crc_directory = r.U32();
  if (header_size != kCopyHeaderSize || zero8 != 0 || zero16 != 0 || h.log2_ks > kMaxLog2Ks
      || h.events == 0) {
    return CorruptionError("column copy: bad header fields");
  }
  const uint64_t blocks = ((h.events - 1) >> h.log2_ks) + 1;
  if (blocks != h.s_blocks
      || uint64_t{h.s_blocks} * kSDirEntryBytes
             > file_size - std::min<uint64_t>(file_size, kCopyHeaderSize)) {
    return CorruptionError("column copy: " + std::to_string(h.s_blocks)
                           + " S blocks do not fit the file or the event count");
  }
  return h;
}

Result<std::vector<ChunkRef>> ParseCopyDirectory(std::span<const uint8_t> bytes,
                                                 const CopyHeader& header,
                                                 uint64_t file_size) {
  if (bytes.size() != uint64_t{header.s_blocks} * kSDirEntryBytes
      || crc32c::Value(bytes) != header.crc_directory) {
    return CorruptionError("column copy: directory checksum mismatch");
  }
  const uint64_t end = header.directory_offset(file_size);
  std::vector<ChunkRef> out(header.s_blocks);
  uint64_t at = kCopyHeaderSize;
  for (size_t b = 0; b < out.size(); ++b) {
    out[b] = ParseChunkRef(bytes.subspan(b * kSDirEntryBytes, kSDirEntryBytes));
    if (out[b].offset < at || out[b].offset > end || out[b].size > end - out[b].offset) {
      return CorruptionError("column copy: chunk " + std::to_string(b) + " is outside the file");
    }
    at = out[b].offset + out[b].size;
  }
  return out;
}

Result<CopyWriter> CopyWriter::Open(const std::string& path, const CopyHeader& header) {
  CopyWriter w;
  w.path_ = path;
  w.header_ = header;
  w.fd_ = FERRY_TRY(Fd::Open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  return w;
}

Status CopyWriter::Add(std::span<const uint8_t> values, size_t w, const codec::Setting& setting) {
  shuffled_.resize(values.size());
  ShuffleBytes(values.data(), values.size() / w, w, shuffled_.data());
  stored_.resize(0);
  std::span<const uint8_t> out = shuffled_;
  if (setting.algorithm != codec::Algorithm::kNone && values.size() >= kMinCompressBytes) {
    const size_t n = FERRY_TRY(codec::CompressBlock(setting, shuffled_, &stored_));
    if (n < values.size()) {
      // Checked before it is written, as the converter does: a codec fault never reaches disk.
      check_.resize(values.size());
      FERRY_TRY_CTX(codec::DecompressBlock(setting.algorithm, std::span(stored_).first(n), check_),
                    "verifying a column copy chunk");
      if (std::memcmp(check_.data(), shuffled_.data(), values.size()) != 0) {
        return CorruptionError("a compressed column copy chunk does not decompress to its input");
      }
      out = std::span<const uint8_t>(stored_).first(n);
    }
  }
  FERRY_TRY_CTX(PwriteFull(fd_.get(), out.data(), out.size(), end_), path_);
  dir_.push_back({end_, static_cast<uint32_t>(out.size()), crc32c::Value(out)});
  end_ += out.size();
  return OkStatus();
}

Result<uint64_t> CopyWriter::Finish() {
  if (dir_.size() != header_.s_blocks) {
    return InvalidArgumentError(path_ + ": " + std::to_string(dir_.size()) + " of "
                                + std::to_string(header_.s_blocks) + " S blocks written");
  }
  std::vector<uint8_t> dir;
  for (const ChunkRef& r : dir_) {
    AppendChunkRef(dir, r);
  }
  header_.crc_directory = crc32c::Value(dir);
  FERRY_TRY_CTX(PwriteFull(fd_.get(), dir.data(), dir.size(), end_), path_);
  const std::vector<uint8_t> head = header_.Serialize();
  FERRY_TRY_CTX(PwriteFull(fd_.get(), head.data(), head.size(), 0), path_);
  if (::fsync(fd_.get()) != 0) {
    return IoError("fsync " + path_, errno);
  }
  FERRY_TRY_CTX(fd_.Close(), path_);
  return end_ + dir.size();
}

}  // namespace ferry::store
