#include "rootwrite/rntuple_writer.h"

#include <algorithm>
#include <cstring>

#include "base/version.h"
#include "rootwrite/column_batch.h"
#include "rootwrite/rntuple_envelope_writer.h"
#include "rootwrite/rntuple_page_writer.h"

namespace ferry::rootwrite {
namespace {

using rootio::ColumnType;

constexpr std::string_view kBlobClass = "RBlob";
// What ROOT's TKey puts in the title of an object that is not a TNamed: the anchor's key
// carries it in every ROOT-written file (data/rntuple).
constexpr std::string_view kAnchorTitle = "object title";

}  // namespace

// One physical column being written: its open page (native values) and the stored pages of
// the open cluster, back to back with their checksums, located relative to `sealed`.
struct RntupleWriter::ColumnSink {
  ColumnType type = ColumnType::kBit;
  uint16_t bits = 0;
  size_t native_size = 0;
  size_t page_capacity = 0;  // elements per page
  ByteVector open;
  size_t open_elements = 0;
  ByteVector sealed;
  std::vector<rootio::PageInfo> pages;
  uint64_t cluster_elements = 0;  // sealed and open, in the open cluster
  uint64_t element_offset = 0;    // elements of the earlier clusters
  uint64_t items = 0;             // Index columns: the collection's items in the cluster
};

RntupleWriter::RntupleWriter(FileWriter& file, RntupleOptions options)
    : file_(&file),
      options_(std::move(options)),
      setting_(options_.compression.value_or(file.options().compression)) {}

RntupleWriter::~RntupleWriter() = default;

Error RntupleWriter::Fail(Error error) {
  error.AddContext("RNTuple " + options_.name);
  failure_ = std::make_unique<Error>(error);
  return error;
}

Status RntupleWriter::CheckOpen() const {
  if (failure_) {
    return Error(*failure_);
  }
  if (closed_) {
    return InvalidArgumentError("RNTuple " + options_.name + " is already closed");
  }
  return OkStatus();
}

Result<int32_t> RntupleWriter::AddBranch(const BranchSpec& spec) {
  FERRY_TRY(CheckOpen());
  if (frozen_) {
    return InvalidArgumentError("branch " + spec.name + " declared after the first entry");
  }
  specs_.push_back(spec);
  int32_t counter = -1;
  Status st = CheckRntupleBranch(specs_, specs_.size() - 1, &counter);
  if (!st.has_value()) {
    specs_.pop_back();
    return std::move(st).error();
  }
  return static_cast<int32_t>(specs_.size() - 1);
}

// Lays out the schema and writes the header envelope: from here on the schema is fixed.
Status RntupleWriter::Freeze() {
  const bool split = setting_.algorithm != codec::Algorithm::kNone;
  model_ = FERRY_TRY(BuildRntupleModel(specs_, split));
  sinks_.resize(model_.schema.columns.size());
  for (size_t i = 0; i < sinks_.size(); ++i) {
    ColumnSink& s = sinks_[i];
    s.type = static_cast<ColumnType>(model_.schema.columns[i].type);
    s.bits = model_.schema.columns[i].bits;
    s.native_size = NativeElementSize(s.type);
    s.page_capacity = std::max<size_t>(1, options_.page_bytes * 8 / s.bits);
  }
  rootio::Header header;
  header.name = options_.name;
  header.description = options_.description;
  header.writer = std::string("ferry ") + Version();
  header.schema = model_.schema;
  std::vector<uint8_t> envelope = SerializeHeader(header);
  header_checksum_ = EnvelopeChecksum(envelope);
  header_link_ = FERRY_TRY(WriteEnvelope(envelope));
  frozen_ = true;
  return OkStatus();
}

Result<rootio::EnvelopeLink> RntupleWriter::WriteEnvelope(const std::vector<uint8_t>& envelope) {
  RecordSlot slot = file_->NextRecord(kBlobClass, "", "");
  RecordInfo info = FERRY_TRY(file_->WriteRecord(slot, kBlobClass, "", "", envelope, setting_));
  rootio::EnvelopeLink link;
  link.length = envelope.size();
  link.locator.offset = slot.seek + slot.key_len;
  link.locator.size = static_cast<uint64_t>(info.nbytes) - slot.key_len;
  zip_bytes_ += static_cast<int64_t>(link.locator.size);
  return link;
}

Status RntupleWriter::WriteColumns(std::span<const rootio::Column* const> columns) {
  FERRY_TRY(CheckOpen());
  if (!frozen_) {
    Status st = Freeze();
    if (!st.has_value()) {
      return Fail(std::move(st).error());
    }
  }
  int64_t n = 0;
  Status ok = CheckColumnBatch(specs_, model_.counter_branch, columns, &n, &counts_);
  if (!ok.has_value()) {
    return Fail(std::move(ok).error());
  }
  // Segments of check_entries entries: a cluster can end inside a batch.
  const int64_t step = std::max<int64_t>(1, options_.check_entries);
  for (int64_t a = 0; a < n; a += step) {
    const int64_t b = std::min(n, a + step);
    Status st = AppendEntries(columns, a, b);
    if (st.has_value() && ClusterFull()) {
      st = CommitCluster();
    }
    if (!st.has_value()) {
      return Fail(std::move(st).error());
    }
  }
  return OkStatus();
}

Status RntupleWriter::AppendEntries(std::span<const rootio::Column* const> columns,
                                    int64_t a,
                                    int64_t b) {
  const auto ua = static_cast<size_t>(a);
  const auto ub = static_cast<size_t>(b);
  for (size_t i = 0; i < specs_.size(); ++i) {
    const rootio::Column& c = *columns[i];
    const BranchRoute& route = model_.routes[i];
    ColumnSink& sink = sinks_[route.column];
    const size_t vs = c.value_size();
    switch (route.kind) {
      case BranchRoute::Kind::kScalar: {
        const size_t len = c.fixed_len;
        FERRY_TRY(Append(sink, c.bytes.data() + ua * len * vs, (ub - ua) * len));
        break;
      }
      case BranchRoute::Kind::kMember:
        FERRY_TRY(Append(sink, c.bytes.data() + c.offsets[ua] * vs, c.offsets[ub] - c.offsets[ua]));
        break;
      case BranchRoute::Kind::kCounter: {
        const std::vector<uint64_t>& counts = counts_[i];
        FERRY_TRY(AppendOffsets(sink, ua, ub, [&](size_t e) { return counts[e]; }));
        break;
      }
      case BranchRoute::Kind::kString:
        FERRY_TRY(
            AppendOffsets(sink, ua, ub, [&](size_t e) { return c.offsets[e + 1] - c.offsets[e]; }));
        FERRY_TRY(Append(sinks_[route.column + 1], c.bytes.data() + c.offsets[ua],
                         c.offsets[ub] - c.offsets[ua]));
        break;
    }
  }
  entries_ += b - a;
  return OkStatus();
}

// Index columns hold each entry's end offset, counted from the cluster's start.
template <class LengthOf>
Status RntupleWriter::AppendOffsets(ColumnSink& sink, size_t a, size_t b, LengthOf length_of) {
  index_scratch_.resize(b - a);
  for (size_t e = a; e < b; ++e) {
    sink.items += length_of(e);
    index_scratch_[e - a] = sink.items;
  }
  return Append(sink, reinterpret_cast<const uint8_t*>(index_scratch_.data()),
                index_scratch_.size());
}

Status RntupleWriter::Append(ColumnSink& sink, const uint8_t* values, size_t count) {
  sink.cluster_elements += count;
  while (count > 0) {
    const size_t n = std::min(count, sink.page_capacity - sink.open_elements);
    const size_t bytes = n * sink.native_size;
    const size_t at = sink.open.size();
    sink.open.resize(at + bytes);
    std::memcpy(sink.open.data() + at, values, bytes);
    sink.open_elements += n;
    values += bytes;
    count -= n;
    if (sink.open_elements == sink.page_capacity) {
      FERRY_TRY(SealOpenPage(sink));
    }
  }
  return OkStatus();
}

Status RntupleWriter::SealOpenPage(ColumnSink& sink) {
  if (sink.open_elements == 0) {
    return OkStatus();
  }
  EncodePage(sink.type, sink.open, sink.open_elements, &encoded_);
  FERRY_TRY(SealPage(setting_, encoded_, options_.page_checksums, &compress_scratch_, &sealed_));
  rootio::PageInfo page;
  page.elements = static_cast<uint32_t>(sink.open_elements);
  page.has_checksum = options_.page_checksums;
  page.locator.offset = sink.sealed.size();  // relative until the cluster's blob is placed
  page.locator.size = sealed_.size() - (page.has_checksum ? kPageChecksumSize : 0);
  sink.pages.push_back(page);
  sink.sealed.insert(sink.sealed.end(), sealed_.begin(), sealed_.end());
  cluster_zipped_ += sealed_.size();
  cluster_unzipped_ += encoded_.size();
  zip_bytes_ += static_cast<int64_t>(sealed_.size());
  tot_bytes_ += static_cast<int64_t>(encoded_.size());
  sink.open.resize(0);
  sink.open_elements = 0;
  return OkStatus();
}

bool RntupleWriter::ClusterFull() const {
  uint64_t open = 0;
  for (const ColumnSink& s : sinks_) {
    open += (s.open_elements * s.bits + 7) / 8;
  }
  const uint64_t unzipped = cluster_unzipped_ + open;
  // The open pages are not compressed yet: estimate them at the cluster's ratio so far.
  const double ratio = cluster_unzipped_ > 0 ? static_cast<double>(cluster_zipped_)
                                                   / static_cast<double>(cluster_unzipped_)
                                             : 1.0;
  const double zipped = static_cast<double>(cluster_zipped_) + ratio * static_cast<double>(open);
  return zipped >= static_cast<double>(options_.zipped_cluster_bytes)
         || unzipped >= options_.max_unzipped_cluster_bytes;
}

Status RntupleWriter::CommitCluster() {
  const int64_t entries = entries_ - cluster_first_;
  if (entries == 0) {
    return OkStatus();
  }
  for (ColumnSink& s : sinks_) {
    FERRY_TRY(SealOpenPage(s));
  }
  // One RBlob holds the cluster's pages, column after column (as ROOT's buffered writer
  // does), so that a reader of a few columns reads a few contiguous ranges. The columns' page
  // runs are written one after the other, never gathered into one buffer.
  RecordSlot slot = file_->NextRecord(kBlobClass, "", "");
  uint64_t at = slot.seek + slot.key_len;
  rootio::ClusterInfo cluster;
  cluster.first_entry = static_cast<uint64_t>(cluster_first_);
  cluster.entries = static_cast<uint64_t>(entries);
  cluster.columns.resize(sinks_.size());
  std::vector<std::span<const uint8_t>> runs;
  for (size_t i = 0; i < sinks_.size(); ++i) {
    ColumnSink& s = sinks_[i];
    rootio::ColumnPages& pages = cluster.columns[i];
    pages.element_offset = s.element_offset;
    pages.compression = static_cast<uint32_t>(setting_.RootSetting());
    pages.pages = std::move(s.pages);
    for (rootio::PageInfo& p : pages.pages) {
      p.locator.offset += at;
    }
    at += s.sealed.size();
    runs.emplace_back(s.sealed);
  }
  if (at - slot.seek - slot.key_len > kDefaultMaxKeySize) {
    return UnsupportedError("a cluster of " + std::to_string(at - slot.seek - slot.key_len)
                            + " stored bytes needs more than one key; lower the cluster size");
  }
  FERRY_TRY(file_->WriteRawRecord(slot, kBlobClass, "", "", runs));
  for (ColumnSink& s : sinks_) {
    s.element_offset += s.cluster_elements;
    s.cluster_elements = 0;
    s.items = 0;
    s.sealed.resize(0);
    s.pages.clear();
  }
  clusters_.push_back(std::move(cluster));
  if (first_cluster_entries_ == 0) {
    first_cluster_entries_ = entries;
  }
  cluster_first_ = entries_;
  cluster_zipped_ = 0;
  cluster_unzipped_ = 0;
  return OkStatus();
}

Status RntupleWriter::Close() {
  FERRY_TRY(CheckOpen());
  Status st = Finish();
  if (!st.has_value()) {
    return Fail(std::move(st).error());
  }
  closed_ = true;
  return OkStatus();
}

Status RntupleWriter::Finish() {
  if (!frozen_) {
    FERRY_TRY(Freeze());
  }
  FERRY_TRY(CommitCluster());
  rootio::Footer footer;
  footer.header_checksum = header_checksum_;
  if (!clusters_.empty()) {
    // One cluster group for the whole RNTuple, as ROOT writes a dataset committed once.
    rootio::PageList page_list{header_checksum_, clusters_};
    rootio::ClusterGroup group;
    group.entry_span = static_cast<uint64_t>(entries_);
    group.clusters = static_cast<uint32_t>(clusters_.size());
    group.page_list = FERRY_TRY(WriteEnvelope(SerializePageList(page_list)));
    footer.groups.push_back(group);
  }
  rootio::EnvelopeLink footer_link = FERRY_TRY(WriteEnvelope(SerializeFooter(footer)));
  return WriteAnchor(footer_link);
}

Status RntupleWriter::WriteAnchor(const rootio::EnvelopeLink& footer) {
  rootio::Anchor a;
  a.epoch = kRntupleEpoch;
  a.seek_header = header_link_.locator.offset;
  a.nbytes_header = header_link_.locator.size;
  a.len_header = header_link_.length;
  a.seek_footer = footer.locator.offset;
  a.nbytes_footer = footer.locator.size;
  a.len_footer = footer.length;
  a.max_key_size = kDefaultMaxKeySize;
  std::vector<uint8_t> payload = SerializeAnchor(a);
  RecordSlot slot = file_->NextRecord(rootio::kRntupleClassName, options_.name, kAnchorTitle);
  RecordInfo info =
      FERRY_TRY(file_->WriteRecord(slot, rootio::kRntupleClassName, options_.name, kAnchorTitle,
                                   payload, {codec::Algorithm::kNone, 0}));
  file_->AddToDirectory(rootio::kRntupleClassName, options_.name, kAnchorTitle, info);
  const std::string classes[] = {std::string(rootio::kRntupleClassName)};
  file_->UseClasses(classes);
  return OkStatus();
}

}  // namespace ferry::rootwrite
