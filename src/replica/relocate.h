// Relocating the baskets of a TTree: the ROOT side of the cache's replica tier.
//
// A replica is served as a *virtual file*: the original file's bytes, a few small patches over
// them, and an overlay after the original end that holds re-encoded baskets and a new TTree
// record pointing at them (docs/format/replica.md). This header makes those pieces; it does no
// I/O. Every ROOT reader (ROOT, uproot, jsroot, ferry) reads the virtual file to the values of
// the original, because:
//
// - ReencodeBasket keeps a basket's key header byte for byte and changes only fNbytes (and
//   fSeekKey where its width allows; no reader uses a basket's own fSeekKey). The header's length
//   must not change: the entry offsets inside the payload count it.
// - RelocateTree overwrites, in the decompressed TTree payload, fBasketSeek[i] and
//   fBasketBytes[i] of every moved basket and the fZipBytes sums, in place. The payload keeps its
//   length, so every class tag and object reference in it (positions counted from the start of
//   the key) stays valid. The payload is compressed again under the original key header (same
//   fKeylen, for the same reason), with fNbytes and fSeekKey set for its new place.
// - The tree's key in its directory's keys list gets the new fNbytes and fSeekKey (a patch of a
//   few bytes in place), so readers walking the keys list find the new record. fObjlen does not
//   change.
// - HeaderPatch sets fEND to the virtual size (readers reject a file shorter than fEND), in the
//   big form (64-bit seeks) when the virtual file passes 2,000,000,000 bytes, as ROOT does.
//
// Limits (UnsupportedError): a tree record whose key has 32-bit seeks cannot be placed past
// 2^31 - 1; a header with fBEGIN below 75 bytes has no room for the big form.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootio/tree_model.h"

namespace ferry::replica {

// Bytes to overwrite at `offset` of the original file.
struct Patch {
  uint64_t offset = 0;
  std::vector<uint8_t> bytes;
};

// One basket of a tree moved to the overlay.
struct BasketMove {
  int32_t branch = 0;  // index in TreeInfo::branches
  int32_t basket = 0;  // index in Branch::baskets (a slot < fWriteBasket, not embedded)
  uint64_t seek = 0;   // new record offset
  uint32_t bytes = 0;  // new record size
};

// Appends `record` (a TBasket record: key header + stored payload) to `out`, its payload
// decompressed and compressed again with `setting` (stored raw when that is not smaller, or when
// setting is none); fSeekKey becomes `new_seek` when the key's seek width holds it. `scratch`
// holds the decompressed payload (reused between calls). With `verify`, the new payload is
// decoded again and compared with the original's (Corruption when they differ). Returns the
// new record's size. Corruption when the record does not parse or decompress.
Result<uint32_t> ReencodeBasket(std::span<const uint8_t> record,
                                const codec::Setting& setting,
                                uint64_t new_seek,
                                ByteVector* scratch,
                                ByteVector* out,
                                bool verify = false);

// Sets a record's fSeekKey to `seek` when its key's seek width holds it (as ReencodeBasket
// does), for a re-encoded basket copied to another place.
void SetKeySeek(std::span<uint8_t> record, uint64_t seek);

// Picks one of several encodings of a basket: given the decompressed size and the stored size
// each candidate gave (a candidate that does not shrink the payload is stored raw), returns the
// index to keep.
using EncodingChooser =
    std::function<size_t(uint64_t raw_bytes, std::span<const uint64_t> stored_bytes)>;

// As ReencodeBasket, with the payload encoded by every candidate and the one `choose` picks
// kept; `chosen` gets its index. One candidate and no chooser is ReencodeBasket.
Result<uint32_t> ReencodeBasketChoosing(std::span<const uint8_t> record,
                                        std::span<const codec::Setting> candidates,
                                        const EncodingChooser& choose,
                                        uint64_t new_seek,
                                        ByteVector* scratch,
                                        ByteVector* out,
                                        bool verify,
                                        size_t* chosen);

// The new TTree record and the keys-list patch that points readers at it.
struct RelocatedTree {
  ByteVector record;  // to be placed at `record_seek` of the virtual file
  Patch key_entry;    // the tree's key header in its directory's keys list
};

// `record`: the original TTree record (key header + stored payload), `info` parsed from it;
// `key_entry_offset` / `key_entry`: file offset and bytes (at least its first 26) of the tree's
// key header in the keys list. InvalidArgument when a move names a basket that has no slot
// (embedded) or a branch without basket tables.
Result<RelocatedTree> RelocateTree(std::span<const uint8_t> record,
                                   const rootio::TreeInfo& info,
                                   std::span<const BasketMove> moves,
                                   uint64_t record_seek,
                                   const codec::Setting& setting,
                                   uint64_t key_entry_offset,
                                   std::span<const uint8_t> key_entry);

// A key's record (key header + payload) placed at `seek`: fNbytes (= record.size()) and fSeekKey
// written in the record's header, and returned as the patch of its entry in the keys list
// (`key_entry`: the entry's first bytes, at `key_entry_offset`). Unsupported when a 32-bit seek
// cannot hold `seek`.
Result<Patch> MoveKey(std::span<uint8_t> record,
                      std::span<const uint8_t> key_entry,
                      uint64_t key_entry_offset,
                      uint64_t seek);

// The file header (`head`: the file's first fBEGIN bytes, or at least the header's) with fEND =
// `new_end`; converted to the big form when new_end passes kStartBigFile.
Result<Patch> HeaderPatch(std::span<const uint8_t> head, uint64_t new_end);

}  // namespace ferry::replica
