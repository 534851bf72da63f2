// Entry's read side: serving held bytes from the data file and the fragment log, and the
// zero-copy check (entry.h, docs/format/page-store.md).
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/crc32c.h"
#include "base/fd.h"
#include "cache/entry.h"
#include "cache/entry_store.h"
#include "cache/page_crc.h"

namespace ferry::cache {
namespace {

// The interval [a, b) (file offsets) that `page` holds in the data file: a full page, or a
// fragment kept there (Fragment::in_data). False when the page holds nothing there.
bool DataInterval(const PageIndex& index, uint64_t page, uint64_t& a, uint64_t& b) {
  const uint64_t pstart = page * index.info().page_size;
  if (index.full(page)) {
    a = pstart;
    b = pstart + index.PageLength(page);
    return true;
  }
  const Fragment* f = index.fragment(page);
  if (f == nullptr || !f->in_data) {
    return false;
  }
  a = pstart + f->lo;
  b = pstart + f->hi;
  return true;
}

// True when every byte of [offset, end) (offset < end) is in the data file: whole pages inside,
// and at the two edges full pages or fragments there that cover the range's part of them.
// `span_begin`/`span_end` get the extent of the edge pages' held intervals.
bool InDataFile(const PageIndex& index,
                uint64_t offset,
                uint64_t end,
                uint64_t& span_begin,
                uint64_t& span_end) {
  const uint64_t ps = index.info().page_size;
  const uint64_t first = offset / ps;
  const uint64_t last = (end - 1) / ps;
  uint64_t a = 0;
  uint64_t b = 0;
  if (!DataInterval(index, first, a, b) || a > offset || b < std::min(end, (first + 1) * ps)) {
    return false;
  }
  span_begin = a;
  span_end = b;
  if (last == first) {
    return true;
  }
  for (uint64_t p = first + 1; p < last; ++p) {
    if (!index.full(p)) {
      return false;
    }
  }
  if (!DataInterval(index, last, a, b) || a > last * ps || b < end) {
    return false;
  }
  span_end = b;
  return true;
}

// The CRC an unencrypted index keeps for what `page` holds (a full page's or its fragment's).
uint32_t HeldCrc(const PageIndex& index, uint64_t page) {
  if (index.full(page)) {
    return index.crc(page);
  }
  const Fragment* f = index.fragment(page);
  return f != nullptr ? f->crc : 0;
}

// One Serve call: the held bytes of [offset, offset + dest.size()) into dest, the rest into
// `missing` (adjacent gaps of one request merged). A page or fragment whose CRC does not match
// is listed in scratch.bad and reported missing, never served.
class ServeCall {
 public:
  ServeCall(const PageIndex& index,
            const PageSealer* sealer,
            int data_fd,
            int frag_fd,
            Counters& counters,
            size_t request,
            uint64_t offset,
            std::span<uint8_t> dest,
            ServeScratch& s,
            std::vector<Piece>& missing)
      : index_(index),
        sealer_(sealer),
        data_fd_(data_fd),
        frag_fd_(frag_fd),
        counters_(counters),
        request_(request),
        offset_(offset),
        dest_(dest),
        s_(s),
        missing_(missing) {}

  Result<uint64_t> Run() {
    if (sealer_ == nullptr && !dest_.empty() && (VerifiedRead() || FERRY_TRY(OneRead()))) {
      return served_;
    }
    const uint64_t end = offset_ + dest_.size();
    const uint64_t ps = index_.info().page_size;
    uint64_t pos = offset_;
    while (pos < end) {
      const uint64_t page = pos / ps;
      const uint64_t pstart = page * ps;
      const uint32_t plen = index_.PageLength(page);
      const uint64_t seg_end = std::min(end, pstart + plen);
      if (plen == 0) {  // past the end of the entry: the caller clips, so this is a bug guard
        Miss(pos, end);
        break;
      }
      if (index_.full(page) && pos == pstart && seg_end == pstart + plen) {
        pos = FERRY_TRY(FullRun(page, end));
        continue;
      }
      if (index_.full(page)) {
        FERRY_TRY(PartOfFullPage(page, pos, seg_end));
      } else if (const Fragment* f = index_.fragment(page)) {
        FERRY_TRY(FromFragment(page, *f, pos, seg_end));
      } else {
        Miss(pos, seg_end);
      }
      pos = seg_end;
    }
    return served_;
  }

 private:
  void Miss(uint64_t a, uint64_t b) {
    if (a >= b) {
      return;
    }
    if (!missing_.empty() && missing_.back().request == request_
        && missing_.back().offset + missing_.back().length == a) {
      missing_.back().length += b - a;
      return;
    }
    missing_.push_back({request_, a, b - a});
  }

  // A page whose data-file bytes were just checked (unencrypted: an encrypted page is opened in
  // the reader's memory, never sent from the file).
  void MarkVerified(uint64_t page) const {
    if (VerifiedPages* v = index_.verified(); v != nullptr && sealer_ == nullptr) {
      v->Mark(page);
    }
  }

  uint8_t* Scratch(size_t n) {
    if (s_.page.size() < n) {
      s_.page.resize(std::max<size_t>(n, index_.info().page_size));
    }
    return s_.page.data();
  }

  // A pread into buf, counted; a short read is reported as a CRC failure by the caller, any
  // other error ends the call.
  Result<bool> Read(int fd, uint8_t* buf, uint64_t n, uint64_t at) {
    Status st = PreadFull(fd, buf, n, at);
    counters_.Add(Counter::kDiskReads);
    if (!st && st.error().code() != ErrorCode::kShortRead) {
      return std::move(st).error();
    }
    return st.has_value();
  }

  // The whole request with one read of exactly its bytes, unchecked, when every byte of it is
  // in the data file and every page it touches was verified by this process since the page
  // last changed: the rule of zero-copy serving (verified_pages.h), which would send these
  // bytes from the file unchecked too. A warm pass of the site proxy reads its vector reads
  // here; checking them again cost it a CRC of every byte and of the edge pages' held bytes
  // beside. False (nothing served) when the request does not qualify or the read came back
  // short or failed: the checking paths below then read it and tell.
  bool VerifiedRead() {
    const VerifiedPages* v = index_.verified();
    const uint64_t ps = index_.info().page_size;
    const uint64_t end = offset_ + dest_.size();
    uint64_t a = 0;
    uint64_t b = 0;
    if (v == nullptr || !v->AllMarked(offset_ / ps, (end - 1) / ps)
        || !InDataFile(index_, offset_, end, a, b)) {
      return false;
    }
    ssize_t got = -1;
    do {
      got = ::pread(data_fd_, dest_.data(), dest_.size(), static_cast<off_t>(offset_));
    } while (got < 0 && errno == EINTR);
    counters_.Add(Counter::kDiskReads);
    if (got != static_cast<ssize_t>(dest_.size())) {
      return false;
    }
    served_ += dest_.size();
    return true;
  }

  // The whole request with one read of the data file, when every byte of it is there
  // (InDataFile; docs/format/page-store.md, "Fragments in the data file"). The read spans the
  // edge pages' held intervals so that each is checked whole: one preadv whose first and last
  // pieces land in scratch. A page failing its check is reported as the page-by-page path
  // does. False (nothing served, nothing reported) when the request does not
  // qualify or the read came back short (a punched or torn page): the page-by-page path below
  // then reads what it can.
  Result<bool> OneRead() {
    const uint64_t ps = index_.info().page_size;
    const uint64_t end = offset_ + dest_.size();
    uint64_t a = 0;
    uint64_t b = 0;
    if (!InDataFile(index_, offset_, end, a, b)) {
      return false;
    }
    b = std::max(b, end);
    uint8_t* s = Scratch(2 * ps);
    const uint64_t head = offset_ - a;
    const uint64_t tail = b - end;
    iovec iov[3];
    int n = 0;
    if (head > 0) {
      iov[n++] = {s, head};
    }
    iov[n++] = {dest_.data(), dest_.size()};
    if (tail > 0) {
      iov[n++] = {s + ps, tail};
    }
    ssize_t got = -1;
    do {
      got = ::preadv(data_fd_, iov, n, static_cast<off_t>(a));
    } while (got < 0 && errno == EINTR);
    counters_.Add(Counter::kDiskReads);
    if (got != static_cast<ssize_t>(b - a)) {
      return false;  // short (a torn or punched page) or failed: the careful path tells
    }
    // Each page checked whole; a bad one is reported (dropped and fetched again, so that its
    // copy in the data file is rewritten), the others served.
    for (uint64_t p = offset_ / ps; p <= (end - 1) / ps; ++p) {
      uint64_t pa = 0;
      uint64_t pb = 0;
      DataInterval(index_, p, pa, pb);
      const uint64_t lo = std::max(offset_, p * ps);
      const uint64_t hi = std::min(end, p * ps + index_.PageLength(p));
      if (SpanCrc(pa, pb, a, s, s + ps) != HeldCrc(index_, p)) {
        s_.bad.push_back(p);
        Miss(lo, hi);
      } else {
        served_ += hi - lo;
        MarkVerified(p);
      }
    }
    return true;
  }

  // CRC32C of the file bytes [pa, pb) read by OneRead: [a, offset_) in `head`, the request in
  // dest_, the rest from `tail`.
  uint32_t SpanCrc(
      uint64_t pa, uint64_t pb, uint64_t a, const uint8_t* head, const uint8_t* tail) const {
    const uint64_t end = offset_ + dest_.size();
    if (pa >= offset_ && pb <= end) {
      return PageCrc(dest_.data() + (pa - offset_), pb - pa);
    }
    uint32_t crc = 0;
    if (pa < offset_) {
      crc = crc32c::Extend(crc, head + (pa - a), std::min(pb, offset_) - pa);
    }
    const uint64_t da = std::max(pa, offset_);
    const uint64_t db = std::min(pb, end);
    if (da < db) {
      crc = crc32c::Extend(crc, dest_.data() + (da - offset_), db - da);
    }
    if (pb > end) {
      const uint64_t ta = std::max(pa, end);
      crc = crc32c::Extend(crc, tail + (ta - end), pb - ta);
    }
    return crc;
  }

  // A run of whole pages inside the request from `page` on: one pread straight into the
  // caller's buffer, then each page's CRC (or, encrypted, each page opened in place: AES-GCM
  // decrypts at memory speed, so the warm path keeps its single copy). Returns where the run
  // ended.
  Result<uint64_t> FullRun(uint64_t page, uint64_t end) {
    const uint64_t ps = index_.info().page_size;
    const uint64_t pstart = page * ps;
    uint64_t last = page;
    uint64_t run_end = pstart + index_.PageLength(page);
    while (last - page < 255 && index_.full(last + 1)) {
      const uint64_t qend = (last + 1) * ps + index_.PageLength(last + 1);
      if (qend > end) {
        break;
      }
      ++last;
      run_end = qend;
    }
    const bool ok =
        FERRY_TRY(Read(data_fd_, dest_.data() + (pstart - offset_), run_end - pstart, pstart));
    for (uint64_t k = page; k <= last; ++k) {
      const uint64_t kstart = k * ps;
      const uint32_t klen = index_.PageLength(k);
      if (!ok || !CheckPageBytes(index_, sealer_, k, {dest_.data() + (kstart - offset_), klen})) {
        s_.bad.push_back(k);
        Miss(kstart, kstart + klen);
      } else {
        served_ += klen;
        MarkVerified(k);
      }
    }
    return run_end;
  }

  // [pos, seg_end) of a full page the request covers only in part: through the scratch page.
  Status PartOfFullPage(uint64_t page, uint64_t pos, uint64_t seg_end) {
    const uint64_t pstart = page * index_.info().page_size;
    const uint32_t plen = index_.PageLength(page);
    uint8_t* buf = Scratch(plen);
    const bool ok = FERRY_TRY(Read(data_fd_, buf, plen, pstart));
    if (!ok || !CheckPageBytes(index_, sealer_, page, {buf, plen})) {
      s_.bad.push_back(page);
      Miss(pos, seg_end);
    } else {
      std::memcpy(dest_.data() + (pos - offset_), buf + (pos - pstart), seg_end - pos);
      served_ += seg_end - pos;
      MarkVerified(page);
    }
    return OkStatus();
  }

  // [pos, seg_end) of a page that holds fragment f: its overlap served, the rest missing.
  Status FromFragment(uint64_t page, const Fragment& f, uint64_t pos, uint64_t seg_end) {
    const uint64_t pstart = page * index_.info().page_size;
    const uint64_t flo = pstart + f.lo;
    const uint64_t fhi = pstart + f.hi;
    const uint64_t a = std::max(pos, flo);
    const uint64_t b = std::min(seg_end, fhi);
    if (a >= b) {
      Miss(pos, seg_end);
      return OkStatus();
    }
    // A fragment wholly inside the request goes straight to the caller's buffer.
    const bool direct = a == flo && b == fhi;
    uint8_t* buf = direct ? dest_.data() + (flo - offset_) : Scratch(f.length());
    const bool ok = f.in_data ? FERRY_TRY(Read(data_fd_, buf, f.length(), flo))
                              : FERRY_TRY(Read(frag_fd_, buf, f.length(), f.offset));
    if (!ok || !CheckFragmentBytes(sealer_, page, f, {buf, f.length()})) {
      s_.bad.push_back(page);
      Miss(pos, seg_end);
      return OkStatus();
    }
    if (f.in_data) {
      MarkVerified(page);  // its bytes in the data file just checked
    }
    Miss(pos, a);
    if (!direct) {
      std::memcpy(dest_.data() + (a - offset_), buf + (a - flo), b - a);
    }
    served_ += b - a;
    Miss(b, seg_end);
    return OkStatus();
  }

  const PageIndex& index_;
  const PageSealer* const sealer_;
  const int data_fd_;
  const int frag_fd_;
  Counters& counters_;
  const size_t request_;
  const uint64_t offset_;
  const std::span<uint8_t> dest_;
  ServeScratch& s_;
  std::vector<Piece>& missing_;
  uint64_t served_ = 0;
};

}  // namespace

Result<uint64_t> Entry::Serve(size_t request,
                              uint64_t offset,
                              std::span<uint8_t> dest,
                              ServeScratch& s,
                              std::vector<Piece>& missing) {
  return ServeCall(index_, sealer_.get(), data_fd_.get(), frag_fd_.get(), counters_, request,
                   offset, dest, s, missing)
      .Run();
}

int Entry::VerifiedDataFd(uint64_t offset, uint64_t length) {
  if (length == 0 || sealer_ != nullptr || failed()) {
    return -1;
  }
  ReaderLock lock(mu_);
  const VerifiedPages* v = index_.verified();
  const uint64_t ps = page_size_;
  uint64_t a = 0;
  uint64_t b = 0;
  if (v == nullptr || offset + length > size_
      || !v->AllMarked(offset / ps, (offset + length - 1) / ps)
      || !InDataFile(index_, offset, offset + length, a, b)) {
    return -1;
  }
  return data_fd_.get();
}

void Entry::AttachVerified(
    const std::function<std::shared_ptr<VerifiedPages>(uint64_t, uint64_t)>& get) {
  if (sealer_ != nullptr) {
    return;  // never sent from the file: nothing to track
  }
  {
    ReaderLock lock(mu_);  // every later open of the entry: no exclusive lock for nothing
    if (index_.verified() != nullptr) {
      return;
    }
  }
  WriterLock lock(mu_);
  if (index_.verified() == nullptr) {
    index_.AttachVerified(get(epoch_, index_.page_count()));
  }
}

}  // namespace ferry::cache
