// Reading RNTuple blobs (the bytes a locator names) and undoing their compression.
//
// A blob larger than the anchor's max key size is split across several keys: the first chunk
// is exactly max-key-size bytes long and ends with the little-endian u64 file offsets of the
// other chunks, which follow in order, each at most max-key-size long. The number of chunks
// is the smallest that leaves room for those offsets (see ChunkCount).
//
// Compression is ROOT's block framing (codec/compression.h); a blob whose stored size equals
// its uncompressed length is stored raw. Format: docs/format/rntuple.md ("Blobs").
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/byte_vector.h"
#include "base/result.h"
#include "io/byte_source.h"

namespace ferry::rootio {

// How many keys a blob of nbytes occupies when keys hold at most max_key_size bytes
// (nbytes > max_key_size > 8); 0 when the chunk offsets would not fit in the first chunk.
uint64_t ChunkCount(uint64_t nbytes, uint64_t max_key_size);

// Reads nbytes at offset into out, following chunk offsets when nbytes exceeds max_key_size
// (0: no limit). Corruption (naming `what`) when a range lies outside the file; a blob larger
// than the file is rejected before anything is allocated.
Status ReadBlob(io::ByteSource& source,
                uint64_t offset,
                uint64_t nbytes,
                uint64_t max_key_size,
                std::string_view what,
                ByteVector* out);

// Decompresses stored bytes into out (resized to length). Memory grows block by block, so a
// lying length cannot force an allocation the stored blocks do not back.
Status Unzip(std::span<const uint8_t> stored,
             uint64_t length,
             std::string_view what,
             ByteVector* out);

}  // namespace ferry::rootio
