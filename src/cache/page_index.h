// PageIndex: which pages of one remote file the cache holds, with a CRC32C per page, and its
// on-disk encoding (the `KEY.idx` sidecar). Byte layout and rules: docs/format/page-store.md.
//
//   header (128 B, own CRC) | url | bitmap of full pages | CRCs of full pages | fragments |
//   CRC32C of everything before | "PGX1"
//
// A page is absent, full (in the data file at its own offset) or a fragment (one interval
// [lo, hi) of it, in the fragment log). Decode() validates every field and rejects anything
// inconsistent with kCorruption; it never trusts a count from the input for an allocation that
// the input's own length does not back.
//
// An encrypted entry (IndexInfo::encrypted) keeps a 24-byte Seal per full page and fragment in
// place of the CRC32C, and its wrapped data key after the URL.
//
// Memory: the bitmap costs 1 bit per page, CRCs 4 bytes (seals 24) per full page (allocated in
// groups of 64 pages on first use) plus 8 bytes per 64 pages, fragments ~64 bytes each.
// Thread-safety: none; the owner (cache::Entry) guards it with a shared mutex. Lookups
// (full(), crc(), fragment(), Cover()) do not allocate.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "cache/page_seal.h"
#include "cache/verified_pages.h"
#include "fetch/planner.h"

namespace ferry::cache {

// Version 2 adds fragment flags (kFragmentInData); an index is written as version 1 when no
// fragment carries one, so that an older ferry still reads it. Both are read.
inline constexpr uint32_t kIndexVersion = 2;
inline constexpr uint32_t kIndexVersionNoFlags = 1;
inline constexpr uint32_t kIndexHeaderBytes = 128;
inline constexpr uint32_t kMinPageSize = 512;
inline constexpr uint32_t kMaxPageSize = 1u << 20;
inline constexpr uint32_t kMaxUrlBytes = 65536;

struct Fragment {
  uint32_t lo = 0;      // first byte held, relative to the page start
  uint32_t hi = 0;      // one past the last byte held
  uint64_t offset = 0;  // position of byte `lo` in the fragment log (0 when in_data)
  uint32_t crc = 0;     // CRC32C of the hi - lo bytes (unencrypted entries)
  Seal seal;            // encrypted entries: what authenticates the sealed bytes
  // Its bytes are in the data file at their own offset (page * page_size + lo), not in the log,
  // so a read of a range whose edges are fragments is one pread of the data file (unencrypted
  // entries; docs/format/page-store.md, "Fragments in the data file").
  bool in_data = false;
  uint32_t length() const { return hi - lo; }
};

// Identity and bookkeeping of an entry (the index header).
struct IndexInfo {
  std::string url;  // normalised
  uint32_t page_size = 4096;
  uint64_t origin_size = 0;
  int64_t origin_mtime = 0;
  uint64_t epoch = 0;
  uint64_t generation = 0;
  uint64_t frag_bytes = 0;
  int64_t created_unix = 0;
  int64_t validated_unix = 0;
  // Encryption at rest (page_seal.h): pages carry seals instead of CRCs.
  bool encrypted = false;
  uint64_t key_id = 0;       // the master key that wrapped the data key
  WrappedKey wrapped_key{};  // the entry's data key, wrapped
};

class PageIndex final : public fetch::CoverageMap {
 public:
  PageIndex() = default;
  // An empty index. page_size must be a power of two in [kMinPageSize, kMaxPageSize].
  explicit PageIndex(IndexInfo info);
  PageIndex(PageIndex&&) noexcept = default;
  PageIndex& operator=(PageIndex&&) noexcept = default;
  PageIndex(const PageIndex& other);
  PageIndex& operator=(const PageIndex& other);
  ~PageIndex() override = default;

  const IndexInfo& info() const { return info_; }
  IndexInfo& mutable_info() { return info_; }
  uint32_t page_size() const { return info_.page_size; }
  uint64_t page_count() const { return page_count_; }
  // Length of a page (page_size except for a short last page); 0 past the end.
  uint32_t PageLength(uint64_t page) const;

  bool full(uint64_t page) const {
    return page < page_count_ && ((bitmap_[page >> 6] >> (page & 63)) & 1) != 0;
  }
  bool encrypted() const { return info_.encrypted; }
  // CRC of a full page (undefined for other pages and for encrypted entries).
  uint32_t crc(uint64_t page) const;
  // Seal of a full page of an encrypted entry (undefined otherwise).
  const Seal& seal(uint64_t page) const;
  // The fragment of a page, or nullptr.
  const Fragment* fragment(uint64_t page) const;
  fetch::PageCover Cover(uint64_t page) const override;

  // Marks a page full with its CRC; drops its fragment.
  void SetFull(uint64_t page, uint32_t crc);
  // SetFull for an encrypted entry.
  void SetFullSealed(uint64_t page, const Seal& seal);
  // Records a fragment for a page that is not full (replaces an older one).
  void SetFragment(uint64_t page, const Fragment& fragment);
  // Forgets a page (after a CRC mismatch): neither full nor fragment.
  void Drop(uint64_t page);
  void Clear();

  // The process's verified-pages set of this incarnation (verified_pages.h), or null. Every
  // change of a page above clears its mark. Not part of the encoding, and not copied with the
  // index (a copy is a snapshot to encode or compare; it must not clear the live marks).
  void AttachVerified(std::shared_ptr<VerifiedPages> verified) { verified_ = std::move(verified); }
  VerifiedPages* verified() const { return verified_.get(); }

  uint64_t full_pages() const { return full_pages_; }
  // Bitmap words: bit p % 64 of word p / 64 set = page p full.
  const std::vector<uint64_t>& bitmap_words() const { return bitmap_; }
  // Fragments by page, in no particular order.
  const std::unordered_map<uint64_t, Fragment>& fragments() const { return fragments_; }
  // Bytes held: full pages (their lengths) plus fragment lengths.
  uint64_t held_bytes() const;

  // Serialises to `out` (cleared first).
  void Encode(std::vector<uint8_t>& out) const;
  // Parses and validates an index file's bytes.
  static Result<PageIndex> Decode(std::span<const uint8_t> bytes);

 private:
  uint32_t* CrcSlot(uint64_t page);
  Seal* SealSlot(uint64_t page);
  // Sets the page's bit (counted) and drops its fragment.
  void MarkFull(uint64_t page);
  // Encode's parts (see page_index.cc).
  void EncodeHeader(uint8_t* h, uint64_t url_bytes) const;
  size_t EncodeFragments(uint8_t* h, size_t pos) const;
  // Decode's sections after the header (see page_index.cc).
  Status DecodePages(const uint8_t* h, uint64_t full_pages, size_t& pos);
  Status DecodeFragments(const uint8_t* h, uint64_t count, size_t pos);

  IndexInfo info_;
  uint64_t page_count_ = 0;
  uint64_t full_pages_ = 0;
  std::vector<uint64_t> bitmap_;
  // One group of 64 CRCs per bitmap word, allocated when the word gets its first bit.
  std::vector<std::unique_ptr<uint32_t[]>> crc_groups_;
  // The same for the seals of an encrypted entry (crc_groups_ then stays empty).
  std::vector<std::unique_ptr<Seal[]>> seal_groups_;
  std::unordered_map<uint64_t, Fragment> fragments_;
  std::shared_ptr<VerifiedPages> verified_;
};

// True when page_size is a power of two in [kMinPageSize, kMaxPageSize].
bool ValidPageSize(uint32_t page_size);
// Length of page `page` of a file of `origin_size` bytes cut into `page_size` pages: page_size
// except for a short last page, 0 past the end. (PageIndex::PageLength, for callers that know
// the sizes without holding the index.)
uint32_t PageLengthOf(uint64_t page, uint32_t page_size, uint64_t origin_size);

}  // namespace ferry::cache
