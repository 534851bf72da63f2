#include "rootio/rntuple_cluster_reader.h"

#include <algorithm>
#include <map>
#include <utility>

#include "rootio/dataset_impl.h"

namespace ferry::rootio {

Result<RntupleClusterReader> RntupleClusterReader::Make(const Rntuple& rntuple,
                                                        std::span<const std::string> leaves,
                                                        const ClusterReaderOptions& options) {
  RntupleClusterReader r;
  r.rntuple_ = &rntuple;
  r.options_ = options;
  r.options_.max_ranges_per_read = std::max<uint32_t>(1, options.max_ranges_per_read);
  for (const std::string& name : leaves) {
    r.leaves_.push_back(FERRY_TRY(ResolveRntupleLeaf(rntuple, name)));
  }
  for (size_t c = 0; c < rntuple.clusters().size(); ++c) {
    FERRY_TRY(r.PlanUnit(c));
  }
  return r;
}

Status RntupleClusterReader::PlanUnit(size_t cluster) {
  const ClusterInfo& info = rntuple_->clusters()[cluster];
  RntupleUnit unit;
  unit.cluster = cluster;
  unit.entries = {static_cast<int64_t>(info.first_entry),
                  static_cast<int64_t>(info.first_entry + info.entries)};
  uint64_t scratch_end = 0;
  for (const RntupleLeaf& leaf : leaves_) {
    unit.page_begin.push_back(unit.pages.size());
    FERRY_TRY(AppendLeafPages(*rntuple_, leaf, cluster, &unit.pages, &scratch_end));
  }
  unit.page_begin.push_back(unit.pages.size());
  // Each distinct page once in the buffer, in file order; the leaves' refs point at it.
  std::map<std::pair<uint32_t, uint32_t>, RntuplePageRef> distinct;
  for (const RntuplePageRef& p : unit.pages) {
    distinct.emplace(std::make_pair(p.column, p.page), p);
  }
  for (const auto& [key, ref] : distinct) {
    unit.fetch.push_back(ref);
  }
  std::sort(unit.fetch.begin(), unit.fetch.end(),
            [](const auto& a, const auto& b) { return a.offset < b.offset; });
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> placed;
  for (RntuplePageRef& p : unit.fetch) {
    p.buffer_offset = unit.bytes;
    unit.bytes += p.size;
    placed[{p.column, p.page}] = p.buffer_offset;
  }
  for (RntuplePageRef& p : unit.pages) {
    p.buffer_offset = placed[{p.column, p.page}];
  }
  bytes_ += unit.bytes;
  units_.push_back(std::move(unit));
  return OkStatus();
}

int RntupleClusterReader::ColumnOf(std::string_view name) const {
  for (size_t i = 0; i < leaves_.size(); ++i) {
    if (leaves_[i].path == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Status RntupleClusterReader::Fetch(size_t unit, ByteVector* buffer) const {
  const RntupleUnit& u = units_[unit];
  return FetchPages(*rntuple_, u.fetch, u.bytes, options_.max_ranges_per_read, buffer);
}

Status RntupleClusterReader::Decode(size_t unit,
                                    std::span<const uint8_t> buffer,
                                    RntupleScratch* scratch,
                                    std::vector<Column>* columns) const {
  const RntupleUnit& u = units_[unit];
  columns->resize(leaves_.size());
  scratch->ForgetOffsets();  // the buffer holds another fetch than the last call's
  // The last unit's columns share the scratch's offsets: let go of them, so that each
  // collection's offsets are decoded again into the same memory.
  for (Column& c : *columns) {
    c.offsets.clear();
  }
  for (size_t k = 0; k < leaves_.size(); ++k) {
    std::span<const RntuplePageRef> pages(u.pages.data() + u.page_begin[k],
                                          u.page_begin[k + 1] - u.page_begin[k]);
    FERRY_TRY(DecodeLeafCluster(*rntuple_, leaves_[k], u.cluster, pages, buffer, scratch,
                                &(*columns)[k]));
  }
  return OkStatus();
}

Status RntupleClusterReader::Decode(size_t unit,
                                    std::span<const uint8_t> buffer,
                                    DatasetScratch* scratch,
                                    std::vector<Column>* columns) const {
  return Decode(unit, buffer, &scratch->parts().rntuple, columns);
}

}  // namespace ferry::rootio
