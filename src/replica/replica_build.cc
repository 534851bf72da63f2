#include "replica/replica_build.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/fd.h"
#include "cache/dir_access.h"
#include "cache/entry.h"
#include "cache/lock_file.h"
#include "cache/stats.h"
#include "replica/access_trace.h"
#include "replica/held_source.h"
#include "replica/overlay_writer.h"
#include "replica/replica_codec.h"
#include "replica/replica_view.h"
#include "replica/rntuple_overlay.h"
#include "replica/tree_overlay.h"
#include "rootio/cursor.h"
#include "rootio/key.h"
#include "rootio/rntuple_page.h"
#include "rootio/root_file.h"
#include "rootio/tree_parse.h"

namespace ferry::replica {

// The page store's types this file works with.
using cache::AllocatedBytes;
using cache::Config;
using cache::Counter;
using cache::Counters;
using cache::Entry;
using cache::EntryPaths;
using cache::IndexInfo;
using cache::kBuildLockByte;
using cache::kBuildWantedByte;
using cache::LoadIndex;
using cache::LockFile;
using cache::OpenCacheFile;
using cache::PageIndex;
using cache::PathsFor;
using cache::RemoveReplicaData;
namespace {

// A basket is hot when one read of the trace covered this share of it (in percent).
constexpr uint64_t kHotCoverPercent = 90;
constexpr size_t kWriteChunk = 4u << 20;

uint64_t ThreadCpuNs() {
  timespec ts = {};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Runs `fn` on a new thread that first calls `setup` (its scheduling class or nice value, which
// are per thread on Linux), and waits for it; that thread's CPU time is added to *cpu_ns.
Status RunOnThread(const std::function<void()>& setup,
                   const std::function<Status()>& fn,
                   uint64_t* cpu_ns) {
  Status st = OkStatus();
  uint64_t used = 0;
  std::thread worker([&] {
    setup();
    st = fn();
    used = ThreadCpuNs();  // a new thread's clock starts at zero
  });
  worker.join();
  *cpu_ns += used;
  return st;
}

Result<std::vector<uint8_t>> ReadWhole(const std::string& path, uint64_t max_bytes) {
  Fd fd = FERRY_TRY(Fd::Open(path, O_RDONLY));
  const uint64_t size = std::min(FERRY_TRY(FileSize(fd.get())), max_bytes);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  FERRY_TRY(PreadFull(fd.get(), bytes.data(), bytes.size(), 0));
  return bytes;
}

// Writes `bytes` to `path` atomically (tmp, fsync, rename, directory fsync).
Status PublishFile(const std::string& path,
                   std::span<const uint8_t> bytes,
                   const std::string& dir) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    Fd fd = FERRY_TRY(OpenCacheFile(tmp, O_WRONLY | O_TRUNC));
    Status st = PwriteFull(fd.get(), bytes.data(), bytes.size(), 0);
    if (st && ::fsync(fd.get()) != 0) {
      st = IoError("fsync " + tmp, errno);
    }
    if (!st) {
      ::unlink(tmp.c_str());
      return st;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return IoError("rename " + tmp, err);
  }
  Fd d = FERRY_TRY(Fd::Open(dir, O_RDONLY | O_DIRECTORY));
  (void)::fsync(d.get());
  return OkStatus();
}

// KEY.rps: the state on the first line, the reason on the second, why the replica is at its
// stage on the third.
struct StatusLines {
  std::string state;
  std::string reason;
  std::string stage_why;
};

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

void WriteStatusFile(const EntryPaths& paths,
                     ReplicaState state,
                     const std::string& reason,
                     const std::string& stage_why) {
  const std::string text = std::string(ReplicaStateName(state)) + "\n" + OneLine(reason) + "\n"
                           + OneLine(stage_why) + "\n";
  (void)PublishFile(paths.replica_status(),
                    {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, paths.subdir);
}

std::optional<StatusLines> ReadStatusFile(const EntryPaths& paths) {
  auto bytes = ReadWhole(paths.replica_status(), 65536);
  if (!bytes) {
    return std::nullopt;
  }
  StatusLines lines;
  std::string* field[] = {&lines.state, &lines.reason, &lines.stage_why};
  size_t k = 0;
  for (uint8_t c : *bytes) {
    if (c == '\n') {
      k += 1;
    } else if (k < 3) {
      field[k]->push_back(static_cast<char>(c));
    }
  }
  return lines;
}

void FillEncodings(const ReplicaManifest& m, ReplicaBuildReport& r) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> mix;
  for (const ReplicaExtent& e : m.extents) {
    const std::string name =
        e.as_stored ? "stored:" + std::string(AlgorithmName(e.setting.algorithm))
        : e.setting.algorithm == codec::Algorithm::kNone ? "none"
                                                         : e.setting.ToString();
    auto& [n, bytes] = mix[name];
    n += 1;
    bytes += e.bytes;
  }
  r.encodings.assign(mix.begin(), mix.end());
}

// One unit the replica may move: a basket that has a record of its own in the original file
// (tree, branch, basket), or an RNTuple page (RNTuple, column, ordinal).
struct Basket {
  uint64_t seek = 0;
  uint32_t bytes = 0;
  uint32_t tree = 0;
  int32_t branch = 0;
  int32_t basket = 0;
  uint64_t first_entry = 0;
  // Units that move together or not at all: an RNTuple's column in one cluster (its pages
  // share one compression field); a basket alone.
  uint64_t range = 0;
};

class Builder {
 public:
  Builder(const Config& config,
          const EntryPaths& paths,
          Entry& entry,
          const ReplicaBuildOptions& options,
          const LockFile& lock,
          ReplicaBuildReport& report)
      : config_(config),
        paths_(paths),
        entry_(entry),
        src_(entry),
        options_(options),
        lock_(lock),
        r_(report) {}

  Status Run();
  // A relocation on the low thread (ReplicaBuildOptions::become_low): stops at its next pause
  // once no other process has the file open (kCancelled, kHandedBackReason), so that the
  // caller redoes it at its own priority — the pass that moved past it has closed it, and its
  // user waits for the copy. The low thread cannot raise its priority back itself.
  void HandBackOnClose() { hand_back_ = true; }

 private:
  Status LoadPrevious();
  // False (with state and reason set) when there is nothing to relocate.
  bool LoadTrees();
  // The RNTuples' pages, when the file has no TTree to relocate.
  void LoadRntuples(std::string* unsupported);
  void AddRntuple(RntupleRecordSource s);
  // RNTuple pages move by column range: hot_ grows to whole ranges, and ranges not held whole
  // leave it (counted in range_missing_ when the trace asked for them: without a trace, hot_
  // is what the byte tier holds, and a range read-ahead brought in part was asked for by no
  // one).
  void CompleteRanges();
  const std::string& ObjectPath(uint32_t object) const {
    return rntuples_.empty() ? trees_[object].path : rntuples_[object].path;
  }
  size_t ObjectCount() const { return rntuples_.empty() ? trees_.size() : rntuples_.size(); }
  // The tree's record from the byte tier, or rebuilt from the previous replica's.
  Result<TreeRecordSource> LoadTree(const std::string& path);
  void AddTree(TreeRecordSource t);
  void FindHot();
  void AddHot(size_t basket);
  // The stage of this build (ReplicaStage), once the units are known; false when there is
  // nothing to place (the previous replica is up to date for the stage asked).
  bool ChooseStage();
  Status ChooseCodec();
  // Stage 1: no codec; tree records keep the previous replica's (none without one).
  void KeepCodec();
  // Unit i of the previous replica, if it has it: its bytes, CRC checked.
  const ReplicaExtent* PreviousExtent(size_t i) const {
    return previous_extent_[i] < 0 ? nullptr
                                   : &previous_->extents[static_cast<size_t>(previous_extent_[i])];
  }
  // Its bytes checked against its CRC, or opened and checked against its tag when sealed.
  // Into `dest`, sized to the extent's bytes.
  Status ReadPrevious(const ReplicaExtent& e, std::span<uint8_t> dest) const;
  // Unit i as the original stores it: the previous replica's copy as stored, else the byte
  // tier's; kNotFound when neither holds it whole.
  Status ReadStored(size_t i, std::vector<uint8_t>& record);
  // The same into `dest`, sized to the basket's bytes.
  Status ReadStored(size_t i, std::span<uint8_t> dest);
  // Whether this build encodes unit i anew (rather than copying the previous replica's).
  bool Fresh(size_t i) const {
    const ReplicaExtent* e = PreviousExtent(i);
    return e == nullptr ? src_.Holds(baskets_[i].seek, baskets_[i].bytes)
                        : reencode_ && e->as_stored;
  }
  // What the replica adds besides units for one object: its TTree record, or the RNTuple's
  // anchor, footer and page lists.
  uint64_t RecordBytes(uint32_t object) const;
  // A unit as the original stores it, for the codec sample.
  Result<StoredUnit> UnitOf(const Basket& x, std::span<const uint8_t> stored) const;
  Status Write();
  // One attempt; on kNoSpace (a tree record outgrew its slot) `need` gets the slot sizes.
  Status WriteOnce(const std::vector<uint64_t>& slots, std::vector<uint64_t>* need);
  // WriteOnce's steps. The trees that get a basket, as used_trees_; per tree of trees_, its
  // index in the manifest (-1: not used).
  std::vector<int64_t> ChooseUsedTrees();
  // The writer of the file's format with the used objects added (`slots`: the room of each
  // one's records, empty for the defaults).
  std::unique_ptr<OverlayWriter> MakeWriter(const std::vector<uint64_t>& slots);
  // Hot basket i as manifest tree `tree` appended to out: the previous replica's extent copied
  // (after its CRC check), else re-encoded from the byte tier; an error when neither holds it.
  Result<MovedUnit> PlaceBasket(
      OverlayWriter& w, size_t i, uint32_t tree, ByteVector& out, std::vector<uint8_t>& record);
  // Stage 1's copy of basket i: its stored bytes read straight into the end of `out`, where
  // the overlay reseats them (a relocation is mostly this copy: none through a scratch buffer).
  Result<MovedUnit> PlaceStored(OverlayWriter& w, size_t i, uint32_t tree, ByteVector& out);
  // The overlay's patches and records, and the branches that got baskets, into next_.
  void AdoptOverlay(const Overlay& overlay, const std::set<std::pair<uint32_t, int32_t>>& branches);
  Status Publish();
  void Release();
  // A relocation the drainer asked for first (ReplicaBuildOptions::relocate_first): published
  // before its data is durable, and nothing released.
  bool LazyDurability() const { return options_.relocate_first && !reencode_; }
  // Runs `fn` on a thread that first calls options_.become_idle (its CPU time counted in
  // idle_cpu_ns_), where that is set; else on this one.
  Status OnIdleThread(const std::function<Status()>& fn);
  // Waits while the options' pause says so; kCancelled once a background build should leave
  // the file to an explicit build that waits for it.
  // A relocation (stage 1) does not wait: it is a copy, meant to run beside a filling pass.
  // A re-encoding gives way to a relocation that is waiting (`preempt`), whether it waits for
  // a pass or has the room: the files a pass left must all be served when it ends, and the
  // re-encoding of one of them (seconds of CPU) would hold the others' copies back.
  Status Pause() {
    if (hand_back_ && !reencode_ && ClosedElsewhere()) {
      return Error(ErrorCode::kCancelled, std::string(kHandedBackReason));
    }
    bool preempted = reencode_ && options_.preempt && options_.preempt();
    if (options_.pause && reencode_ && !preempted) {
      options_.pause([&] {
        preempted = preempted || (options_.preempt && options_.preempt());
        return Wanted() || preempted;
      });
    }
    if (Wanted()) {
      return Error(ErrorCode::kCancelled, "yielded to an explicit build");
    }
    if (preempted) {
      return Error(ErrorCode::kCancelled, std::string(kPreemptedReason));
    }
    return OkStatus();
  }
  bool Wanted() const { return options_.yield && lock_.HeldElsewhere(kBuildWantedByte); }
  // Whether no other process has the file open, looked at every 5 ms at most (an fcntl; while
  // another holds it, the look takes no lock).
  bool ClosedElsewhere() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_close_look_) {
      return false;
    }
    next_close_look_ = now + std::chrono::milliseconds(5);
    return entry_.WithSoleOpen([] {});
  }

  const Config& config_;
  const EntryPaths& paths_;
  Entry& entry_;
  HeldSource src_;
  const ReplicaBuildOptions& options_;
  const LockFile& lock_;  // holds the entry's build byte
  ReplicaBuildReport& r_;
  bool hand_back_ = false;
  std::chrono::steady_clock::time_point next_close_look_{};

  std::optional<ReplicaManifest> previous_;
  std::unique_ptr<const ReplicaSealer> previous_sealer_;  // a sealed previous_'s
  Fd previous_data_;
  std::unique_ptr<rootio::RootFile> file_;
  std::vector<TreeRecordSource> trees_;
  std::vector<RntupleRecordSource> rntuples_;  // used only when trees_ is empty
  // Per RNTuple: its pages, per column by ordinal (RntupleRecordSource::pages()).
  std::vector<std::vector<std::vector<RntupleRecordSource::PageRef>>> page_refs_;
  uint64_t range_missing_ = 0;
  bool traced_ = false;  // FindHot found an access trace
  // Stage 2 (re-encode) or 1 (relocate); until ChooseStage, what the options ask for first.
  bool reencode_ = true;
  std::vector<Basket> baskets_;  // sorted by seek
  std::map<std::tuple<uint32_t, int32_t, int32_t>, size_t> basket_at_;
  std::vector<long> previous_extent_;  // per basket: extent in previous_, or -1
  std::vector<size_t> hot_;            // baskets, in layout order
  std::vector<uint8_t> is_hot_;
  std::vector<uint32_t> used_trees_;  // manifest tree k = trees_[used_trees_[k]]
  CodecPlan plan_;
  ReplicaManifest next_;
  // An encrypted entry's: seals next_'s extents and manifest (a new salt per attempt).
  std::unique_ptr<const ReplicaSealer> next_sealer_;
  std::vector<uint64_t> next_slots_scratch_;
  uint64_t cpu0_ = 0;
  uint64_t idle_cpu_ns_ = 0;  // of OnIdleThread's threads
};

Status Builder::LoadPrevious() {
  auto m = LoadManifest(paths_, entry_.sealer());
  if (!m) {
    if (m.error().code() != ErrorCode::kNotFound) {
      (void)::unlink(paths_.manifest().c_str());  // undecodable: replaced by this build
    }
    return OkStatus();
  }
  const uint64_t epoch = [&] {
    ReaderLock lock(entry_.mu());
    return entry_.index().info().epoch;
  }();
  const bool current = m->epoch == epoch && m->origin_size == entry_.size()
                       && m->origin_mtime == entry_.mtime() && m->url == entry_.url()
                       && m->LibrariesMatch();
  auto data = current ? Fd::Open(paths_.replica_data(m->generation), O_RDONLY)
                      : Result<Fd>(NotFoundError("stale"));
  if (!data) {
    // The origin file changed (or the replica is unusable): start from scratch.
    (void)::unlink(paths_.manifest().c_str());
    RemoveReplicaData(paths_, 0);
    return OkStatus();
  }
  previous_ = std::move(*m);
  if (previous_->sealed) {
    previous_sealer_ = previous_->Sealer(*entry_.sealer());
  }
  previous_data_ = std::move(*data);
  return OkStatus();
}

Result<TreeRecordSource> Builder::LoadTree(const std::string& path) {
  auto t = LoadTreeRecord(*file_, path);
  if (t || t.error().code() != ErrorCode::kNotFound || !previous_) {
    return t;
  }
  // The original record was released when the previous replica was built (readers of the
  // virtual file read the manifest's): rebuild it from that one, with the moved baskets' seeks
  // and sizes put back. Its payload is then the original's, byte for byte.
  for (size_t k = 0; k < previous_->trees.size() && k < previous_->records.size(); ++k) {
    if (previous_->trees[k] != path) {
      continue;
    }
    const std::vector<uint8_t>& rec = previous_->records[k].bytes;
    rootio::Cursor c(rec);
    const rootio::Key key = FERRY_TRY(rootio::ParseKey(c));
    if (key.nbytes < key.keylen || static_cast<size_t>(key.nbytes) > rec.size()) {
      return CorruptionError("tree record of the previous replica does not parse");
    }
    ByteVector payload;
    FERRY_TRY(rootio::DecodePayload(std::span<const uint8_t>(rec).subspan(
                                        key.keylen, static_cast<size_t>(key.nbytes - key.keylen)),
                                    key.objlen, &payload));
    const rootio::TreeInfo patched = FERRY_TRY(rootio::ParseTree(payload, key.keylen));
    std::vector<BasketMove> back;
    for (const ReplicaExtent& e : previous_->extents) {
      if (e.tree == k) {
        back.push_back({static_cast<int32_t>(e.branch), static_cast<int32_t>(e.basket),
                        e.original_offset, e.original_bytes});
      }
    }
    const rootio::Key original = FERRY_TRY(file_->FindKey(path));
    RelocatedTree r =
        FERRY_TRY(RelocateTree(rec, patched, back, original.seek_key, previous_->setting, 0, rec));
    return TreeRecordFrom(*file_, path, {r.record.begin(), r.record.end()});
  }
  return t;
}

void Builder::AddTree(TreeRecordSource t) {
  const auto tree = static_cast<uint32_t>(trees_.size());
  for (size_t b = 0; b < t.info.branches.size(); ++b) {
    const rootio::Branch& br = t.info.branches[b];
    if (br.basket_bytes_pos == 0 || br.basket_seek_pos == 0) {
      continue;
    }
    for (size_t k = 0; k < br.baskets.size() && static_cast<int32_t>(k) < br.write_basket; ++k) {
      if (br.baskets[k].seek != 0) {
        baskets_.push_back({br.baskets[k].seek, br.baskets[k].bytes, tree, static_cast<int32_t>(b),
                            static_cast<int32_t>(k),
                            static_cast<uint64_t>(std::max<int64_t>(br.baskets[k].first_entry, 0)),
                            baskets_.size()});
      }
    }
  }
  trees_.push_back(std::move(t));
}

bool Builder::LoadTrees() {
  auto f = rootio::RootFile::Open(src_);
  if (!f) {
    const bool held = f.error().code() != ErrorCode::kNotFound;
    r_.state = held ? ReplicaState::kUnsupported : ReplicaState::kNone;
    r_.reason = held ? "not a ROOT file this version reads: " + f.error().ToString()
                     : "the file's header or keys list is not cached";
    return false;
  }
  file_ = std::move(*f);
  std::string unsupported;
  // Directories are walked as far as the cache holds them; trees not read are not relocated.
  std::vector<std::string> dirs{""};
  for (size_t d = 0; d < dirs.size() && d < 1024; ++d) {
    auto keys = file_->ListKeys(dirs[d]);
    if (!keys) {
      continue;
    }
    std::set<std::string> seen;
    for (const rootio::Key& k : *keys) {
      const std::string path = dirs[d].empty() ? k.name : dirs[d] + "/" + k.name;
      if (!seen.insert(path).second) {
        continue;  // an older cycle: LoadTreeRecord takes the highest
      }
      if (rootio::IsDirectoryClass(k.class_name)) {
        dirs.push_back(path);
      } else if (k.class_name == "TTree") {
        auto t = LoadTree(path);
        if (t) {
          AddTree(std::move(*t));
        } else if (t.error().code() != ErrorCode::kNotFound) {
          unsupported = "TTree " + path + ": " + t.error().ToString();
        }
      }
    }
  }
  if (baskets_.empty()) {
    LoadRntuples(&unsupported);
  }
  std::sort(baskets_.begin(), baskets_.end(),
            [](const Basket& a, const Basket& b) { return a.seek < b.seek; });
  for (size_t i = 0; i < baskets_.size(); ++i) {
    basket_at_[{baskets_[i].tree, baskets_[i].branch, baskets_[i].basket}] = i;
  }
  if (baskets_.empty()) {
    r_.state = unsupported.empty() ? ReplicaState::kNone : ReplicaState::kUnsupported;
    r_.reason = unsupported.empty() ? "no TTree with baskets of its own, or RNTuple, is cached"
                                    : unsupported;
    return false;
  }
  // Map the previous replica's extents to baskets of the trees as parsed now.
  previous_extent_.assign(baskets_.size(), -1);
  if (previous_) {
    for (size_t e = 0; e < previous_->extents.size(); ++e) {
      const ReplicaExtent& x = previous_->extents[e];
      for (uint32_t t = 0; t < ObjectCount(); ++t) {
        if (ObjectPath(t) != previous_->trees[x.tree]) {
          continue;
        }
        auto it =
            basket_at_.find({t, static_cast<int32_t>(x.branch), static_cast<int32_t>(x.basket)});
        if (it != basket_at_.end() && baskets_[it->second].seek == x.original_offset) {
          previous_extent_[it->second] = static_cast<long>(e);
        }
      }
    }
  }
  return true;
}

void Builder::LoadRntuples(std::string* unsupported) {
  auto found = rootio::FindRntuples(*file_);
  if (!found) {
    return;
  }
  for (const rootio::RntupleEntry& e : *found) {
    auto r = LoadRntupleRecord(*file_, e.path);
    if (r) {
      AddRntuple(std::move(*r));
    } else if (r.error().code() != ErrorCode::kNotFound) {
      *unsupported = "RNTuple " + e.path + ": " + r.error().ToString();
    }
  }
}

void Builder::AddRntuple(RntupleRecordSource s) {
  const auto ntuple = static_cast<uint32_t>(rntuples_.size());
  page_refs_.push_back(s.pages());
  const auto& refs = page_refs_.back();
  uint64_t range = 0;
  for (size_t c = 0; c < refs.size(); ++c) {
    for (size_t k = 0; k < refs[c].size(); ++k) {
      const rootio::PageInfo& page = s.Page(refs[c][k]);
      if (refs[c][k].page == 0) {
        range = baskets_.size();  // the range's first page names it
      }
      baskets_.push_back({page.locator.offset, static_cast<uint32_t>(page.stored_bytes()), ntuple,
                          static_cast<int32_t>(c), static_cast<int32_t>(k), refs[c][k].first_entry,
                          range});
    }
  }
  rntuples_.push_back(std::move(s));
}

void Builder::CompleteRanges() {
  range_missing_ = 0;
  if (rntuples_.empty()) {
    return;
  }
  std::unordered_map<uint64_t, std::vector<size_t>> members;
  for (size_t i = 0; i < baskets_.size(); ++i) {
    members[baskets_[i].range].push_back(i);
  }
  std::vector<size_t> hot;
  std::vector<uint8_t> is_hot(baskets_.size(), 0);
  std::set<uint64_t> done;
  for (size_t i : hot_) {
    if (!done.insert(baskets_[i].range).second) {
      continue;
    }
    std::vector<size_t>& range = members[baskets_[i].range];
    std::sort(range.begin(), range.end(),
              [&](size_t a, size_t b) { return baskets_[a].basket < baskets_[b].basket; });
    const bool whole = std::all_of(range.begin(), range.end(), [&](size_t j) {
      return previous_extent_[j] >= 0 || src_.Holds(baskets_[j].seek, baskets_[j].bytes);
    });
    if (!whole) {
      range_missing_ += traced_ ? range.size() : 0;
      continue;
    }
    for (size_t j : range) {
      is_hot[j] = 1;
      hot.push_back(j);
    }
  }
  hot_.swap(hot);
  is_hot_.swap(is_hot);
}

void Builder::AddHot(size_t basket) {
  if (!is_hot_[basket]) {
    is_hot_[basket] = 1;
    hot_.push_back(basket);
  }
}

void Builder::FindHot() {
  is_hot_.assign(baskets_.size(), 0);
  std::vector<TraceRecord> trace;
  if (auto bytes = ReadWhole(paths_.trace(), kTraceMaxBytes)) {
    trace = DecodeTrace(*bytes);
  }
  traced_ = !trace.empty();
  // Extent index of the previous replica -> basket.
  std::unordered_map<long, size_t> basket_of_extent;
  for (size_t i = 0; i < previous_extent_.size(); ++i) {
    if (previous_extent_[i] >= 0) {
      basket_of_extent[previous_extent_[i]] = i;
    }
  }
  const uint64_t origin = entry_.size();
  std::unordered_map<size_t, uint64_t> cover;  // basket -> bytes one record covered
  std::vector<size_t> touched;
  for (const TraceRecord& rec : trace) {
    cover.clear();
    touched.clear();
    for (const TraceRange& range : rec.ranges) {
      const uint64_t a = range.offset;
      const uint64_t b = range.offset + range.length;
      if (rec.generation == 0 || a < origin) {
        auto it = std::upper_bound(baskets_.begin(), baskets_.end(), a,
                                   [](uint64_t off, const Basket& x) { return off < x.seek; });
        // Back to the first unit that reaches a: units may share bytes (ROOT writes a page
        // identical to one already written once, and every column with it names that page).
        while (it != baskets_.begin() && std::prev(it)->seek + std::prev(it)->bytes > a) {
          --it;
        }
        for (; it != baskets_.end() && it->seek < b; ++it) {
          const uint64_t lo = std::max(a, it->seek);
          const uint64_t hi = std::min(b, it->seek + it->bytes);
          if (lo < hi) {
            const auto i = static_cast<size_t>(it - baskets_.begin());
            if (cover[i] == 0) {
              touched.push_back(i);
            }
            cover[i] += (hi - lo) * 100 / it->bytes + 1;  // in percent of the basket
          }
        }
      } else if (previous_ && rec.generation == previous_->generation) {
        const long first = previous_->ExtentAt(a);
        for (size_t e = first < 0 ? previous_->extents.size() : static_cast<size_t>(first);
             e < previous_->extents.size() && previous_->extents[e].offset < b; ++e) {
          const ReplicaExtent& x = previous_->extents[e];
          auto it = basket_of_extent.find(static_cast<long>(e));
          const uint64_t lo = std::max(a, x.offset);
          const uint64_t hi = std::min(b, x.end());
          if (it != basket_of_extent.end() && lo < hi) {
            if (cover[it->second] == 0) {
              touched.push_back(it->second);
            }
            cover[it->second] += (hi - lo) * 100 / x.bytes + 1;
          }
        }
      }
    }
    for (size_t i : touched) {
      if (cover[i] >= kHotCoverPercent) {
        AddHot(i);
      }
    }
  }
  if (trace.empty()) {
    // No trace: every basket held whole, by entry within each tree, then by place.
    std::vector<size_t> order(baskets_.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Basket& x = baskets_[a];
      const Basket& y = baskets_[b];
      return std::make_tuple(x.tree, x.first_entry, x.seek)
             < std::make_tuple(y.tree, y.first_entry, y.seek);
    });
    for (size_t i : order) {
      if (previous_extent_[i] >= 0 || src_.Holds(baskets_[i].seek, baskets_[i].bytes)) {
        AddHot(i);
      }
    }
  }
  // What the previous replica holds stays, in its order, after what the trace asks for.
  if (previous_) {
    std::vector<std::pair<long, size_t>> kept;
    for (size_t i = 0; i < previous_extent_.size(); ++i) {
      if (previous_extent_[i] >= 0) {
        kept.emplace_back(previous_extent_[i], i);
      }
    }
    std::sort(kept.begin(), kept.end());
    for (const auto& [e, i] : kept) {
      AddHot(i);
    }
  }
}

Status Builder::ChooseCodec() {
  // What the replica may take: budget% of the hot baskets' original size, less the tree records
  // it adds (estimated by the originals' size) and the extents kept from the previous replica.
  uint64_t hot_original = 0;
  uint64_t fresh_original = 0;
  uint64_t kept = 0;
  std::vector<size_t> fresh;
  for (size_t i : hot_) {
    hot_original += baskets_[i].bytes;
    if (Fresh(i)) {
      fresh.push_back(i);
      fresh_original += baskets_[i].bytes;
    } else if (const ReplicaExtent* e = PreviousExtent(i)) {
      kept += e->bytes;
    }
  }
  uint64_t records = 0;
  std::set<uint32_t> seen;
  for (size_t i : hot_) {
    if (seen.insert(baskets_[i].tree).second) {
      records += RecordBytes(baskets_[i].tree);
    }
  }
  // A sample across the new hot baskets (a fixed stride would alias with the number of
  // branches read per cluster and sample one branch only), up to options_.sample_bytes as
  // stored (the candidates work on it decompressed).
  const uint64_t budget = std::max<uint64_t>(options_.sample_bytes, 1);
  std::vector<size_t> order = fresh;
  std::mt19937_64 rng(fresh.size());
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<StoredUnit> sample;
  uint64_t taken = 0;
  codec::Algorithm original = codec::Algorithm::kNone;
  for (size_t k = 0; k < order.size() && taken < budget; ++k) {
    const Basket& x = baskets_[order[k]];
    std::vector<uint8_t> rec;
    if (!ReadStored(order[k], rec)) {
      continue;
    }
    auto unit = UnitOf(x, rec);
    if (!unit) {
      continue;
    }
    taken += rec.size();
    if (original == codec::Algorithm::kNone
        && unit->stored.size() != static_cast<size_t>(unit->raw_bytes)) {
      original = codec::DetectAlgorithm(unit->stored);
    }
    sample.push_back(std::move(*unit));
  }
  // LZMA is chosen to be small and paid for with slow decoding: a replica may take half again
  // its size. Other originals: no more than they take.
  const uint32_t percent = options_.budget_percent != 0
                               ? options_.budget_percent
                               : (original == codec::Algorithm::kLzma ? 150u : 100u);
  const double allowed = static_cast<double>(hot_original) * percent / 100.0
                         - static_cast<double>(records) - static_cast<double>(kept);
  const double bound =
      fresh_original == 0 ? 1.0 : std::max(0.0, allowed / static_cast<double>(fresh_original));
  plan_ = FERRY_TRY(PlanReplicaCodec(sample, options_.codec, bound, [this] { return Pause(); }));
  r_.codec_why = plan_.why;
  r_.rates = plan_.rates;
  return OkStatus();
}

void Builder::KeepCodec() {
  plan_ = CodecPlan{};
  plan_.dense = previous_ ? previous_->setting : codec::Setting{codec::Algorithm::kNone, 0};
  plan_.candidates = {plan_.dense};
  r_.rates = previous_ ? previous_->rates : std::vector<CodecRate>{};
  r_.codec_why = "units relocated as stored (stage 1)";
}

Status Builder::ReadPrevious(const ReplicaExtent& e, std::span<uint8_t> dest) const {
  FERRY_TRY(PreadFull(previous_data_.get(), dest.data(), dest.size(),
                      e.offset - previous_->baskets_begin));
  if (previous_sealer_) {
    const auto index = static_cast<uint32_t>(&e - previous_->extents.data());
    if (!previous_sealer_->OpenExtent(index, e.offset, dest, e.tag)) {
      return CorruptionError("extent of the previous replica does not authenticate");
    }
  } else if (crc32c::Value(dest.data(), dest.size()) != e.crc) {
    return CorruptionError("extent of the previous replica does not match its CRC");
  }
  return OkStatus();
}

Status Builder::ReadStored(size_t i, std::vector<uint8_t>& record) {
  record.resize(baskets_[i].bytes);
  return ReadStored(i, std::span<uint8_t>(record));
}

Status Builder::ReadStored(size_t i, std::span<uint8_t> dest) {
  const Basket& x = baskets_[i];
  const ReplicaExtent* e = PreviousExtent(i);
  if (e != nullptr && e->as_stored && e->bytes == dest.size() && ReadPrevious(*e, dest)) {
    return OkStatus();
  }
  if (!src_.Holds(x.seek, x.bytes)) {
    return NotFoundError("not held");
  }
  return src_.ReadAt(x.seek, dest);
}

uint64_t Builder::RecordBytes(uint32_t object) const {
  if (rntuples_.empty()) {
    return trees_[object].record.size();
  }
  const RntupleRecordSource& r = rntuples_[object];
  uint64_t bytes = r.anchor_key.size() + r.anchor_payload.size() + r.footer.size();
  for (const rootio::ClusterGroup& g : r.parsed_footer.groups) {
    bytes += g.page_list.length;
  }
  return bytes;
}

Result<StoredUnit> Builder::UnitOf(const Basket& x, std::span<const uint8_t> stored) const {
  if (rntuples_.empty()) {
    return StoredUnitOfRecord(stored);
  }
  const RntupleRecordSource& r = rntuples_[x.tree];
  const rootio::PageInfo& page =
      r.Page(page_refs_[x.tree][static_cast<size_t>(x.branch)][static_cast<size_t>(x.basket)]);
  const rootio::ColumnRecord& column = r.columns[static_cast<size_t>(x.branch)];
  const uint64_t raw = rootio::PageLength(page.elements, column.bits);
  if (page.locator.size > stored.size() || raw > static_cast<uint64_t>(INT32_MAX)) {
    return CorruptionError("page of the codec sample does not fit");
  }
  StoredUnit u;
  u.stored.assign(stored.begin(), stored.begin() + static_cast<ptrdiff_t>(page.locator.size));
  u.raw_bytes = static_cast<int32_t>(raw);
  return u;
}

std::vector<int64_t> Builder::ChooseUsedTrees() {
  used_trees_.clear();
  std::vector<int64_t> tree_of(ObjectCount(), -1);
  for (size_t i : hot_) {
    const uint32_t t = baskets_[i].tree;
    if (tree_of[t] < 0) {
      tree_of[t] = static_cast<int64_t>(used_trees_.size());
      used_trees_.push_back(t);
    }
  }
  return tree_of;
}

Result<MovedUnit> Builder::PlaceBasket(
    OverlayWriter& w, size_t i, uint32_t tree, ByteVector& out, std::vector<uint8_t>& record) {
  const Basket& x = baskets_[i];
  const ReplicaExtent* e = PreviousExtent(i);
  if (e != nullptr && !Fresh(i)) {
    record.resize(e->bytes);
    if (ReadPrevious(*e, record)) {
      // Already in the replica in the form this stage wants: copied as it is.
      auto moved = e->as_stored
                       ? w.AddStoredUnit(tree, x.branch, x.basket, record, &out)
                       : w.AddEncodedUnit(tree, x.branch, x.basket, record, e->setting, &out);
      if (moved) {
        return moved;
      }
    }
  }
  if (!reencode_) {
    return PlaceStored(w, i, tree, out);
  }
  if (ReadStored(i, record)) {
    auto moved = w.AddUnit(tree, x.branch, x.basket, record, &out);
    r_.new_baskets += moved ? 1u : 0u;
    return moved;
  }
  return NotFoundError("not placed");
}

Result<MovedUnit> Builder::PlaceStored(OverlayWriter& w, size_t i, uint32_t tree, ByteVector& out) {
  const Basket& x = baskets_[i];
  const size_t at = out.size();
  out.resize(at + x.bytes);
  if (!ReadStored(i, std::span<uint8_t>(out.data() + at, x.bytes))) {
    out.resize(at);
    return NotFoundError("not placed");
  }
  auto moved = w.PlaceStoredUnit(tree, x.branch, x.basket, &out, at);
  r_.new_baskets += moved ? 1u : 0u;
  return moved;
}

void Builder::AdoptOverlay(const Overlay& overlay,
                           const std::set<std::pair<uint32_t, int32_t>>& branches) {
  for (const Patch& p : overlay.patches) {
    next_.patches.push_back({p.offset, p.bytes});
  }
  for (const PlacedRecord& rec : overlay.records) {
    next_.records.push_back({rec.offset, rec.slot_bytes, {rec.record.begin(), rec.record.end()}});
  }
  next_.baskets_begin = overlay.units_begin;
  next_.virtual_size = overlay.virtual_size;
  std::set<std::pair<uint32_t, std::string>> named;
  for (const auto& [t, b] : branches) {
    const auto k = static_cast<size_t>(b);
    std::string name = rntuples_.empty() ? trees_[used_trees_[t]].info.branches[k].name
                                         : rntuples_[used_trees_[t]].column_fields[k];
    if (named.insert({t, name}).second) {
      next_.branches.push_back({t, std::move(name)});
    }
  }
}

std::unique_ptr<OverlayWriter> Builder::MakeWriter(const std::vector<uint64_t>& slots) {
  std::unique_ptr<OverlayFormat> format;
  if (!rntuples_.empty()) {
    std::vector<RntupleRecordSource> ntuples;
    for (uint32_t t : used_trees_) {
      ntuples.push_back(rntuples_[t]);
    }
    format = MakeRntupleOverlay(std::move(ntuples));
  } else {
    std::vector<TreeRecordSource> trees;
    for (uint32_t t : used_trees_) {
      trees.push_back(trees_[t]);
    }
    format = MakeTreeOverlay(std::move(trees));
  }
  auto w = std::make_unique<OverlayWriter>(entry_.size(), plan_.dense, std::move(format));
  w->set_record_bytes(slots);
  return w;
}

Status Builder::WriteOnce(const std::vector<uint64_t>& slots, std::vector<uint64_t>* need) {
  next_ = ReplicaManifest{};
  next_.generation = previous_ ? previous_->generation + 1 : 1;
  if (const cache::PageSealer* entry = entry_.sealer()) {
    // A fresh salt per attempt: a retry rewrites the generation's extents with other bytes.
    next_.sealed = true;
    next_.salt = RandomReplicaSalt();
    next_sealer_ = next_.Sealer(*entry);
  }
  // Only trees that get a basket are relocated; writer tree k = manifest tree k.
  const std::vector<int64_t> tree_of = ChooseUsedTrees();
  std::unique_ptr<OverlayWriter> writer = MakeWriter(slots);
  OverlayWriter& w = *writer;
  w.set_encodings(plan_.candidates, [this](uint64_t raw, std::span<const uint64_t> stored) {
    return plan_.Choose(raw, stored);
  });
  for (uint32_t t : used_trees_) {
    next_.trees.push_back(ObjectPath(t));
  }
  FERRY_TRY(w.Start());
  const std::string data_path = paths_.replica_data(next_.generation);
  Fd data = FERRY_TRY(OpenCacheFile(data_path, O_WRONLY | O_TRUNC));
  ByteVector out;
  uint64_t written = 0;
  std::vector<uint8_t> record;
  std::set<std::pair<uint32_t, int32_t>> branches;
  r_.missing_baskets = range_missing_;
  r_.new_baskets = 0;
  for (size_t i : hot_) {
    FERRY_TRY(Pause());
    const Basket& x = baskets_[i];
    const auto tree = static_cast<uint32_t>(tree_of[x.tree]);
    branches.insert({tree, x.branch});
    const size_t at = out.size();
    Result<MovedUnit> moved = PlaceBasket(w, i, tree, out, record);
    if (!moved) {
      r_.missing_baskets += 1;  // not held whole (or damaged): stays where it is
      out.resize(at);
      continue;
    }
    const std::span<uint8_t> unit(out.data() + at, moved->bytes);
    const auto index = static_cast<uint32_t>(next_.extents.size());
    SealTag tag{};
    if (next_sealer_) {
      tag = next_sealer_->SealExtent(index, moved->offset, unit, unit.data());
    }
    next_.extents.push_back({.offset = moved->offset,
                             .bytes = moved->bytes,
                             .crc = next_sealer_ ? 0 : crc32c::Value(unit.data(), unit.size()),
                             .original_offset = moved->original_offset,
                             .original_bytes = moved->original_bytes,
                             .tree = tree,
                             .branch = static_cast<uint32_t>(x.branch),
                             .basket = static_cast<uint32_t>(x.basket),
                             .setting = moved->setting,
                             .unit = !moved->page           ? ReplicaExtent::Unit::kBasket
                                     : moved->page_checksum ? ReplicaExtent::Unit::kPageWithChecksum
                                                            : ReplicaExtent::Unit::kPage,
                             .raw_bytes = moved->raw_bytes,
                             .as_stored = moved->as_stored,
                             .tag = tag});
    next_.original_bytes += moved->original_bytes;
    if (out.size() >= kWriteChunk) {
      FERRY_TRY(PwriteFull(data.get(), out.data(), out.size(), written));
      written += out.size();
      out.clear();
    }
  }
  FERRY_TRY(PwriteFull(data.get(), out.data(), out.size(), written));
  written += out.size();
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(entry_.size(), 100)));
  FERRY_TRY(src_.ReadAt(0, head));
  auto overlay = w.Finish(head);
  if (!overlay) {
    if (overlay.error().code() == ErrorCode::kNoSpace) {
      for (size_t k = 0; k < used_trees_.size(); ++k) {
        need->push_back(w.needed_record_bytes(static_cast<uint32_t>(k)));
      }
    }
    return std::move(overlay).error();
  }
  if (LazyDurability()) {
    // Writeback starts now; nothing waits for it (Builder::LazyDurability).
    (void)::sync_file_range(data.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
  } else if (config_.sync && ::fdatasync(data.get()) != 0) {
    return IoError("fdatasync " + data_path, errno);
  }
  FERRY_TRY(data.Close());
  AdoptOverlay(*overlay, branches);
  next_.data_bytes = written;
  return OkStatus();
}

Status Builder::Write() {
  std::vector<uint64_t> need;
  Status st = WriteOnce({}, &need);
  if (!st && !need.empty()) {
    need.swap(next_slots_scratch_);
    std::vector<uint64_t> retry_need;
    st = WriteOnce(next_slots_scratch_, &retry_need);
  }
  if (!st) {
    (void)::unlink(paths_.replica_data(next_.generation).c_str());
  }
  return st;
}

Status Builder::Publish() {
  ReplicaManifest& m = next_;
  {
    ReaderLock lock(entry_.mu());
    const IndexInfo& info = entry_.index().info();
    m.url = info.url;
    m.epoch = info.epoch;
    m.origin_size = info.origin_size;
    m.origin_mtime = info.origin_mtime;
  }
  m.created_unix = ::time(nullptr);
  m.setting = plan_.dense;
  m.SetLibraries();
  m.missing_baskets = r_.missing_baskets;
  m.rates = r_.rates;
  m.build_cpu_ns = ThreadCpuNs() - cpu0_ + idle_cpu_ns_ + (previous_ ? previous_->build_cpu_ns : 0);
  FERRY_TRY_CTX(m.Validate(), "new replica of " + m.url);
  std::vector<uint8_t> bytes;
  m.Encode(bytes, next_sealer_.get());
  FERRY_TRY(PublishFile(paths_.manifest(), bytes, paths_.subdir));
  // Readers that opened the previous generation keep its descriptor; one that loaded the
  // previous manifest but has not opened its data file yet loads this one (ReplicaView::Open).
  RemoveReplicaData(paths_, m.generation);
  r_.published = true;
  return OkStatus();
}

void Builder::Release() {
  const ReplicaManifest& m = next_;
  std::vector<fetch::Range> ranges;
  for (const ReplicaExtent& e : m.extents) {
    ranges.push_back({e.original_offset, e.original_bytes});
  }
  // The relocated trees' original records too: readers of the virtual file read the manifest's
  // (a later build rebuilds the original from it, LoadTree).
  for (const std::string& path : m.trees) {
    for (const TreeRecordSource& t : trees_) {
      if (t.path == path) {
        ranges.push_back({t.key.seek_key, static_cast<uint64_t>(t.key.nbytes)});
      }
    }
  }
  fetch::Normalize(ranges);
  Status st = OkStatus();
  const bool sole = entry_.WithSoleOpen([&] {
    auto freed = entry_.ReleaseRanges(ranges);
    if (freed) {
      r_.released_bytes = *freed;
    } else {
      st = std::move(freed).error();
    }
  });
  r_.release_deferred = !sole;
  if (sole && st && r_.missing_baskets == 0) {
    // Everything the trace asked for is in the replica: its records served their purpose.
    Status busy;
    if (entry_.TryLockForWrite(busy)) {
      (void)::truncate(paths_.trace().c_str(), 0);
      entry_.UnlockForWrite();
    }
  }
}

Status Builder::OnIdleThread(const std::function<Status()>& fn) {
  // A re-encoding kAuto chose runs where the measure found the cores for it, under the pause's
  // rule; only one asked for (stage 2 when idle) is worth no more than the idle class. Idle,
  // the former could starve while it holds relocations back until its next pause.
  if (!options_.become_idle || options_.stage != ReplicaStage::kReencode) {
    return fn();
  }
  const uint64_t before = idle_cpu_ns_;
  Status st = RunOnThread(options_.become_idle, fn, &idle_cpu_ns_);
  r_.cpu_ns += idle_cpu_ns_ - before;
  return st;
}

bool Builder::ChooseStage() {
  bool fresh = false;
  bool stored = false;
  for (size_t i : hot_) {
    const ReplicaExtent* e = PreviousExtent(i);
    fresh = fresh || (e == nullptr && src_.Holds(baskets_[i].seek, baskets_[i].bytes));
    stored = stored || (e != nullptr && e->as_stored);
  }
  switch (options_.stage) {
    case ReplicaStage::kRelocate:
      reencode_ = false;
      r_.stage_why = "asked to relocate";
      return fresh;
    case ReplicaStage::kReencode:
      reencode_ = true;
      r_.stage_why = "asked to re-encode";
      return fresh || stored;
    case ReplicaStage::kAuto:
      break;
  }
  if (!fresh && !stored) {
    return false;
  }
  // Measured now, per file: a machine with room re-encodes in one stage.
  std::string why;
  reencode_ = !options_.reencode_fits || options_.reencode_fits(&why);
  r_.stage_why = (reencode_ ? "re-encoded at once: " : "relocated, re-encoding when idle: ") + why;
  return fresh || reencode_;
}

Status Builder::Run() {
  cpu0_ = ThreadCpuNs();
  reencode_ = options_.stage == ReplicaStage::kReencode;
  // Each step may take tens of milliseconds (an LZMA file's tree records decode slowly).
  FERRY_TRY(Pause());
  FERRY_TRY(LoadPrevious());
  if (!LoadTrees()) {
    return OkStatus();
  }
  FERRY_TRY(Pause());
  FindHot();
  CompleteRanges();
  if (hot_.empty()) {
    r_.state = ReplicaState::kNone;
    r_.reason = "no basket was read whole (nothing to relocate)";
    return OkStatus();
  }
  if (previous_ && !ChooseStage()) {
    next_ = *previous_;
    r_.missing_baskets = range_missing_;
    for (size_t i : hot_) {
      r_.missing_baskets += previous_extent_[i] < 0 ? 1u : 0u;
    }
    r_.rates = previous_->rates;
    r_.codec_why = "up to date";
    used_trees_.clear();
  } else {
    if (!previous_) {
      (void)ChooseStage();
    }
    FERRY_TRY(Pause());
    if (reencode_) {
      FERRY_TRY(OnIdleThread([this]() -> Status {
        FERRY_TRY(ChooseCodec());
        return Write();
      }));
    } else {
      KeepCodec();
      FERRY_TRY(Write());
    }
    if (next_.extents.empty()) {
      (void)::unlink(paths_.replica_data(next_.generation).c_str());
      r_.state = ReplicaState::kNone;
      r_.reason = "none of the baskets the analysis read is held whole";
      return OkStatus();
    }
    FERRY_TRY(Publish());
  }
  if (LazyDurability()) {
    r_.release_deferred = true;  // until the re-encoding that follows
  } else {
    // A background re-encoding releases once no pass reads: the release holds the entry's open
    // lock exclusively, and a pass's opens would wait for it.
    if (reencode_ && options_.pause) {
      options_.pause([this] { return Wanted(); });
    }
    Release();
  }
  r_.generation = next_.generation;
  r_.stage = next_.Stage();
  r_.setting = next_.setting;
  r_.baskets = next_.extents.size();
  r_.original_bytes = next_.original_bytes;
  r_.virtual_bytes = next_.virtual_size;
  r_.state = r_.missing_baskets == 0 ? ReplicaState::kBuilt : ReplicaState::kPartial;
  r_.reason = r_.missing_baskets == 0 ? ""
                                      : std::to_string(r_.missing_baskets)
                                            + " baskets the analysis read are not held whole";
  for (const ReplicaBranch& b : next_.branches) {
    r_.hot_branches.push_back(next_.trees[b.tree] + "/" + b.name);
  }
  FillEncodings(next_, r_);
  return OkStatus();
}

// An explicit build of a file another process builds: says so (byte kBuildWantedByte, shared,
// which a background builder yields to at its next pause), then waits for the build lock. An
// explicit build it waits for runs to its end.
Status WaitForBuildLock(LockFile& lock, int wait_ms) {
  FERRY_TRY(lock.Lock(kBuildWantedByte, /*exclusive=*/false, wait_ms));
  Status got = lock.Lock(kBuildLockByte, /*exclusive=*/true, wait_ms);
  (void)lock.Unlock(kBuildWantedByte);
  if (!got) {
    return std::move(got).error().AddContext("waiting for another process's build of the file");
  }
  return OkStatus();
}

// The page sealer of an encrypted entry (its data key unwrapped by `key`), or null with why not
// in `why`.
std::unique_ptr<const cache::PageSealer> EntrySealer(const std::string& entry_key,
                                                     const IndexInfo& info,
                                                     const cache::MasterKey* key,
                                                     std::string* why) {
  if (key == nullptr || key->id() != info.key_id) {
    *why = "the entry is encrypted under master key id " + cache::KeyIdHex(info.key_id)
           + (key == nullptr ? " and no cache_key_file is set" : ", not the cache_key_file's");
    return nullptr;
  }
  auto data_key = key->Unwrap(info.wrapped_key);
  if (!data_key) {
    *why = data_key.error().ToString();
    return nullptr;
  }
  auto sealer = std::make_unique<const cache::PageSealer>(
      *data_key, std::strtoull(entry_key.c_str(), nullptr, 16), info.epoch);
  cache::WipeKey(*data_key);
  return sealer;
}

uint64_t ReplicaDiskBytes(const EntryPaths& paths, uint64_t generation) {
  return AllocatedBytes(paths.manifest()) + AllocatedBytes(paths.replica_data(generation));
}

}  // namespace

std::string_view ReplicaStateName(ReplicaState state) {
  switch (state) {
    case ReplicaState::kNone:
      return "none";
    case ReplicaState::kBuilding:
      return "building";
    case ReplicaState::kBuilt:
      return "built";
    case ReplicaState::kPartial:
      return "partial";
    case ReplicaState::kUnsupported:
      return "unsupported";
  }
  return "none";
}

Result<ReplicaBuildReport> BuildReplica(const Config& given,
                                        const std::string& key,
                                        const ReplicaBuildOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  // The builder is its own process (`ferry cache replica build`): the master key of the conf's
  // cache_key_file unwraps an encrypted entry's data key, as the cache's processes do.
  Config config = given;
  if (!config.key_file.empty() && !config.master_key) {
    config.master_key = std::make_shared<const cache::MasterKey>(
        FERRY_TRY(cache::MasterKey::Load(config.key_file)));
  }
  const uint64_t cpu0 = ThreadCpuNs();
  const EntryPaths paths = PathsFor(config.dir, key);
  ReplicaBuildReport report;
  report.key = key;
  PageIndex index = FERRY_TRY(LoadIndex(paths.idx()));
  report.url = index.info().url;
  report.origin_bytes = index.info().origin_size;
  LockFile build_lock = FERRY_TRY(LockFile::Open(paths.lock()));
  if (!build_lock.Lock(kBuildLockByte, /*exclusive=*/true, 0)) {
    if (options.yield) {
      report.state = ReplicaState::kBuilding;
      report.reason = "another process is building it";
      return report;
    }
    FERRY_TRY(WaitForBuildLock(build_lock, options.wait_ms));
  }
  // A file a pass still has open (it moved past it and reads on) is built at the low priority
  // the caller gives (ReplicaBuildOptions::become_low); a closed one at the caller's own. Asked
  // before our own open takes the byte.
  const bool open_elsewhere = build_lock.HeldElsewhere(cache::kOpenLockByte);
  Counters counters;
  Entry entry(config, counters, key, report.url);
  FERRY_TRY(entry.OpenExisting());
  Builder b(config, paths, entry, options, build_lock, report);
  uint64_t low_cpu_ns = 0;
  const bool low = open_elsewhere && options.become_low;
  if (low) {
    b.HandBackOnClose();
  }
  Status st = low ? RunOnThread(
                  options.become_low, [&b] { return b.Run(); }, &low_cpu_ns)
                  : b.Run();
  if (!st && st.error().message() == kHandedBackReason) {
    // The pass closed the file while the low thread relocated it: redone here, at the caller's
    // priority, from the start (the unpublished generation's data file is rewritten). What the
    // low thread did is a few tens of milliseconds at most, and it ran on spare CPU.
    report = ReplicaBuildReport{.key = key, .url = report.url};
    report.origin_bytes = index.info().origin_size;
    Builder again(config, paths, entry, options, build_lock, report);
    st = again.Run();
  }
  report.cpu_ns += low_cpu_ns;
  if (!st) {
    if (st.error().code() != ErrorCode::kCancelled) {
      return std::move(st).error();
    }
    // Like a crash, for the explicit build that takes over (or the relocation that goes
    // first): the previous replica stays.
    report = ReplicaBuildReport{.key = key, .url = report.url};
    report.state = ReplicaState::kBuilding;
    report.reason = st.error().message();
    return report;
  }
  report.cpu_ns += ThreadCpuNs() - cpu0;  // the builder's other threads' are in already
  report.replica_bytes = report.generation != 0 ? ReplicaDiskBytes(paths, report.generation) : 0;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!report.published && report.generation != 0) {
    // Up to date: the replica is at the stage an earlier build chose, for its reasons.
    const std::optional<StatusLines> before = ReadStatusFile(paths);
    report.stage_why = before ? before->stage_why : "";
  }
  WriteStatusFile(paths, report.state, report.reason, report.stage_why);
  (void)counters.MergeInto(config.dir);
  return report;
}

Result<ReplicaBuildReport> ReplicaStatusOf(const EntryPaths& paths, const cache::MasterKey* key) {
  ReplicaBuildReport report;
  report.key = paths.base.substr(paths.base.rfind('/') + 1);
  PageIndex index = FERRY_TRY(LoadIndex(paths.idx()));
  std::string no_key;
  const std::unique_ptr<const cache::PageSealer> sealer =
      index.encrypted() ? EntrySealer(report.key, index.info(), key, &no_key) : nullptr;
  report.url = index.info().url;
  report.origin_bytes = index.info().origin_size;
  report.virtual_bytes = index.info().origin_size;
  auto lock = LockFile::Open(paths.lock());
  const bool building = lock && lock->HeldElsewhere(kBuildLockByte);
  auto m = index.encrypted() && !sealer ? Result<ReplicaManifest>(NotFoundError(no_key))
                                        : LoadManifest(paths, sealer.get());
  if (!no_key.empty()) {
    report.state = ReplicaState::kNone;
    report.reason = ::access(paths.manifest().c_str(), F_OK) == 0
                        ? "sealed replica not read: " + no_key
                        : "not built yet";
  } else if (m && m->epoch == index.info().epoch && m->origin_size == index.info().origin_size
             && m->origin_mtime == index.info().origin_mtime) {
    report.state = m->missing_baskets == 0 ? ReplicaState::kBuilt : ReplicaState::kPartial;
    report.reason = m->missing_baskets == 0 ? ""
                                            : std::to_string(m->missing_baskets)
                                                  + " baskets the analysis read are not held whole";
    report.generation = m->generation;
    report.stage = m->Stage();
    report.setting = m->setting;
    report.rates = m->rates;
    report.baskets = m->extents.size();
    report.missing_baskets = m->missing_baskets;
    report.original_bytes = m->original_bytes;
    report.virtual_bytes = m->virtual_size;
    report.replica_bytes = ReplicaDiskBytes(paths, m->generation);
    report.cpu_ns = m->build_cpu_ns;
    for (const ReplicaBranch& b : m->branches) {
      report.hot_branches.push_back(m->trees[b.tree] + "/" + b.name);
    }
    FillEncodings(*m, report);
    const std::optional<StatusLines> status = ReadStatusFile(paths);
    report.stage_why = status ? status->stage_why : "";
  } else if (const std::optional<StatusLines> status = ReadStatusFile(paths)) {
    report.state =
        status->state == "unsupported" ? ReplicaState::kUnsupported : ReplicaState::kNone;
    report.reason = status->reason;
    if (m) {
      report.reason = "the replica belongs to an older copy of the file";
    }
  } else {
    report.state = ReplicaState::kNone;
    report.reason = m ? "the replica belongs to an older copy of the file" : "not built yet";
  }
  if (building) {
    report.state = ReplicaState::kBuilding;
  }
  return report;
}

Status DropReplica(const EntryPaths& paths) {
  for (const std::string& f : {paths.manifest(), paths.replica_status(), paths.trace()}) {
    if (::unlink(f.c_str()) != 0 && errno != ENOENT) {
      return IoError("cannot remove " + f, errno);
    }
  }
  RemoveReplicaData(paths, 0);
  return OkStatus();
}

}  // namespace ferry::replica
