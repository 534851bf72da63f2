// ReplicaView::Read: the read path of a replica's virtual file (docs/format/replica.md), which a
// cache handle that opened it calls (cache/replica_hooks.h).
//
// A request is cut at origin_size: the part before is the original file (byte tier, then
// origin, as without a replica) with the manifest's patches copied over it; the part after is
// the overlay: tree records from the manifest, baskets from the data file. Basket reads are
// grouped into runs over consecutive extents; a run whose requests tile whole extents exactly
// (a cluster's vector read in the access-order layout) is one preadv straight into the caller's
// buffers, anything else one pread into scratch. Every extent a run touches is checked against
// its CRC32C, or a sealed replica's (replica_seal.h) decrypted in place and checked against its
// GCM tag, wherever the run put it (the caller's buffers or scratch); a bad one (or a failed
// read) is counted and rebuilt from the original basket. A sealed extent that fails is zeroed
// by the check and then overwritten or failed: no unauthenticated byte is returned.
#include <sys/uio.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>

#include "base/crc32c.h"
#include "cache/stats.h"
#include "replica/relocate.h"
#include "replica/replica_view.h"
#include "rootio/key.h"
#include "rootio/rntuple_page_list.h"
#include "rootwrite/rntuple_page_writer.h"

namespace ferry::replica {
namespace {

// Reused by the reading thread (no allocation once warm).
struct VirtualScratch {
  std::vector<io::ReadRequest> original;
  std::vector<size_t> original_owner;
  std::vector<io::ReadRequest> overlay;
  std::vector<size_t> overlay_owner;
  std::vector<size_t> order;
  std::vector<iovec> iov;
  std::vector<std::span<uint8_t>> pieces;
  ByteVector run;
  ByteVector rebuilt;
};
thread_local VirtualScratch tls_virtual;

// A run of extents is read with one system call up to this size.
constexpr uint64_t kMaxRunBytes = 64ull << 20;

void Fold(Status& into, const Status& st) {
  if (into && !st) {
    into = st;
  }
}

// The parts [begin, end) of `order` that one run of extents [run_offset, run_end) serves, and
// where the run's bytes are once read: straight in the parts when they tile the run exactly
// (`exact`), else in the scratch buffer `run`.
class RunParts {
 public:
  RunParts(std::span<io::ReadRequest> parts,
           std::span<const size_t> order,
           size_t begin,
           size_t end,
           uint64_t run_offset,
           uint64_t run_end)
      : parts_(parts), order_(order.subspan(begin, end - begin)), run_offset_(run_offset) {
    exact_ = part(0).offset == run_offset;
    for (size_t k = 0; exact_ && k + 1 < order_.size(); ++k) {
      exact_ = part(k).offset + part(k).dest.size() == part(k + 1).offset;
    }
    const io::ReadRequest& tail = part(order_.size() - 1);
    exact_ = exact_ && tail.offset + tail.dest.size() == run_end;
  }

  bool exact() const { return exact_; }
  io::ReadRequest& part(size_t k) const { return parts_[order_[k]]; }
  size_t size() const { return order_.size(); }

  // Whether virtual offset v was read (exact: inside a part; else always).
  bool Holds(uint64_t v) const {
    if (!exact_) {
      return true;
    }
    for (size_t k = 0; k < size(); ++k) {
      const io::ReadRequest& p = part(k);
      if (v >= p.offset && v < p.offset + p.dest.size()) {
        return true;
      }
    }
    return false;
  }

  // Where extent e's bytes are, in order, into `out`: in exact mode the parts' pieces of it
  // (it may span parts), else its place in `run`.
  void ExtentPieces(const ReplicaExtent& e,
                    ByteVector& run,
                    std::vector<std::span<uint8_t>>& out) const {
    out.clear();
    if (!exact_) {
      out.emplace_back(run.data() + (e.offset - run_offset_), e.bytes);
      return;
    }
    for (uint64_t v = e.offset; v < e.end();) {
      size_t k = 0;
      while (k < size() && !(v >= part(k).offset && v < part(k).offset + part(k).dest.size())) {
        ++k;
      }
      const io::ReadRequest& p = part(k);
      const uint64_t n = std::min(e.end(), p.offset + p.dest.size()) - v;
      out.emplace_back(p.dest.data() + (v - p.offset), n);
      v += n;
    }
  }

  // Copies an extent's correct bytes `src` (starting at virtual `at`) into the parts.
  void Deliver(uint64_t at, std::span<const uint8_t> src) const {
    for (size_t k = 0; k < size(); ++k) {
      io::ReadRequest& p = part(k);
      const uint64_t a = std::max(at, p.offset);
      const uint64_t b = std::min(at + src.size(), p.offset + p.dest.size());
      if (a < b) {
        std::memcpy(p.dest.data() + (a - p.offset), src.data() + (a - at), b - a);
      }
    }
  }

  // Marks the parts that overlap [at, at + n) failed with st.
  void Fail(uint64_t at, uint64_t n, const Status& st) const {
    for (size_t k = 0; k < size(); ++k) {
      io::ReadRequest& p = part(k);
      if (at < p.offset + p.dest.size() && p.offset < at + n) {
        Fold(p.status, st);
      }
    }
  }

  uint64_t ServedBytes() const {
    uint64_t served = 0;
    for (size_t k = 0; k < size(); ++k) {
      served += part(k).status ? part(k).dest.size() : 0;
    }
    return served;
  }

 private:
  std::span<io::ReadRequest> parts_;
  std::span<const size_t> order_;
  uint64_t run_offset_;
  bool exact_ = false;
};

// An extent's unit encoded again from its original bytes, as the builder encoded it: a unit
// kept as stored is the original's bytes (a basket's fSeekKey set as the builder set it).
Result<uint32_t> ReencodeUnit(const ReplicaExtent& x,
                              std::span<const uint8_t> original,
                              ByteVector* scratch,
                              ByteVector* out) {
  if (x.as_stored) {
    out->assign(original.begin(), original.end());
    if (x.unit == ReplicaExtent::Unit::kBasket) {
      SetKeySeek({out->data(), out->size()}, x.offset);
    }
    return static_cast<uint32_t>(out->size());
  }
  if (x.unit == ReplicaExtent::Unit::kBasket) {
    return ReencodeBasket(original, x.setting, x.offset, scratch, out);
  }
  const bool sum = x.unit == ReplicaExtent::Unit::kPageWithChecksum;
  const size_t trailer = sum ? rootio::kPageChecksumSize : 0;
  if (original.size() < trailer || x.raw_bytes > static_cast<uint32_t>(INT32_MAX)) {
    return CorruptionError("RNTuple page of the replica does not fit its extent");
  }
  FERRY_TRY(rootio::DecodePayload(original.first(original.size() - trailer),
                                  static_cast<int32_t>(x.raw_bytes), scratch));
  ByteVector seal_scratch;
  FERRY_TRY(rootwrite::SealPage(x.setting, *scratch, sum, &seal_scratch, out));
  return static_cast<uint32_t>(out->size());
}

// Rebuilds extent `e` of `view` from the original unit into `out` (a replica fault's fallback).
Status RebuildExtent(const ReplicaView& view,
                     long e,
                     cache::OriginalReader& original,
                     ByteVector& out) {
  const ReplicaManifest& m = view.manifest();
  const ReplicaExtent& x = m.extents[static_cast<size_t>(e)];
  std::vector<uint8_t> bytes(x.original_bytes);
  io::ReadRequest r{x.original_offset, bytes, OkStatus()};
  bool missed = false;
  FERRY_TRY(original.ReadOriginal({&r, 1}, &missed));
  FERRY_TRY(r.status);
  // The codecs are deterministic for one library version (checked when the view opened), so
  // the same basket re-encoded the same way gives the same bytes.
  ByteVector scratch;
  out.clear();
  Result<uint32_t> size = ReencodeUnit(x, bytes, &scratch, &out);
  bool same = size && out.size() == x.bytes;
  if (same && view.sealer() != nullptr) {
    // The same plaintext under the same key and nonce seals to the same tag.
    std::vector<uint8_t> sealed(out.size());
    same =
        view.sealer()->SealExtent(static_cast<uint32_t>(e), x.offset, out, sealed.data()) == x.tag;
  } else if (same) {
    same = crc32c::Value(out.data(), out.size()) == x.crc;
  }
  if (!same) {
    return IoError("replica extent at " + std::to_string(x.offset) + " of " + m.url
                       + " is damaged and could not be rebuilt",
                   EIO);
  }
  return OkStatus();
}

// Whether extent `e` passes its check where the run put it: its CRC32C, or (sealed) its GCM
// tag, the bytes decrypted in place (zeroed when they do not authenticate).
bool CheckExtent(const ReplicaView& view, const RunParts& run, long e, VirtualScratch& vs) {
  const ReplicaExtent& x = view.manifest().extents[static_cast<size_t>(e)];
  run.ExtentPieces(x, vs.run, vs.pieces);
  if (const ReplicaSealer* sealer = view.sealer()) {
    return sealer->OpenExtent(static_cast<uint32_t>(e), x.offset, vs.pieces, x.tag);
  }
  uint32_t crc = 0;
  for (std::span<const uint8_t> p : vs.pieces) {
    crc = crc32c::Extend(crc, p.data(), p.size());
  }
  return crc == x.crc;
}

// Reads the extents [first, last] of `view` into the parts that lie in them.
void ReadExtentRun(const ReplicaView& view,
                   std::span<io::ReadRequest> parts,
                   std::span<const size_t> order,
                   size_t begin,
                   size_t end,
                   long first,
                   long last,
                   cache::OriginalReader& original,
                   cache::Counters& counters) {
  VirtualScratch& vs = tls_virtual;
  const ReplicaManifest& m = view.manifest();
  const ReplicaExtent& ea = m.extents[static_cast<size_t>(first)];
  const ReplicaExtent& eb = m.extents[static_cast<size_t>(last)];
  const uint64_t run_offset = ea.offset;
  const uint64_t run_bytes = eb.end() - ea.offset;
  const uint64_t file_offset = run_offset - view.baskets_begin();
  const RunParts run(parts, order, begin, end, run_offset, eb.end());

  bool read_ok = false;
  if (run.exact()) {
    vs.iov.clear();
    for (size_t k = 0; k < run.size(); ++k) {
      vs.iov.push_back({run.part(k).dest.data(), run.part(k).dest.size()});
    }
    const ssize_t n = ::preadv(view.data_fd(), vs.iov.data(), static_cast<int>(vs.iov.size()),
                               static_cast<off_t>(file_offset));
    read_ok = n == static_cast<ssize_t>(run_bytes);
  } else {
    vs.run.resize(run_bytes);
    read_ok = PreadFull(view.data_fd(), vs.run.data(), run_bytes, file_offset).has_value();
  }
  counters.Add(cache::Counter::kReplicaReads);
  view.ReadAhead(file_offset + run_bytes);

  for (long e = first; e <= last; ++e) {
    const ReplicaExtent& x = m.extents[static_cast<size_t>(e)];
    if (read_ok && run.Holds(x.offset) && CheckExtent(view, run, e, vs)) {
      if (!run.exact()) {
        run.Deliver(x.offset, {vs.run.data() + (x.offset - run_offset), x.bytes});
      }
      continue;
    }
    counters.Add(cache::Counter::kReplicaFaults);
    Status st = RebuildExtent(view, e, original, vs.rebuilt);
    if (st) {
      run.Deliver(x.offset, vs.rebuilt);
    } else {
      run.Fail(x.offset, x.bytes, st);
    }
  }
  counters.Add(cache::Counter::kBytesFromReplica, run.ServedBytes());
}

// Parts of the overlay of `view` (offsets >= origin_size()); statuses per part.
void ReadOverlay(const ReplicaView& view,
                 std::span<io::ReadRequest> parts,
                 cache::OriginalReader& original,
                 cache::Counters& counters) {
  VirtualScratch& vs = tls_virtual;
  const ReplicaManifest& m = view.manifest();
  const uint64_t begin = view.baskets_begin();
  // The tree-record slots come from the manifest; a part reaching into the baskets is split.
  uint64_t served = 0;
  vs.order.clear();
  for (size_t k = 0; k < parts.size(); ++k) {
    io::ReadRequest& p = parts[k];
    if (p.offset < begin) {
      const uint64_t n = std::min<uint64_t>(p.dest.size(), begin - p.offset);
      view.ReadHead(p.offset, p.dest.first(n));
      served += n;
      if (n == p.dest.size()) {
        continue;
      }
      p.dest = p.dest.subspan(n);  // the rest lies in the baskets (the caller's buffer moves on)
      p.offset = begin;
    }
    vs.order.push_back(k);
  }
  counters.Add(cache::Counter::kBytesFromReplica, served);
  std::sort(vs.order.begin(), vs.order.end(),
            [&](size_t a, size_t b) { return parts[a].offset < parts[b].offset; });
  // Group parts into runs of consecutive extents and read each run at once.
  size_t i = 0;
  while (i < vs.order.size()) {
    const io::ReadRequest& first = parts[vs.order[i]];
    const long e0 = m.ExtentAt(first.offset);
    long e1 = m.ExtentAt(first.offset + first.dest.size() - 1);
    size_t j = i + 1;
    for (; j < vs.order.size() && j - i < IOV_MAX; ++j) {
      const io::ReadRequest& q = parts[vs.order[j]];
      const long qa = m.ExtentAt(q.offset);
      const long qb = m.ExtentAt(q.offset + q.dest.size() - 1);
      if (qa > e1 + 1
          || m.extents[static_cast<size_t>(qb)].end() - m.extents[static_cast<size_t>(e0)].offset
                 > kMaxRunBytes) {
        break;
      }
      e1 = std::max(e1, qb);
    }
    ReadExtentRun(view, parts, vs.order, i, j, e0, e1, original, counters);
    i = j;
  }
}

}  // namespace

void ReplicaView::Read(std::span<io::ReadRequest> requests,
                       cache::OriginalReader& original,
                       cache::Counters& counters,
                       bool* missed_out) const {
  VirtualScratch& vs = tls_virtual;
  vs.original.clear();
  vs.original_owner.clear();
  vs.overlay.clear();
  vs.overlay_owner.clear();
  const uint64_t split = origin_size();
  for (size_t i = 0; i < requests.size(); ++i) {
    const io::ReadRequest& r = requests[i];
    const uint64_t end = r.offset + r.dest.size();
    if (r.dest.empty()) {
      continue;
    }
    if (r.offset < split) {
      const uint64_t n = std::min(end, split) - r.offset;
      vs.original.push_back({r.offset, r.dest.first(n), OkStatus()});
      vs.original_owner.push_back(i);
    }
    if (end > split) {
      const uint64_t start = std::max(r.offset, split);
      vs.overlay.push_back({start, r.dest.subspan(start - r.offset), OkStatus()});
      vs.overlay_owner.push_back(i);
    }
  }
  bool missed = false;
  if (!vs.original.empty()) {
    // ReadOriginal uses the thread's other scratch; ours stays intact.
    (void)original.ReadOriginal(vs.original, &missed);
    for (size_t k = 0; k < vs.original.size(); ++k) {
      const io::ReadRequest& part = vs.original[k];
      if (part.status) {
        ApplyPatches(part.offset, part.dest);
      }
      Fold(requests[vs.original_owner[k]].status, part.status);
    }
  }
  if (!vs.overlay.empty()) {
    // RebuildExtent may call ReadOriginal, which does not touch tls_virtual.
    ReadOverlay(*this, vs.overlay, original, counters);
    for (size_t k = 0; k < vs.overlay.size(); ++k) {
      Fold(requests[vs.overlay_owner[k]].status, vs.overlay[k].status);
    }
  }
  *missed_out = missed;
}

}  // namespace ferry::replica
