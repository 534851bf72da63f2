#include "rootio/storage.h"

#include <algorithm>
#include <bit>

#include "rootio/basket.h"

namespace ferry::rootio {

std::string BranchStorage::CodecName() const {
  // Baskets stored raw because compression did not shrink them do not make a branch "mixed".
  uint32_t compressed = algorithms & ~(1u << static_cast<unsigned>(codec::Algorithm::kNone));
  if (compressed == 0) {
    return "none";
  }
  if (std::popcount(compressed) > 1) {
    return "mixed";
  }
  auto a = static_cast<codec::Algorithm>(std::countr_zero(compressed));
  return std::string(codec::AlgorithmName(a));
}

Result<std::vector<BranchStorage>> SurveyStorage(const Tree& tree) {
  const TreeInfo& info = tree.info();
  std::vector<BranchStorage> out(info.branches.size());
  constexpr size_t kProbe = 512;
  struct Probe {
    size_t branch;
    size_t basket;
  };
  std::vector<Probe> probes;
  std::vector<io::ReadRequest> reqs;
  std::vector<std::vector<uint8_t>> bufs;
  for (size_t bi = 0; bi < info.branches.size(); ++bi) {
    const Branch& b = info.branches[bi];
    for (size_t k = 0; k < b.baskets.size(); ++k) {
      const BasketRef& r = b.baskets[k];
      if (r.embedded >= 0) {
        auto n = b.embedded[static_cast<size_t>(r.embedded)].data.size();
        out[bi].zbytes += n;
        out[bi].bytes += n;
        out[bi].embedded_baskets += 1;
        out[bi].algorithms |= 1u << static_cast<unsigned>(codec::Algorithm::kNone);
        continue;
      }
      probes.push_back({bi, k});
      bufs.emplace_back(std::min<size_t>(kProbe, r.bytes));
    }
  }
  reqs.reserve(probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    const BasketRef& r = info.branches[probes[i].branch].baskets[probes[i].basket];
    reqs.push_back({r.seek, bufs[i], {}});
  }
  // One vector read, in slices that stay within XRootD's chunk-count limit.
  constexpr size_t kSlice = 1024;
  for (size_t s = 0; s < reqs.size(); s += kSlice) {
    auto slice = std::span<io::ReadRequest>(reqs).subspan(s, std::min(kSlice, reqs.size() - s));
    FERRY_TRY_CTX(tree.source().ReadV(slice), "basket headers of tree " + info.name);
  }
  for (size_t i = 0; i < probes.size(); ++i) {
    const Branch& b = info.branches[probes[i].branch];
    auto h = ParseBasketHeader(bufs[i]);
    if (!h.has_value()) {
      return std::move(h).error().AddContext("branch " + b.name + " > basket "
                                             + std::to_string(probes[i].basket));
    }
    BranchStorage& s = out[probes[i].branch];
    s.disk_baskets += 1;
    s.zbytes += static_cast<uint64_t>(h->key.nbytes);
    s.bytes += static_cast<uint64_t>(h->key.keylen) + static_cast<uint64_t>(h->key.objlen);
    codec::Algorithm a = codec::Algorithm::kNone;
    if (h->key.compressed() && bufs[i].size() > h->key.keylen) {
      a = codec::DetectAlgorithm(std::span<const uint8_t>(bufs[i]).subspan(h->key.keylen));
    }
    s.algorithms |= 1u << static_cast<unsigned>(a);
  }
  return out;
}

}  // namespace ferry::rootio
