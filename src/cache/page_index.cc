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
constexpr size_t kTrailerBytes = 8;

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
  crc_groups_.resize(bitmap_.size());
}

PageIndex::PageIndex(const PageIndex& other)
    : info_(other.info_),
      page_count_(other.page_count_),
      full_pages_(other.full_pages_),
      bitmap_(other.bitmap_),
      crc_groups_(other.crc_groups_.size()),
      fragments_(other.fragments_) {
  for (size_t w = 0; w < crc_groups_.size(); ++w) {
    if (other.crc_groups_[w]) {
      crc_groups_[w] = std::make_unique<uint32_t[]>(64);
      std::memcpy(crc_groups_[w].get(), other.crc_groups_[w].get(), 64 * sizeof(uint32_t));
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

void PageIndex::SetFull(uint64_t page, uint32_t crc) {
  if (page >= page_count_) {
    return;
  }
  uint64_t& word = bitmap_[page >> 6];
  const uint64_t bit = uint64_t{1} << (page & 63);
  if ((word & bit) == 0) {
    word |= bit;
    ++full_pages_;
  }
  *CrcSlot(page) = crc;
  fragments_.erase(page);
}

void PageIndex::SetFragment(uint64_t page, const Fragment& fragment) {
  if (page >= page_count_ || full(page)) {
    return;
  }
  fragments_[page] = fragment;
}

void PageIndex::Drop(uint64_t page) {
  if (page >= page_count_) {
    return;
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
  std::fill(bitmap_.begin(), bitmap_.end(), 0);
  for (auto& g : crc_groups_) {
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
  const uint64_t url_bytes = std::min<uint64_t>(info_.url.size(), kMaxUrlBytes);
  const uint64_t size = kIndexHeaderBytes + Pad8(url_bytes) + 8 * bitmap_.size()
                        + Pad8(4 * full_pages_) + kFragmentRecordBytes * fragments_.size()
                        + kTrailerBytes;
  out.assign(size, 0);
  uint8_t* h = out.data();
  std::memcpy(h, kMagic, 8);
  StoreLE<uint32_t>(h + 8, kIndexVersion);
  StoreLE<uint32_t>(h + 12, kIndexHeaderBytes);
  StoreLE<uint32_t>(h + 16, info_.page_size);
  StoreLE<uint32_t>(h + 20, 0);
  StoreLE<uint64_t>(h + 24, info_.origin_size);
  StoreLE<int64_t>(h + 32, info_.origin_mtime);
  StoreLE<uint64_t>(h + 40, info_.epoch);
  StoreLE<uint64_t>(h + 48, info_.generation);
  StoreLE<uint64_t>(h + 56, info_.frag_bytes);
  StoreLE<int64_t>(h + 64, info_.created_unix);
  StoreLE<int64_t>(h + 72, info_.validated_unix);
  StoreLE<uint64_t>(h + 80, page_count_);
  StoreLE<uint64_t>(h + 88, full_pages_);
  StoreLE<uint32_t>(h + 96, static_cast<uint32_t>(fragments_.size()));
  StoreLE<uint32_t>(h + 100, static_cast<uint32_t>(url_bytes));
  StoreLE<uint32_t>(h + 124, crc32c::Value(h, 124));
  size_t pos = kIndexHeaderBytes;
  std::memcpy(h + pos, info_.url.data(), url_bytes);
  pos += Pad8(url_bytes);
  for (uint64_t word : bitmap_) {
    StoreLE<uint64_t>(h + pos, word);
    pos += 8;
  }
  const size_t crc_start = pos;
  for (size_t w = 0; w < bitmap_.size(); ++w) {
    for (uint64_t bits = bitmap_[w]; bits != 0; bits &= bits - 1) {
      const auto bit = static_cast<unsigned>(std::countr_zero(bits));
      StoreLE<uint32_t>(h + pos, crc_groups_[w][bit]);
      pos += 4;
    }
  }
  pos = crc_start + Pad8(4 * full_pages_);
  std::vector<uint64_t> pages;
  pages.reserve(fragments_.size());
  for (const auto& entry : fragments_) {
    pages.push_back(entry.first);
  }
  std::sort(pages.begin(), pages.end());
  for (uint64_t page : pages) {
    const Fragment& f = fragments_.at(page);
    StoreLE<uint64_t>(h + pos, page);
    StoreLE<uint32_t>(h + pos + 8, f.lo);
    StoreLE<uint32_t>(h + pos + 12, f.hi);
    StoreLE<uint64_t>(h + pos + 16, f.offset);
    StoreLE<uint32_t>(h + pos + 24, f.crc);
    pos += kFragmentRecordBytes;
  }
  StoreLE<uint32_t>(h + pos, crc32c::Value(h, pos));
  std::memcpy(h + pos + 4, kTrailerMagic, 4);
}

Result<PageIndex> PageIndex::Decode(std::span<const uint8_t> bytes) {
  if (bytes.size() < kIndexHeaderBytes + kTrailerBytes) {
    return Corrupt("too short (" + std::to_string(bytes.size()) + " bytes)");
  }
  const uint8_t* h = bytes.data();
  if (std::memcmp(h, kMagic, 8) != 0) {
    return Corrupt("bad magic");
  }
  if (LoadLE<uint32_t>(h + 8) != kIndexVersion) {
    return Corrupt("unsupported version " + std::to_string(LoadLE<uint32_t>(h + 8)));
  }
  if (LoadLE<uint32_t>(h + 124) != crc32c::Value(h, 124)) {
    return Corrupt("header checksum mismatch");
  }
  if (LoadLE<uint32_t>(h + 12) != kIndexHeaderBytes || LoadLE<uint32_t>(h + 20) != 0) {
    return Corrupt("bad header size or flags");
  }
  for (size_t i = 104; i < 124; ++i) {
    if (h[i] != 0) {
      return Corrupt("reserved header bytes set");
    }
  }
  IndexInfo info;
  info.page_size = LoadLE<uint32_t>(h + 16);
  if (!ValidPageSize(info.page_size)) {
    return Corrupt("bad page size " + std::to_string(info.page_size));
  }
  info.origin_size = LoadLE<uint64_t>(h + 24);
  info.origin_mtime = LoadLE<int64_t>(h + 32);
  info.epoch = LoadLE<uint64_t>(h + 40);
  info.generation = LoadLE<uint64_t>(h + 48);
  info.frag_bytes = LoadLE<uint64_t>(h + 56);
  info.created_unix = LoadLE<int64_t>(h + 64);
  info.validated_unix = LoadLE<int64_t>(h + 72);
  const auto page_count = LoadLE<uint64_t>(h + 80);
  const auto full_pages = LoadLE<uint64_t>(h + 88);
  const uint64_t frag_count = LoadLE<uint32_t>(h + 96);
  const uint64_t url_bytes = LoadLE<uint32_t>(h + 100);
  if (page_count != PagesFor(info.origin_size, info.page_size)) {
    return Corrupt("page count does not match origin size");
  }
  if (url_bytes > kMaxUrlBytes || full_pages > page_count) {
    return Corrupt("bad url length or page counts");
  }
  // Every section must be backed by input bytes; check before multiplying.
  const uint64_t words = page_count / 64 + (page_count % 64 != 0 ? 1 : 0);
  if (words > bytes.size() / 8 || full_pages > bytes.size() / 4
      || frag_count > bytes.size() / kFragmentRecordBytes) {
    return Corrupt("counts exceed the file size");
  }
  const uint64_t expected = kIndexHeaderBytes + Pad8(url_bytes) + 8 * words + Pad8(4 * full_pages)
                            + kFragmentRecordBytes * frag_count + kTrailerBytes;
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
  info.url.assign(reinterpret_cast<const char*>(h + kIndexHeaderBytes), url_bytes);

  PageIndex index(std::move(info));
  index.fragments_.reserve(frag_count);
  size_t pos = kIndexHeaderBytes + Pad8(url_bytes);
  uint64_t bits_seen = 0;
  for (uint64_t w = 0; w < words; ++w) {
    index.bitmap_[w] = LoadLE<uint64_t>(h + pos);
    pos += 8;
    bits_seen += static_cast<uint64_t>(std::popcount(index.bitmap_[w]));
  }
  if (page_count % 64 != 0 && words > 0 && (index.bitmap_[words - 1] >> (page_count % 64)) != 0) {
    return Corrupt("bitmap bits past the last page");
  }
  if (bits_seen != full_pages) {
    return Corrupt("bitmap population does not match full_pages");
  }
  index.full_pages_ = full_pages;
  const size_t crc_start = pos;
  for (uint64_t w = 0; w < words; ++w) {
    for (uint64_t bits = index.bitmap_[w]; bits != 0; bits &= bits - 1) {
      const auto bit = static_cast<unsigned>(std::countr_zero(bits));
      *index.CrcSlot(w * 64 + bit) = LoadLE<uint32_t>(h + pos);
      pos += 4;
    }
  }
  pos = crc_start + Pad8(4 * full_pages);
  uint64_t last_page = 0;
  for (uint64_t i = 0; i < frag_count; ++i) {
    const uint8_t* r = h + pos;
    pos += kFragmentRecordBytes;
    const auto page = LoadLE<uint64_t>(r);
    Fragment f;
    f.lo = LoadLE<uint32_t>(r + 8);
    f.hi = LoadLE<uint32_t>(r + 12);
    f.offset = LoadLE<uint64_t>(r + 16);
    f.crc = LoadLE<uint32_t>(r + 24);
    if (LoadLE<uint32_t>(r + 28) != 0) {
      return Corrupt("fragment reserved field set");
    }
    if (page >= page_count || (i > 0 && page <= last_page) || index.full(page)) {
      return Corrupt("fragment page out of order, out of range or full");
    }
    const uint32_t len = index.PageLength(page);
    if (f.lo >= f.hi || f.hi > len || (f.lo == 0 && f.hi == len)) {
      return Corrupt("bad fragment interval");
    }
    if (f.offset > index.info_.frag_bytes || f.length() > index.info_.frag_bytes - f.offset) {
      return Corrupt("fragment past the end of the log");
    }
    index.fragments_.emplace(page, f);
    last_page = page;
  }
  return index;
}

}  // namespace ferry::cache
