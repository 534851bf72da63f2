#include "rootio/basket.h"

#include <string>

#include "base/byte_swap.h"
#include "rootio/cursor.h"

namespace ferry::rootio {

Result<BasketHeader> ParseBasketHeader(std::span<const uint8_t> record) {
  Cursor c(record);
  BasketHeader h;
  h.key = FERRY_TRY(ParseKey(c));
  h.version = c.I16();
  h.buffer_size = c.I32();
  h.nev_buf_size = c.I32();
  if (h.nev_buf_size < 0) {
    h.nev_buf_size = -h.nev_buf_size;
    h.io_bits = c.U8();
  }
  h.nev_buf = c.I32();
  h.last = c.I32();
  h.flag = c.U8();
  if (!c.ok()) {
    return CorruptionError("basket header truncated");
  }
  if (c.pos() > h.key.keylen) {
    return CorruptionError("basket fields run past fKeylen " + std::to_string(h.key.keylen));
  }
  if (h.nev_buf < 0 || h.last < h.key.keylen
      || static_cast<int64_t>(h.last) - h.key.keylen > h.key.objlen) {
    return CorruptionError("basket header inconsistent (fNevBuf " + std::to_string(h.nev_buf)
                           + ", fLast " + std::to_string(h.last) + ", fKeylen "
                           + std::to_string(h.key.keylen) + ", fObjlen "
                           + std::to_string(h.key.objlen) + ")");
  }
  return h;
}

Result<BasketView> BasketDecoder::Decode(std::span<const uint8_t> record) {
  header_ = FERRY_TRY(ParseBasketHeader(record));
  const Key& k = header_.key;
  if (static_cast<size_t>(k.nbytes) > record.size()) {
    return CorruptionError("basket record is " + std::to_string(record.size())
                           + " bytes, its key says " + std::to_string(k.nbytes));
  }
  auto stored = record.subspan(k.keylen, static_cast<size_t>(k.nbytes) - k.keylen);
  std::span<const uint8_t> payload = stored;
  if (k.compressed()) {
    FERRY_TRY(DecodePayload(stored, k.objlen, &payload_));
    payload = payload_;
  }
  auto border = static_cast<size_t>(header_.last - k.keylen);
  BasketView v;
  v.num_entries = header_.nev_buf;
  v.data = payload.first(border);
  offsets_.clear();
  if (payload.size() > border) {
    Cursor c(payload, border);
    int32_t n = c.I32();
    if (!c.ok() || n < header_.nev_buf || static_cast<size_t>(n) > c.remaining() / 4) {
      return CorruptionError("entry-offset table has " + std::to_string(n) + " slots for "
                             + std::to_string(header_.nev_buf) + " entries");
    }
    const auto n_entries = static_cast<size_t>(header_.nev_buf);
    offsets_.resize(n_entries + 1);
    // The count check above bounds the table. Three tight loops that vectorise: swap the
    // big-endian table into place, rebase it on the key length, and check that the offsets rise
    // within [0, border] (an offset below the key length wraps past border), reported once.
    uint32_t* o = offsets_.data();
    SwapCopy(reinterpret_cast<uint8_t*>(o), payload.data() + c.pos(), n_entries, 4);
    const auto keylen = static_cast<uint32_t>(k.keylen);
    const auto limit = static_cast<uint32_t>(border);
    uint32_t bad = 0;
    for (size_t i = 0; i < n_entries; ++i) {
      o[i] -= keylen;
      bad |= static_cast<uint32_t>(o[i] > limit);
    }
    for (size_t i = 1; i < n_entries; ++i) {
      bad |= static_cast<uint32_t>(o[i] < o[i - 1]);
    }
    if (bad != 0) {
      return CorruptionError("entry-offset table is not increasing within the basket data");
    }
    offsets_.back() = static_cast<uint32_t>(border);
    v.offsets = offsets_;
  }
  return v;
}

BasketView BasketDecoder::View(const EmbeddedBasket& basket) {
  BasketView v;
  v.data = basket.data;
  v.offsets = basket.offsets;
  v.num_entries = basket.num_entries;
  return v;
}

}  // namespace ferry::rootio
