// TBasket records: header parsing and decoding into entry data plus entry offsets.
//
// A basket record is a TKey header followed, still inside fKeylen, by the basket fields
// (version, fBufferSize, fNevBufSize [+ fIOBits when negative], fNevBuf, fLast, flag). The
// payload (fObjlen bytes once decompressed) holds the entry data in [0, fLast - fKeylen) and,
// for variable-size branches, an entry-offset table: an int32 count, then offsets measured from
// the key start. See docs/format/root.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "rootio/key.h"
#include "rootio/tree_model.h"

namespace ferry::rootio {

struct BasketHeader {
  Key key;
  int16_t version = 0;
  int32_t buffer_size = 0;
  int32_t nev_buf_size = 0;
  uint8_t io_bits = 0;
  int32_t nev_buf = 0;
  int32_t last = 0;
  uint8_t flag = 0;
};

Result<BasketHeader> ParseBasketHeader(std::span<const uint8_t> record);

// Decoded contents of one basket. Spans point into a BasketDecoder, an EmbeddedBasket, or (for
// a basket stored uncompressed) into the record passed to Decode; they stay valid until that
// object decodes again or is destroyed.
struct BasketView {
  std::span<const uint8_t> data;      // entry data, big-endian values back to back
  std::span<const uint32_t> offsets;  // num_entries + 1 byte offsets into data; empty if none
  int64_t num_entries = 0;
};

// Decodes basket records, reusing its buffers: after warm-up, decoding baskets of similar size
// does not allocate. Not thread-safe: one decoder per thread.
class BasketDecoder {
 public:
  // record: the whole key record (header + stored payload) as read from the file. A payload
  // stored uncompressed is not copied: the view points into record, which must outlive it.
  Result<BasketView> Decode(std::span<const uint8_t> record);
  // A reusable buffer of size bytes for reading a record into (valid until the next call).
  std::span<uint8_t> RecordBuffer(size_t size) {
    record_.resize(size);
    return record_;
  }
  static BasketView View(const EmbeddedBasket& basket);
  // The header of the last decoded record.
  const BasketHeader& header() const { return header_; }

 private:
  BasketHeader header_;
  ByteVector record_;
  ByteVector payload_;
  std::vector<uint32_t, DefaultInitAllocator<uint32_t>> offsets_;
};

}  // namespace ferry::rootio
