#include "rootwrite/tree_writer.h"

#include <algorithm>
#include <cstring>

#include "rootwrite/basket_pipeline.h"
#include "rootwrite/column_batch.h"
#include "rootwrite/streamer_infos.h"

namespace ferry::rootwrite {
namespace {

using rootio::LeafType;

// Entries per step while the first cluster's size is still open (auto_flush < 0): the
// cluster size is decided at this granularity in WriteColumns.
constexpr int64_t kProbeEntries = 1000;
constexpr int32_t kMinBasketSize = 512;
constexpr size_t kMaxNameLength = 4096;

std::string LeafTitle(const BranchSpec& s) {
  std::string t = s.name;
  if (!s.count.empty()) {
    t += "[" + s.count + "]";
  }
  if (s.len > 1) {
    t += "[" + std::to_string(s.len) + "]";
  }
  return t;
}

}  // namespace

TreeWriter::TreeWriter(FileWriter& file, TreeOptions options)
    : file_(&file), options_(std::move(options)) {
  setting_ = options_.compression.value_or(file.options().compression);
  if (options_.auto_flush > 0) {
    cluster_size_ = options_.auto_flush;
  }
}

TreeWriter::~TreeWriter() = default;

int64_t TreeWriter::zip_bytes() const {
  return pipeline_ ? pipeline_->zip_bytes() : zip_total_;
}

Error TreeWriter::Fail(Error error) {
  error.AddContext("tree " + options_.name);
  failure_ = std::make_unique<Error>(error);
  return error;
}

Status TreeWriter::CheckOpen() const {
  if (failure_) {
    return Error(*failure_);
  }
  if (closed_) {
    return InvalidArgumentError("tree " + options_.name + " is already closed");
  }
  return OkStatus();
}

Result<int32_t> TreeWriter::AddBranch(const BranchSpec& in) {
  FERRY_TRY(CheckOpen());
  BranchSpec spec = in;
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("branch '" + spec.name + "': " + why);
  };
  if (entries_ > 0) {
    return bad("branches must be declared before the first entry");
  }
  if (options_.basket_size < 32 || options_.max_basket_size < options_.basket_size / 2) {
    return InvalidArgumentError("basket size " + std::to_string(options_.basket_size) + " (max "
                                + std::to_string(options_.max_basket_size) + ")");
  }
  if (spec.name.empty() || spec.name.size() > kMaxNameLength) {
    return bad("name must have 1 to 4096 characters");
  }
  if (FindBranch(spec.name) >= 0) {
    return bad("declared twice");
  }
  if (spec.type == LeafType::kUnknown) {
    return bad("unknown leaf type");
  }
  if (spec.len < 1 || spec.len > (1 << 24)) {
    return bad("length " + std::to_string(spec.len));
  }
  int32_t count = -1;
  if (!spec.count.empty()) {
    count = FindBranch(spec.count);
    if (count < 0) {
      return bad("counter branch '" + spec.count + "' must be declared before");
    }
    const BranchSpec& c = specs_[static_cast<size_t>(count)];
    if (!rootio::IsIntegerLeafType(c.type) || c.len != 1 || !c.count.empty()) {
      return bad("counter '" + spec.count + "' is not an integer scalar");
    }
    if (spec.type == LeafType::kString) {
      return bad("a string branch cannot have a counter");
    }
  }
  if (spec.type == LeafType::kString && spec.len != 1) {
    return bad("a string branch holds one string per entry");
  }
  if (spec.title.empty()) {
    spec.title = LeafTitle(spec) + "/" + LeafTypeCode(spec.type);
  }
  const bool variable = count >= 0 || spec.type == LeafType::kString;
  branches_.emplace_back(spec.name, options_.name, spec.type,
                         static_cast<uint32_t>(count >= 0 ? 1 : spec.len), variable,
                         options_.basket_size);
  if (count >= 0) {
    is_counter_[static_cast<size_t>(count)] = true;
  }
  specs_.push_back(std::move(spec));
  count_of_.push_back(count);
  is_counter_.push_back(false);
  staged_.emplace_back();
  return static_cast<int32_t>(specs_.size() - 1);
}

int32_t TreeWriter::FindBranch(std::string_view name) const {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == name) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

void TreeWriter::SetRaw(int32_t branch, LeafType type, const void* values, size_t count) {
  if (branch < 0 || static_cast<size_t>(branch) >= specs_.size()) {
    if (pending_error_.empty()) {
      pending_error_ = "no branch #" + std::to_string(branch);
    }
    return;
  }
  const BranchSpec& s = specs_[static_cast<size_t>(branch)];
  if (type != s.type) {
    if (pending_error_.empty()) {
      pending_error_ = "branch " + s.name + " holds " + std::string(rootio::LeafTypeName(s.type))
                       + ", was given " + std::string(rootio::LeafTypeName(type));
    }
    return;
  }
  Staged& st = staged_[static_cast<size_t>(branch)];
  const auto* p = static_cast<const uint8_t*>(values);
  st.bytes.assign(p, p + count * rootio::LeafTypeSize(type));
  st.count = count;
  st.set = true;
}

void TreeWriter::SetString(int32_t branch, std::string_view value) {
  if (branch < 0 || static_cast<size_t>(branch) >= specs_.size()
      || specs_[static_cast<size_t>(branch)].type != LeafType::kString) {
    if (pending_error_.empty()) {
      pending_error_ = "SetString on branch #" + std::to_string(branch) + ", not a string branch";
    }
    return;
  }
  Staged& st = staged_[static_cast<size_t>(branch)];
  st.text.assign(value);
  st.set = true;
}

Status TreeWriter::WriteFull(size_t i) {
  BranchBuffer& b = branches_[i];
  if (options_.background_compression) {
    if (!pipeline_) {
      // Started with the first basket: branches are all declared by then, so the pointers
      // the queue holds stay valid.
      pipeline_ = std::make_unique<BasketPipeline>(*file_, setting_, options_.max_queued_bytes);
    }
    Status st = pipeline_->Submit(b);
    if (!st.has_value()) {
      return Fail(std::move(st).error());
    }
    return OkStatus();
  }
  int64_t before = b.zip_bytes();
  Status st = b.WriteBasket(*file_, setting_, scratch_);
  if (!st.has_value()) {
    return Fail(std::move(st).error());
  }
  zip_total_ += b.zip_bytes() - before;
  return OkStatus();
}

Status TreeWriter::FlushAll() {
  for (size_t i = 0; i < branches_.size(); ++i) {
    FERRY_TRY(WriteFull(i));
  }
  return OkStatus();
}

void TreeWriter::OptimizeBaskets() {
  // One basket per branch and cluster: the branch's bytes in the first cluster plus 10%.
  for (BranchBuffer& b : branches_) {
    int64_t want = b.tot_bytes() + b.tot_bytes() / 10 + kMinBasketSize;
    want = (want + kMinBasketSize - 1) / kMinBasketSize * kMinBasketSize;
    want = std::clamp<int64_t>(want, kMinBasketSize, options_.max_basket_size);
    b.set_basket_size(static_cast<int32_t>(want));
  }
}

Status TreeWriter::SyncZipTotal() {
  if (pipeline_) {
    Status st = pipeline_->Drain();
    if (!st.has_value()) {
      return Fail(std::move(st).error());
    }
    zip_total_ = pipeline_->zip_bytes();
  }
  return OkStatus();
}

Status TreeWriter::MarkFlushed() {
  if (!pipeline_) {
    flushed_bytes_ = zip_total_;
    return OkStatus();
  }
  // Known once the background thread has written this cluster's baskets.
  Status st = pipeline_->Mark(&flushed_bytes_);
  if (!st.has_value()) {
    return Fail(std::move(st).error());
  }
  return OkStatus();
}

Status TreeWriter::AfterEntries(int64_t n) {
  entries_ += n;
  if (cluster_size_ > 0) {
    if (entries_ % cluster_size_ == 0) {
      FERRY_TRY(FlushAll());
      FERRY_TRY(MarkFlushed());
    }
    return OkStatus();
  }
  if (options_.auto_flush >= 0) {
    return OkStatus();
  }
  // The first cluster ends at a compressed size: it needs the baskets written so far.
  FERRY_TRY(SyncZipTotal());
  if (zip_total_ - flushed_bytes_ > -options_.auto_flush) {
    cluster_size_ = entries_;
    FERRY_TRY(FlushAll());
    FERRY_TRY(MarkFlushed());
    if (options_.optimize_baskets) {
      OptimizeBaskets();
    }
  }
  return OkStatus();
}

Status TreeWriter::Fill() {
  FERRY_TRY(CheckOpen());
  if (!pending_error_.empty()) {
    return Fail(InvalidArgumentError(pending_error_));
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    const Staged& st = staged_[i];
    const BranchSpec& s = specs_[i];
    if (!st.set) {
      return Fail(InvalidArgumentError("branch " + s.name + " has no value for entry "
                                       + std::to_string(entries_)));
    }
    auto want = static_cast<uint64_t>(s.len);
    if (count_of_[i] >= 0) {
      const auto c = static_cast<size_t>(count_of_[i]);
      want = LoadCount(specs_[c].type, staged_[c].bytes.data()) * static_cast<uint64_t>(s.len);
    }
    if (s.type != LeafType::kString && st.count != want) {
      return Fail(InvalidArgumentError("branch " + s.name + " was given " + std::to_string(st.count)
                                       + " values for entry " + std::to_string(entries_)
                                       + ", expected " + std::to_string(want)));
    }
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    Staged& st = staged_[i];
    BranchBuffer& b = branches_[i];
    if (specs_[i].type == LeafType::kString) {
      b.AppendString(st.text);
    } else {
      b.AppendValues(st.bytes.data(), st.count);
    }
    if (is_counter_[i]) {
      b.NoteCounterValue(static_cast<int64_t>(LoadCount(specs_[i].type, st.bytes.data())));
    }
    st.set = false;
    if (b.full()) {
      FERRY_TRY(WriteFull(i));
    }
  }
  return AfterEntries(1);
}

Status TreeWriter::CheckColumns(std::span<const rootio::Column* const> columns, int64_t* n) {
  return CheckColumnBatch(specs_, count_of_, columns, n, &counter_values_);
}

Status TreeWriter::AppendSegment(std::span<const rootio::Column* const> columns,
                                 int64_t a,
                                 int64_t b) {
  for (size_t i = 0; i < specs_.size(); ++i) {
    const rootio::Column& c = *columns[i];
    BranchBuffer& br = branches_[i];
    const auto basket = static_cast<int64_t>(br.basket_size());
    if (specs_[i].type == LeafType::kString) {
      for (int64_t e = a; e < b; ++e) {
        br.AppendString(c.StringAt(e));
        if (br.full()) {
          FERRY_TRY(WriteFull(i));
        }
      }
      continue;
    }
    const size_t vs = br.value_size();
    if (is_counter_[i]) {
      const std::vector<uint64_t>& counts = counter_values_[i];
      uint64_t mx = 0;
      for (int64_t e = a; e < b; ++e) {
        mx = std::max(mx, counts[static_cast<size_t>(e)]);
      }
      br.NoteCounterValue(static_cast<int64_t>(mx));
    }
    int64_t e = a;
    if (!c.jagged) {
      const auto entry_bytes = static_cast<int64_t>(c.fixed_len * vs);
      while (e < b) {
        int64_t room = basket - static_cast<int64_t>(br.pending_bytes());
        int64_t fit = std::max<int64_t>(1, (room + entry_bytes - 1) / entry_bytes);
        int64_t k = std::min(fit, b - e);
        br.AppendFixed(c.bytes.data() + static_cast<size_t>(e) * c.fixed_len * vs,
                       static_cast<size_t>(k));
        e += k;
        if (br.full()) {
          FERRY_TRY(WriteFull(i));
        }
      }
      continue;
    }
    while (e < b) {
      const int64_t room = basket - static_cast<int64_t>(br.pending_bytes());
      const uint64_t* off = c.offsets.data();
      // Bytes the rest of the segment adds (values and offset-table slots).
      const auto rest = static_cast<int64_t>((off[b] - off[e]) * vs) + 4 * (b - e);
      int64_t f = b;
      if (rest >= room) {
        // The basket fills up inside the segment: find the entry that fills it.
        f = e;
        int64_t acc = 0;
        while (f < b && (f == e || acc < room)) {
          acc += static_cast<int64_t>((off[f + 1] - off[f]) * vs) + 4;
          ++f;
        }
      }
      br.AppendJagged(c.bytes.data() + off[e] * vs, off + e, static_cast<size_t>(f - e));
      e = f;
      if (br.full()) {
        FERRY_TRY(WriteFull(i));
      }
    }
  }
  return OkStatus();
}

Status TreeWriter::WriteColumns(std::span<const rootio::Column* const> columns) {
  FERRY_TRY(CheckOpen());
  if (!pending_error_.empty()) {
    return Fail(InvalidArgumentError(pending_error_));
  }
  int64_t n = 0;
  Status ok = CheckColumns(columns, &n);
  if (!ok.has_value()) {
    return Fail(std::move(ok).error());
  }
  int64_t a = 0;
  while (a < n) {
    int64_t b = n;
    if (cluster_size_ > 0) {
      b = std::min(b, a + (cluster_size_ - entries_ % cluster_size_));
    } else if (options_.auto_flush < 0) {
      b = std::min(b, a + kProbeEntries);
    }
    FERRY_TRY(AppendSegment(columns, a, b));
    FERRY_TRY(AfterEntries(b - a));
    a = b;
  }
  return OkStatus();
}

int64_t TreeWriter::tot_bytes() const {
  int64_t t = 0;
  for (const BranchBuffer& b : branches_) {
    t += b.tot_bytes();
  }
  return t;
}

int64_t TreeWriter::TakeBytesWritten() {
  int64_t t = tot_bytes();
  int64_t d = t - bytes_mark_;
  bytes_mark_ = t;
  return d;
}

Status TreeWriter::Close() {
  FERRY_TRY(CheckOpen());
  if (!pending_error_.empty()) {
    return Fail(InvalidArgumentError(pending_error_));
  }
  FERRY_TRY(FlushAll());
  FERRY_TRY(SyncZipTotal());
  pipeline_.reset();  // everything is written; the file is the caller's again
  TreeRecord t;
  t.name = options_.name;
  t.title = options_.title;
  t.entries = entries_;
  t.zip_bytes = zip_total_;
  t.tot_bytes = tot_bytes();
  t.saved_bytes = zip_total_;
  t.flushed_bytes = flushed_bytes_;
  t.auto_flush = cluster_size_ > 0 ? cluster_size_ : options_.auto_flush;
  std::vector<std::string> leaf_classes;
  const int32_t compress = setting_.RootSetting();
  for (size_t i = 0; i < specs_.size(); ++i) {
    const BranchSpec& s = specs_[i];
    const BranchBuffer& b = branches_[i];
    BranchRecord r = b.Record(compress);
    r.title = s.title;
    LeafRecord& leaf = r.leaf;
    leaf.name = s.name;
    leaf.title = LeafTitle(s);
    leaf.type = s.type;
    leaf.len = s.len;
    leaf.count_branch = count_of_[i];
    if (is_counter_[i]) {
      leaf.is_range = true;
      leaf.maximum = b.max_value();
    }
    if (s.type == LeafType::kString) {
      leaf.len = static_cast<int32_t>(b.max_string()) + 1;
      leaf.maximum = leaf.len;
    }
    leaf_classes.push_back(LeafClassName(s.type));
    t.branches.push_back(std::move(r));
  }
  const std::string& name = options_.name;
  const std::string& title = options_.title;
  RecordSlot slot = file_->NextRecord("TTree", name, title);
  std::vector<uint8_t> payload = SerializeTree(t, slot.key_len);
  auto info = file_->WriteRecord(slot, "TTree", name, title, payload, file_->options().compression);
  if (!info.has_value()) {
    return Fail(std::move(info).error());
  }
  file_->AddToDirectory("TTree", name, title, *info);
  file_->UseClasses(FlatTreeClasses(leaf_classes));
  closed_ = true;
  return OkStatus();
}

}  // namespace ferry::rootwrite
