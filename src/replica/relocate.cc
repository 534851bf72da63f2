#include "replica/relocate.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "base/endian.h"
#include "rootio/cursor.h"
#include "rootio/key.h"
#include "rootwrite/key_header.h"

namespace ferry::replica {
namespace {

// Field positions of a TKey header (see rootio/key.h).
constexpr size_t kKeyNbytesAt = 0;
constexpr size_t kKeyVersionAt = 4;
constexpr size_t kKeySeekAt = 18;
// A 32-bit seek field is read as a signed Int_t by ROOT.
constexpr uint64_t kMaxSmallSeek = std::numeric_limits<int32_t>::max();

bool WideKey(std::span<const uint8_t> key) {
  return LoadBE<int16_t>(key.data() + kKeyVersionAt) > 1000;
}

// Writes fNbytes and, when `seek` fits the key's seek width, fSeekKey. Returns false when the
// seek did not fit (the caller decides whether that matters).
bool PatchKeyFields(uint8_t* key, int32_t nbytes, uint64_t seek) {
  StoreBE<int32_t>(key + kKeyNbytesAt, nbytes);
  if (LoadBE<int16_t>(key + kKeyVersionAt) > 1000) {
    StoreBE<uint64_t>(key + kKeySeekAt, seek);
    return true;
  }
  if (seek > kMaxSmallSeek) {
    return false;
  }
  StoreBE<uint32_t>(key + kKeySeekAt, static_cast<uint32_t>(seek));
  return true;
}

Result<rootio::Key> ParseRecordKey(std::span<const uint8_t> record, const char* what) {
  rootio::Cursor c(record);
  rootio::Key key = FERRY_TRY(rootio::ParseKey(c));
  if (key.nbytes < key.keylen || static_cast<size_t>(key.nbytes) > record.size()) {
    return CorruptionError(std::string(what) + " record: fNbytes " + std::to_string(key.nbytes)
                           + " does not fit the " + std::to_string(record.size()) + " bytes given");
  }
  return key;
}

// Appends `raw` compressed with `setting` to out, or raw when that does not shrink it.
Status AppendPayload(const codec::Setting& setting, std::span<const uint8_t> raw, ByteVector* out) {
  if (setting.algorithm != codec::Algorithm::kNone) {
    if (FERRY_TRY(codec::CompressPayload(setting, raw, out))) {
      return OkStatus();
    }
  }
  out->insert(out->end(), raw.begin(), raw.end());
  return OkStatus();
}

}  // namespace

void SetKeySeek(std::span<uint8_t> record, uint64_t seek) {
  if (record.size() >= kKeySeekAt + 8) {
    (void)PatchKeyFields(record.data(), LoadBE<int32_t>(record.data() + kKeyNbytesAt), seek);
  }
}

Result<uint32_t> ReencodeBasket(std::span<const uint8_t> record,
                                const codec::Setting& setting,
                                uint64_t new_seek,
                                ByteVector* scratch,
                                ByteVector* out,
                                bool verify) {
  size_t chosen = 0;
  return ReencodeBasketChoosing(record, {&setting, 1}, {}, new_seek, scratch, out, verify, &chosen);
}

Result<uint32_t> ReencodeBasketChoosing(std::span<const uint8_t> record,
                                        std::span<const codec::Setting> candidates,
                                        const EncodingChooser& choose,
                                        uint64_t new_seek,
                                        ByteVector* scratch,
                                        ByteVector* out,
                                        bool verify,
                                        size_t* chosen) {
  if (candidates.empty()) {
    return InvalidArgumentError("no encoding to choose from");
  }
  rootio::Key key = FERRY_TRY(ParseRecordKey(record, "basket"));
  const std::span<const uint8_t> stored =
      record.subspan(key.keylen, static_cast<size_t>(key.nbytes - key.keylen));
  FERRY_TRY(rootio::DecodePayload(stored, key.objlen, scratch));
  // Each candidate's payload; the chosen one is appended after the key header.
  thread_local std::vector<ByteVector> encoded;
  encoded.resize(std::max(encoded.size(), candidates.size()));
  std::vector<uint64_t> sizes(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    encoded[i].clear();
    FERRY_TRY(AppendPayload(candidates[i], *scratch, &encoded[i]));
    sizes[i] = encoded[i].size();
  }
  *chosen = choose ? choose(scratch->size(), sizes) : 0;
  if (*chosen >= candidates.size()) {
    return InvalidArgumentError("the encoding chooser picked no candidate");
  }
  const ByteVector& payload = encoded[*chosen];
  const size_t start = out->size();
  out->insert(out->end(), record.begin(), record.begin() + key.keylen);
  out->insert(out->end(), payload.begin(), payload.end());
  const size_t size = out->size() - start;
  if (size > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return UnsupportedError("re-encoded basket exceeds 2 GiB");
  }
  // A basket's own fSeekKey is read by no reader (they use the branch's fBasketSeek), so a
  // 32-bit field that cannot hold the new place keeps its old value.
  (void)PatchKeyFields(out->data() + start, static_cast<int32_t>(size), new_seek);
  if (verify) {
    // What a reader will decode from the new record must be what the original held.
    ByteVector check;
    FERRY_TRY(rootio::DecodePayload(
        std::span<const uint8_t>(out->data() + start + key.keylen, size - key.keylen), key.objlen,
        &check));
    if (!(check == *scratch)) {
      return CorruptionError("re-encoded basket does not decode to the original payload");
    }
  }
  return static_cast<uint32_t>(size);
}

Result<RelocatedTree> RelocateTree(std::span<const uint8_t> record,
                                   const rootio::TreeInfo& info,
                                   std::span<const BasketMove> moves,
                                   uint64_t record_seek,
                                   const codec::Setting& setting,
                                   uint64_t key_entry_offset,
                                   std::span<const uint8_t> key_entry) {
  rootio::Key key = FERRY_TRY(ParseRecordKey(record, "TTree"));
  ByteVector payload;
  FERRY_TRY(rootio::DecodePayload(
      record.subspan(key.keylen, static_cast<size_t>(key.nbytes - key.keylen)), key.objlen,
      &payload));

  // Overwrite the basket tables in place; the fZipBytes sums move by the size differences.
  std::vector<int64_t> zip_delta(info.branches.size(), 0);
  int64_t tree_delta = 0;
  for (const BasketMove& m : moves) {
    if (m.branch < 0 || static_cast<size_t>(m.branch) >= info.branches.size()) {
      return InvalidArgumentError("basket move names branch " + std::to_string(m.branch));
    }
    const rootio::Branch& b = info.branches[static_cast<size_t>(m.branch)];
    if (m.basket < 0 || m.basket >= b.write_basket
        || static_cast<size_t>(m.basket) >= b.baskets.size()
        || b.baskets[static_cast<size_t>(m.basket)].seek == 0 || b.basket_bytes_pos == 0
        || b.basket_seek_pos == 0) {
      return InvalidArgumentError("branch " + b.name + ": basket " + std::to_string(m.basket)
                                  + " has no record to relocate");
    }
    const size_t bytes_at = b.basket_bytes_pos + 4 * static_cast<size_t>(m.basket);
    const size_t seek_at = b.basket_seek_pos + 8 * static_cast<size_t>(m.basket);
    if (bytes_at + 4 > payload.size() || seek_at + 8 > payload.size()) {
      return CorruptionError("branch " + b.name + ": basket tables outside the TTree record");
    }
    const int64_t old_bytes = b.baskets[static_cast<size_t>(m.basket)].bytes;
    StoreBE<int32_t>(payload.data() + bytes_at, static_cast<int32_t>(m.bytes));
    StoreBE<int64_t>(payload.data() + seek_at, static_cast<int64_t>(m.seek));
    zip_delta[static_cast<size_t>(m.branch)] += static_cast<int64_t>(m.bytes) - old_bytes;
    tree_delta += static_cast<int64_t>(m.bytes) - old_bytes;
  }
  for (size_t i = 0; i < zip_delta.size(); ++i) {
    const uint32_t at = info.branches[i].zip_bytes_pos;
    if (zip_delta[i] != 0 && at != 0 && at + 8 <= payload.size()) {
      StoreBE<int64_t>(payload.data() + at, LoadBE<int64_t>(payload.data() + at) + zip_delta[i]);
    }
  }
  if (tree_delta != 0 && info.zip_bytes_pos != 0 && info.zip_bytes_pos + 8 <= payload.size()) {
    uint8_t* at = payload.data() + info.zip_bytes_pos;
    StoreBE<int64_t>(at, LoadBE<int64_t>(at) + tree_delta);
  }

  RelocatedTree out;
  out.record.insert(out.record.end(), record.begin(), record.begin() + key.keylen);
  FERRY_TRY(AppendPayload(setting, payload, &out.record));
  if (out.record.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return UnsupportedError("TTree record exceeds 2 GiB");
  }
  out.key_entry = FERRY_TRY_CTX(MoveKey(out.record, key_entry, key_entry_offset, record_seek),
                                "the TTree's key");
  return out;
}

Result<Patch> MoveKey(std::span<uint8_t> record,
                      std::span<const uint8_t> key_entry,
                      uint64_t key_entry_offset,
                      uint64_t seek) {
  if (record.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())
      || record.size() < kKeySeekAt + 4) {
    return InvalidArgumentError("record of " + std::to_string(record.size()) + " bytes");
  }
  const auto nbytes = static_cast<int32_t>(record.size());
  if (!PatchKeyFields(record.data(), nbytes, seek)) {
    return UnsupportedError("32-bit seeks cannot point past 2 GiB");
  }
  // The keys-list copy of the key: same fields at the same places.
  const size_t seek_width = key_entry.size() >= kKeySeekAt + 8 && WideKey(key_entry) ? 8 : 4;
  if (key_entry.size() < kKeySeekAt + seek_width) {
    return CorruptionError("keys-list entry truncated");
  }
  Patch p;
  p.offset = key_entry_offset;
  p.bytes.assign(key_entry.begin(),
                 key_entry.begin() + static_cast<ptrdiff_t>(kKeySeekAt + seek_width));
  if (!PatchKeyFields(p.bytes.data(), nbytes, seek)) {
    return UnsupportedError("the keys-list entry has 32-bit seeks");
  }
  return p;
}

Result<Patch> HeaderPatch(std::span<const uint8_t> head, uint64_t new_end) {
  // Layouts (rootio/file_header.h): small form has 4-byte fEND/fSeekFree/fSeekInfo, 63 bytes
  // with the UUID; the big form 8-byte ones, 75 bytes.
  constexpr size_t kSmallBytes = 63;
  constexpr size_t kBigBytes = 75;
  constexpr size_t kUuidBytes = 18;
  if (head.size() < kSmallBytes || std::memcmp(head.data(), "root", 4) != 0) {
    return CorruptionError("file header truncated or not a ROOT file");
  }
  const auto version = LoadBE<int32_t>(head.data() + 4);
  const auto begin = LoadBE<int32_t>(head.data() + 8);
  Patch p;
  p.offset = 0;
  if (version >= 1000000) {
    if (head.size() < kBigBytes) {
      return CorruptionError("file header truncated");
    }
    p.bytes.assign(head.begin(), head.begin() + kBigBytes);
    StoreBE<uint64_t>(p.bytes.data() + 12, new_end);
    return p;
  }
  if (new_end <= rootwrite::kStartBigFile) {
    p.bytes.assign(head.begin(), head.begin() + kSmallBytes);
    StoreBE<uint32_t>(p.bytes.data() + 12, static_cast<uint32_t>(new_end));
    return p;
  }
  if (begin < static_cast<int32_t>(kBigBytes)) {
    return UnsupportedError("file header has no room for 64-bit seeks (fBEGIN "
                            + std::to_string(begin) + ")");
  }
  // Small to big: the same fields, seeks widened, fUnits 8, as TFile::WriteHeader does.
  const uint8_t* s = head.data();
  p.bytes.resize(kBigBytes);
  uint8_t* d = p.bytes.data();
  std::memcpy(d, s, 4);
  StoreBE<int32_t>(d + 4, version + 1000000);
  StoreBE<int32_t>(d + 8, begin);
  StoreBE<uint64_t>(d + 12, new_end);
  StoreBE<uint64_t>(d + 20, LoadBE<uint32_t>(s + 16));  // fSeekFree
  std::memcpy(d + 28, s + 20, 12);                      // fNbytesFree, nfree, fNbytesName
  d[40] = 8;                                            // fUnits
  std::memcpy(d + 41, s + 33, 4);                       // fCompress
  StoreBE<uint64_t>(d + 45, LoadBE<uint32_t>(s + 37));  // fSeekInfo
  std::memcpy(d + 53, s + 41, 4);                       // fNbytesInfo
  std::memcpy(d + 57, s + 45, kUuidBytes);
  return p;
}

}  // namespace ferry::replica
