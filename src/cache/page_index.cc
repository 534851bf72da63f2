#include "cache/page_index.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/crc32c.h"
#include "base/endian.h"

namespace ferry::cache {
namespace {

constexpr char kMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'P', 'G', 'X'};
constexpr char kTrailerMagic[4] = {'P', 'G', 'X', '1'};
constexpr size_t kFragmentRecordBytes = 32;
constexpr size_t kSealedFragmentRecordBytes = 48;
constexpr size_t kCryptoBlockBytes = 48;
constexpr size_t kTrailerBytes = 8;
constexpr uint32_t kFlagEncrypted = 1;
constexpr uint32_t kFragmentInData = 1;  // fragment flags: also in the data file

// The fixed header, as docs/format/page-store.md ("Index file") lays it out: byte offsets.
namespace header {
constexpr size_t kVersion = 8;         // u32
constexpr size_t kHeaderBytes = 12;    // u32, = kIndexHeaderBytes
constexpr size_t kPageSize = 16;       // u32
constexpr size_t kFlags = 20;          // u32, kFlagEncrypted or zero
constexpr size_t kOriginSize = 24;     // u64
constexpr size_t kOriginMtime = 32;    // i64
constexpr size_t kEpoch = 40;          // u64
constexpr size_t kGeneration = 48;     // u64
constexpr size_t kFragBytes = 56;      // u64
constexpr size_t kCreated = 64;        // i64
constexpr size_t kValidated = 72;      // i64
constexpr size_t kPageCount = 80;      // u64
constexpr size_t kFullPages = 88;      // u64
constexpr size_t kFragmentCount = 96;  // u32
constexpr size_t kUrlBytes = 100;      // u32
constexpr size_t kKeyId = 104;         // u64, master key id (encrypted), else zero
constexpr size_t kReserved = 112;      // 12 zero bytes
constexpr size_t kCrc = 124;           // u32, CRC32C of [0, kCrc)
}  // namespace header

// One fragment record (kFragmentRecordBytes): byte offsets.
namespace fragment {
constexpr size_t kPage = 0;     // u64
constexpr size_t kLo = 8;       // u32
constexpr size_t kHi = 12;      // u32
constexpr size_t kOffset = 16;  // u64, in KEY.frag
constexpr size_t kCrc = 24;     // u32 (unencrypted)
constexpr size_t kFlags = 28;   // u32 (unencrypted): kFragmentInData, zero in version 1
constexpr size_t kSeal = 24;    // kSealBytes (encrypted, in place of kCrc and kZero)
}  // namespace fragment

// One seal (kSealBytes), in the page list or a fragment record: byte offsets.
namespace seal {
constexpr size_t kTag = 0;     // kTagBytes
constexpr size_t kNonce = 16;  // u64
}  // namespace seal

// The block after the URL of an encrypted entry (kCryptoBlockBytes): byte offsets.
namespace crypto {
constexpr size_t kWrappedKey = 0;  // kWrappedKeyBytes
constexpr size_t kZero = 40;       // 8 zero bytes
}  // namespace crypto

void StoreSeal(uint8_t* p, const Seal& s) {
  std::memcpy(p + seal::kTag, s.tag.data(), kTagBytes);
  StoreLE<uint64_t>(p + seal::kNonce, s.nonce);
}

Seal LoadSeal(const uint8_t* p) {
  Seal s;
  std::memcpy(s.tag.data(), p + seal::kTag, kTagBytes);
  s.nonce = LoadLE<uint64_t>(p + seal::kNonce);
  return s;
}

// Sizes of the sections whose layout depends on encryption.
struct SectionSizes {
  uint64_t crypto_block;
  uint64_t per_page;  // CRC or seal of a full page
  uint64_t fragment_record;
};

SectionSizes SizesFor(bool encrypted) {
  return encrypted ? SectionSizes{kCryptoBlockBytes, kSealBytes, kSealedFragmentRecordBytes}
                   : SectionSizes{0, 4, kFragmentRecordBytes};
}

uint64_t Pad8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}

uint64_t PagesFor(uint64_t size, uint32_t page_size) {
  return size / page_size + (size % page_size != 0 ? 1 : 0);
}

Error Corrupt(const std::string& what) {
  return CorruptionError("page index: " + what);
}

}  // namespace

bool ValidPageSize(uint32_t page_size) {
  return page_size >= kMinPageSize && page_size <= kMaxPageSize && std::has_single_bit(page_size);
}

PageIndex::PageIndex(IndexInfo info) : info_(std::move(info)) {
  page_count_ = PagesFor(info_.origin_size, info_.page_size);
  bitmap_.assign((page_count_ + 63) / 64, 0);
  (info_.encrypted ? seal_groups_.resize(bitmap_.size()) : crc_groups_.resize(bitmap_.size()));
}

PageIndex::PageIndex(const PageIndex& other)
    : info_(other.info_),
      page_count_(other.page_count_),
      full_pages_(other.full_pages_),
      bitmap_(other.bitmap_),
      crc_groups_(other.crc_groups_.size()),
      seal_groups_(other.seal_groups_.size()),
      fragments_(other.fragments_) {
  for (size_t w = 0; w < crc_groups_.size(); ++w) {
    if (other.crc_groups_[w]) {
      crc_groups_[w] = std::make_unique<uint32_t[]>(64);
      std::memcpy(crc_groups_[w].get(), other.crc_groups_[w].get(), 64 * sizeof(uint32_t));
    }
  }
  for (size_t w = 0; w < seal_groups_.size(); ++w) {
    if (other.seal_groups_[w]) {
      seal_groups_[w] = std::make_unique<Seal[]>(64);
      std::copy_n(other.seal_groups_[w].get(), 64, seal_groups_[w].get());
    }
  }
}

PageIndex& PageIndex::operator=(const PageIndex& other) {
  if (this != &other) {
    PageIndex copy(other);
    *this = std::move(copy);
  }
  return *this;
}

uint32_t PageLengthOf(uint64_t page, uint32_t page_size, uint64_t origin_size) {
  const uint64_t start = page * page_size;
  return start >= origin_size
             ? 0
             : static_cast<uint32_t>(std::min<uint64_t>(page_size, origin_size - start));
}

uint32_t PageIndex::PageLength(uint64_t page) const {
  return PageLengthOf(page, info_.page_size, info_.origin_size);
}

uint32_t PageIndex::crc(uint64_t page) const {
  const auto& group = crc_groups_[page >> 6];
  return group ? group[page & 63] : 0;
}

uint32_t* PageIndex::CrcSlot(uint64_t page) {
  auto& group = crc_groups_[page >> 6];
  if (!group) {
    group = std::make_unique<uint32_t[]>(64);  // value-initialised: zeros
  }
  return &group[page & 63];
}

const Seal& PageIndex::seal(uint64_t page) const {
  static const Seal kNone;
  const auto& group = seal_groups_[page >> 6];
  return group ? group[page & 63] : kNone;
}

Seal* PageIndex::SealSlot(uint64_t page) {
  auto& group = seal_groups_[page >> 6];
  if (!group) {
    group = std::make_unique<Seal[]>(64);
  }
  return &group[page & 63];
}

const Fragment* PageIndex::fragment(uint64_t page) const {
  if (fragments_.empty()) {
    return nullptr;
  }
  auto it = fragments_.find(page);
  return it == fragments_.end() ? nullptr : &it->second;
}

fetch::PageCover PageIndex::Cover(uint64_t page) const {
  if (full(page)) {
    return {0, PageLength(page)};
  }
  if (const Fragment* f = fragment(page)) {
    return {f->lo, f->hi};
  }
  return {};
}

void PageIndex::MarkFull(uint64_t page) {
  if (verified_) {
    verified_->Clear(page);
  }
  uint64_t& word = bitmap_[page >> 6];
  const uint64_t bit = uint64_t{1} << (page & 63);
  if ((word & bit) == 0) {
    word |= bit;
    ++full_pages_;
  }
  fragments_.erase(page);
}

void PageIndex::SetFull(uint64_t page, uint32_t crc) {
  if (page >= page_count_ || info_.encrypted) {
    return;
  }
  MarkFull(page);
  *CrcSlot(page) = crc;
}

void PageIndex::SetFullSealed(uint64_t page, const Seal& seal) {
  if (page >= page_count_ || !info_.encrypted) {
    return;
  }
  MarkFull(page);
  *SealSlot(page) = seal;
}

void PageIndex::SetFragment(uint64_t page, const Fragment& fragment) {
  if (page >= page_count_ || full(page)) {
    return;
  }
  if (verified_) {
    verified_->Clear(page);
  }
  fragments_[page] = fragment;
}

void PageIndex::Drop(uint64_t page) {
  if (page >= page_count_) {
    return;
  }
  if (verified_) {
    verified_->Clear(page);
  }
  uint64_t& word = bitmap_[page >> 6];
  const uint64_t bit = uint64_t{1} << (page & 63);
  if ((word & bit) != 0) {
    word &= ~bit;
    --full_pages_;
  }
  fragments_.erase(page);
}

void PageIndex::Clear() {
  if (verified_) {
    verified_->ClearAll();
  }
  std::fill(bitmap_.begin(), bitmap_.end(), 0);
  for (auto& g : crc_groups_) {
    g.reset();
  }
  for (auto& g : seal_groups_) {
    g.reset();
  }
  fragments_.clear();
  full_pages_ = 0;
}

uint64_t PageIndex::held_bytes() const {
  uint64_t n = full_pages_ * info_.page_size;
  // The short last page counts with its real length.
  if (page_count_ > 0 && full(page_count_ - 1)) {
    n -= info_.page_size - PageLength(page_count_ - 1);
  }
  for (const auto& [page, f] : fragments_) {
    n += f.length();
  }
  return n;
}

void PageIndex::Encode(std::vector<uint8_t>& out) const {
  const SectionSizes z = SizesFor(info_.encrypted);
  const uint64_t url_bytes = std::min<uint64_t>(info_.url.size(), kMaxUrlBytes);
  const uint64_t size = kIndexHeaderBytes + Pad8(url_bytes) + z.crypto_block + 8 * bitmap_.size()
                        + Pad8(z.per_page * full_pages_) + z.fragment_record * fragments_.size()
                        + kTrailerBytes;
  out.assign(size, 0);
  uint8_t* h = out.data();
  EncodeHeader(h, url_bytes);
  size_t pos = kIndexHeaderBytes;
  std::memcpy(h + pos, info_.url.data(), url_bytes);
  pos += Pad8(url_bytes);
  if (info_.encrypted) {
    std::memcpy(h + pos + crypto::kWrappedKey, info_.wrapped_key.data(), kWrappedKeyBytes);
    pos += kCryptoBlockBytes;
  }
  for (uint64_t word : bitmap_) {
    StoreLE<uint64_t>(h + pos, word);
    pos += 8;
  }
  const size_t checks_start = pos;
  for (size_t w = 0; w < bitmap_.size(); ++w) {
    for (uint64_t bits = bitmap_[w]; bits != 0; bits &= bits - 1) {
      const auto bit = static_cast<unsigned>(std::countr_zero(bits));
      if (info_.encrypted) {
        StoreSeal(h + pos, seal_groups_[w][bit]);
      } else {
        StoreLE<uint32_t>(h + pos, crc_groups_[w][bit]);
      }
      pos += z.per_page;
    }
  }
  pos = checks_start + Pad8(z.per_page * full_pages_);
  pos = EncodeFragments(h, pos);
  StoreLE<uint32_t>(h + pos, crc32c::Value(h, pos));
  std::memcpy(h + pos + 4, kTrailerMagic, 4);
}

void PageIndex::EncodeHeader(uint8_t* h, uint64_t url_bytes) const {
  std::memcpy(h, kMagic, 8);
  const bool flags = std::any_of(fragments_.begin(), fragments_.end(),
                                 [](const auto& e) { return e.second.in_data; });
  StoreLE<uint32_t>(h + header::kVersion, flags ? kIndexVersion : kIndexVersionNoFlags);
  StoreLE<uint32_t>(h + header::kHeaderBytes, kIndexHeaderBytes);
  StoreLE<uint32_t>(h + header::kPageSize, info_.page_size);
  StoreLE<uint32_t>(h + header::kFlags, info_.encrypted ? kFlagEncrypted : 0);
  StoreLE<uint64_t>(h + header::kOriginSize, info_.origin_size);
  StoreLE<int64_t>(h + header::kOriginMtime, info_.origin_mtime);
  StoreLE<uint64_t>(h + header::kEpoch, info_.epoch);
  StoreLE<uint64_t>(h + header::kGeneration, info_.generation);
  StoreLE<uint64_t>(h + header::kFragBytes, info_.frag_bytes);
  StoreLE<int64_t>(h + header::kCreated, info_.created_unix);
  StoreLE<int64_t>(h + header::kValidated, info_.validated_unix);
  StoreLE<uint64_t>(h + header::kPageCount, page_count_);
  StoreLE<uint64_t>(h + header::kFullPages, full_pages_);
  StoreLE<uint32_t>(h + header::kFragmentCount, static_cast<uint32_t>(fragments_.size()));
  StoreLE<uint32_t>(h + header::kUrlBytes, static_cast<uint32_t>(url_bytes));
  StoreLE<uint64_t>(h + header::kKeyId, info_.encrypted ? info_.key_id : 0);
  StoreLE<uint32_t>(h + header::kCrc, crc32c::Value(h, header::kCrc));
}

// The fragment records at h + pos, by increasing page; returns the position after them.
size_t PageIndex::EncodeFragments(uint8_t* h, size_t pos) const {
  const SectionSizes z = SizesFor(info_.encrypted);
  std::vector<uint64_t> pages;
  pages.reserve(fragments_.size());
  for (const auto& entry : fragments_) {
    pages.push_back(entry.first);
  }
  std::sort(pages.begin(), pages.end());
  for (uint64_t page : pages) {
    const Fragment& f = fragments_.at(page);
    StoreLE<uint64_t>(h + pos + fragment::kPage, page);
    StoreLE<uint32_t>(h + pos + fragment::kLo, f.lo);
    StoreLE<uint32_t>(h + pos + fragment::kHi, f.hi);
    StoreLE<uint64_t>(h + pos + fragment::kOffset, f.offset);
    if (info_.encrypted) {
      StoreSeal(h + pos + fragment::kSeal, f.seal);
    } else {
      StoreLE<uint32_t>(h + pos + fragment::kCrc, f.crc);
      StoreLE<uint32_t>(h + pos + fragment::kFlags, f.in_data ? kFragmentInData : 0);
    }
    pos += z.fragment_record;
  }
  return pos;
}

namespace {

// What the header says besides IndexInfo: the counts that size the sections after it.
struct IndexCounts {
  uint64_t page_count = 0;
  uint64_t full_pages = 0;
  uint64_t frag_count = 0;
  uint64_t url_bytes = 0;
  uint64_t bitmap_words = 0;
};

// The header's checks: magic, version, header CRC, sizes, flags, reserved bytes.
Status CheckHeader(const uint8_t* h) {
  if (std::memcmp(h, kMagic, 8) != 0) {
    return Corrupt("bad magic");
  }
  const auto version = LoadLE<uint32_t>(h + header::kVersion);
  if (version != kIndexVersion && version != kIndexVersionNoFlags) {
    return Corrupt("unsupported version " + std::to_string(LoadLE<uint32_t>(h + header::kVersion)));
  }
  if (LoadLE<uint32_t>(h + header::kCrc) != crc32c::Value(h, header::kCrc)) {
    return Corrupt("header checksum mismatch");
  }
  const auto flags = LoadLE<uint32_t>(h + header::kFlags);
  if (LoadLE<uint32_t>(h + header::kHeaderBytes) != kIndexHeaderBytes
      || (flags & ~kFlagEncrypted) != 0) {
    return Corrupt("bad header size or flags");
  }
  if ((flags == kFlagEncrypted) != (LoadLE<uint64_t>(h + header::kKeyId) != 0)) {
    return Corrupt("key id set without encryption, or missing with it");
  }
  for (size_t i = header::kReserved; i < header::kCrc; ++i) {
    if (h[i] != 0) {
      return Corrupt("reserved header bytes set");
    }
  }
  return OkStatus();
}

IndexInfo ReadInfo(const uint8_t* h) {
  IndexInfo info;
  info.page_size = LoadLE<uint32_t>(h + header::kPageSize);
  info.origin_size = LoadLE<uint64_t>(h + header::kOriginSize);
  info.origin_mtime = LoadLE<int64_t>(h + header::kOriginMtime);
  info.epoch = LoadLE<uint64_t>(h + header::kEpoch);
  info.generation = LoadLE<uint64_t>(h + header::kGeneration);
  info.frag_bytes = LoadLE<uint64_t>(h + header::kFragBytes);
  info.created_unix = LoadLE<int64_t>(h + header::kCreated);
  info.validated_unix = LoadLE<int64_t>(h + header::kValidated);
  info.encrypted = (LoadLE<uint32_t>(h + header::kFlags) & kFlagEncrypted) != 0;
  info.key_id = LoadLE<uint64_t>(h + header::kKeyId);
  return info;
}

// The counts, each checked against the others and against the file's size, and the trailer.
Result<IndexCounts> ReadCounts(std::span<const uint8_t> bytes, const IndexInfo& info) {
  const uint8_t* h = bytes.data();
  IndexCounts n;
  n.page_count = LoadLE<uint64_t>(h + header::kPageCount);
  n.full_pages = LoadLE<uint64_t>(h + header::kFullPages);
  n.frag_count = LoadLE<uint32_t>(h + header::kFragmentCount);
  n.url_bytes = LoadLE<uint32_t>(h + header::kUrlBytes);
  if (n.page_count != PagesFor(info.origin_size, info.page_size)) {
    return Corrupt("page count does not match origin size");
  }
  if (n.url_bytes > kMaxUrlBytes || n.full_pages > n.page_count) {
    return Corrupt("bad url length or page counts");
  }
  // Every section must be backed by input bytes; check before multiplying.
  n.bitmap_words = n.page_count / 64 + (n.page_count % 64 != 0 ? 1 : 0);
  const SectionSizes z = SizesFor(info.encrypted);
  if (n.bitmap_words > bytes.size() / 8 || n.full_pages > bytes.size() / z.per_page
      || n.frag_count > bytes.size() / z.fragment_record) {
    return Corrupt("counts exceed the file size");
  }
  const uint64_t expected = kIndexHeaderBytes + Pad8(n.url_bytes) + z.crypto_block
                            + 8 * n.bitmap_words + Pad8(z.per_page * n.full_pages)
                            + z.fragment_record * n.frag_count + kTrailerBytes;
  if (expected != bytes.size()) {
    return Corrupt("size " + std::to_string(bytes.size()) + " != expected "
                   + std::to_string(expected));
  }
  const size_t body = bytes.size() - kTrailerBytes;
  if (std::memcmp(h + body + 4, kTrailerMagic, 4) != 0) {
    return Corrupt("bad trailer magic");
  }
  if (LoadLE<uint32_t>(h + body) != crc32c::Value(h, body)) {
    return Corrupt("checksum mismatch");
  }
  return n;
}

}  // namespace

Result<PageIndex> PageIndex::Decode(std::span<const uint8_t> bytes) {
  if (bytes.size() < kIndexHeaderBytes + kTrailerBytes) {
    return Corrupt("too short (" + std::to_string(bytes.size()) + " bytes)");
  }
  const uint8_t* h = bytes.data();
  FERRY_TRY(CheckHeader(h));
  IndexInfo info = ReadInfo(h);
  if (!ValidPageSize(info.page_size)) {
    return Corrupt("bad page size " + std::to_string(info.page_size));
  }
  const IndexCounts n = FERRY_TRY(ReadCounts(bytes, info));
  info.url.assign(reinterpret_cast<const char*>(h + kIndexHeaderBytes), n.url_bytes);
  size_t pos = kIndexHeaderBytes + Pad8(n.url_bytes);
  if (info.encrypted) {
    std::memcpy(info.wrapped_key.data(), h + pos + crypto::kWrappedKey, kWrappedKeyBytes);
    if (LoadLE<uint64_t>(h + pos + crypto::kZero) != 0) {
      return Corrupt("reserved bytes after the wrapped key set");
    }
    pos += kCryptoBlockBytes;
  }
  PageIndex index(std::move(info));
  FERRY_TRY(index.DecodePages(h, n.full_pages, pos));
  FERRY_TRY(index.DecodeFragments(h, n.frag_count, pos));
  return index;
}

// The bitmap and the full pages' CRCs at h + pos; pos is left after them.
Status PageIndex::DecodePages(const uint8_t* h, uint64_t full_pages, size_t& pos) {
  const size_t words = bitmap_.size();
  uint64_t bits_seen = 0;
  for (uint64_t w = 0; w < words; ++w) {
    bitmap_[w] = LoadLE<uint64_t>(h + pos);
    pos += 8;
    bits_seen += static_cast<uint64_t>(std::popcount(bitmap_[w]));
  }
  if (page_count_ % 64 != 0 && words > 0 && (bitmap_[words - 1] >> (page_count_ % 64)) != 0) {
    return Corrupt("bitmap bits past the last page");
  }
  if (bits_seen != full_pages) {
    return Corrupt("bitmap population does not match full_pages");
  }
  full_pages_ = full_pages;
  const size_t per_page = SizesFor(info_.encrypted).per_page;
  const size_t checks_start = pos;
  for (uint64_t w = 0; w < words; ++w) {
    for (uint64_t bits = bitmap_[w]; bits != 0; bits &= bits - 1) {
      const auto bit = static_cast<unsigned>(std::countr_zero(bits));
      if (info_.encrypted) {
        *SealSlot(w * 64 + bit) = LoadSeal(h + pos);
      } else {
        *CrcSlot(w * 64 + bit) = LoadLE<uint32_t>(h + pos);
      }
      pos += per_page;
    }
  }
  pos = checks_start + Pad8(per_page * full_pages);
  return OkStatus();
}

// The fragment records at h + pos: sorted, one per absent page, inside the page and the log.
Status PageIndex::DecodeFragments(const uint8_t* h, uint64_t count, size_t pos) {
  fragments_.reserve(count);
  uint64_t last_page = 0;
  const size_t record_bytes = SizesFor(info_.encrypted).fragment_record;
  const uint32_t known_flags =
      LoadLE<uint32_t>(h + header::kVersion) == kIndexVersion ? kFragmentInData : 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* r = h + pos;
    pos += record_bytes;
    const auto page = LoadLE<uint64_t>(r + fragment::kPage);
    Fragment f;
    f.lo = LoadLE<uint32_t>(r + fragment::kLo);
    f.hi = LoadLE<uint32_t>(r + fragment::kHi);
    f.offset = LoadLE<uint64_t>(r + fragment::kOffset);
    if (info_.encrypted) {
      f.seal = LoadSeal(r + fragment::kSeal);
    } else {
      f.crc = LoadLE<uint32_t>(r + fragment::kCrc);
      const auto flags = LoadLE<uint32_t>(r + fragment::kFlags);
      if ((flags & ~known_flags) != 0) {
        return Corrupt("unknown fragment flags");
      }
      f.in_data = (flags & kFragmentInData) != 0;
    }
    if (page >= page_count_ || (i > 0 && page <= last_page) || full(page)) {
      return Corrupt("fragment page out of order, out of range or full");
    }
    const uint32_t len = PageLength(page);
    if (f.lo >= f.hi || f.hi > len || (f.lo == 0 && f.hi == len)) {
      return Corrupt("bad fragment interval");
    }
    if (f.in_data ? f.offset != 0
                  : (f.offset > info_.frag_bytes || f.length() > info_.frag_bytes - f.offset)) {
      return Corrupt("fragment past the end of the log, or a log offset for one in the data file");
    }
    fragments_.emplace(page, f);
    last_page = page;
  }
  return OkStatus();
}

}  // namespace ferry::cache
