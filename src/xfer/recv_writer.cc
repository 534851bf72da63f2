// The receiver's writer thread: block writes at offsets, journal syncs, and the final
// truncate / fsync / rename of each file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/hash.h"
#include "base/strings.h"
#include "xfer/paths.h"
#include "xfer/recv_session.h"

namespace ferry::xfer {
namespace {

constexpr uint64_t kFsyncTag = 1ull << 63;
constexpr uint64_t kDirSyncTag = 1ull << 62;
constexpr uint64_t kDirectMinBytes = 1u << 20;
// In the last journal_sync_bytes of a file, a datasync every journal_sync_bytes / this.
constexpr uint64_t kTailSyncDivisor = 8;

uint32_t AlignUp(uint32_t v) {
  return (v + 4095u) & ~4095u;
}

}  // namespace

void RecvSession::Ack(const WriteItem& item, AckStatus status) {
  if (item.conn) {
    int64_t t = StageNowNs();
    (void)item.conn->SendFrame({.type = FrameType::kAck,
                                .flags = static_cast<uint16_t>(status),
                                .file_id = item.file,
                                .block = item.block});
    st_ack_.Since(t);
  }
}

void RecvSession::Submit() {
  int64_t t = StageNowNs();
  if (Status s = io_->Submit(); !s) {
    Log("write submission failed: " + s.error().ToString());
  }
  st_write_submit_.Since(t);
}

Status RecvSession::OpenFile(RecvFile& f) {
  if (owner_.opt.discard) {
    f.hashes.assign(f.n_blocks, 0);
    f.have.assign(f.n_blocks, 0);
    f.n_have = 0;
    f.state = RecvFile::State::kOpen;
    return OkStatus();
  }
  if (!cached_dir_fd_.valid() || cached_dir_ != f.dir) {
    cached_dir_fd_ = Fd();
    cached_dir_fd_ = FERRY_TRY(OpenDirBeneath(owner_.root.get(), f.dir, /*create=*/true));
    cached_dir_ = f.dir;
  }
  f.dir_fd = Fd(::fcntl(cached_dir_fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!f.dir_fd.valid()) {
    return IoError("dup failed", errno);
  }
  const std::string part = PartName(f.name);
  const std::string jname = JournalName(f.name);
  bool reuse = false;
  if (f.resumable) {
    auto fd = OpenInDir(f.dir_fd.get(), part, O_RDWR);
    if (fd) {
      f.fd = std::move(*fd);
      reuse = true;
    }
  }
  if (!reuse) {
    (void)::unlinkat(f.dir_fd.get(), part.c_str(), 0);
    (void)::unlinkat(f.dir_fd.get(), jname.c_str(), 0);
    f.fd = FERRY_TRY(OpenInDir(f.dir_fd.get(), part, O_RDWR | O_CREAT | O_EXCL, 0600));
    if (owner_.opt.preallocate && f.entry.size > 0
        && ::fallocate(f.fd.get(), 0, 0, static_cast<off_t>(f.entry.size)) != 0
        && (errno == ENOSPC || errno == EDQUOT)) {
      return Error(ErrorCode::kNoSpace,
                   "not enough space under the receiver's root for "
                       + HumanBytes(static_cast<double>(f.entry.size)),
                   errno);
    }
  }
  if (owner_.opt.direct_io && f.entry.size >= kDirectMinBytes) {
    int flags = ::fcntl(f.fd.get(), F_GETFL);
    if (flags >= 0 && ::fcntl(f.fd.get(), F_SETFL, flags | O_DIRECT) == 0) {
      f.direct = true;
      direct_used_.store(true);
    } else if (!noted_buffered_) {
      noted_buffered_ = true;
      std::string note =
          "the filesystem under the receiver's root refuses O_DIRECT: buffered writes";
      Log(note);
      SendNotice(note);
    }
  }
  f.hashes.assign(f.n_blocks, 0);
  f.have.assign(f.n_blocks, 0);
  f.n_have = 0;
  f.use_journal = f.n_blocks >= 2;
  if (f.use_journal) {
    JournalHeader h{f.entry.size, block_size_, f.entry.mtime_ns,
                    hash::Xxh3(f.entry.path.data(), f.entry.path.size())};
    std::span<const BlockHash> initial;
    if (reuse) {
      initial = f.resumed;
    }
    f.journal = FERRY_TRY(Journal::Create(f.dir_fd.get(), jname, h, initial));
    f.journal_records = initial.size();
  }
  if (reuse) {
    for (const BlockHash& b : f.resumed) {
      if (f.have[b.block] == 0) {
        f.have[b.block] = 1;
        ++f.n_have;
      }
      f.hashes[b.block] = b.hash;
    }
  }
  f.state = RecvFile::State::kOpen;
  f.last_sync = std::chrono::steady_clock::now();
  return OkStatus();
}

void RecvSession::FailFile(RecvFile& f, uint32_t id, const Error& e, bool keep_partial) {
  if (f.state == RecvFile::State::kFailed || f.state == RecvFile::State::kDone) {
    return;
  }
  f.state = RecvFile::State::kFailed;
  files_failed_.fetch_add(1);
  bool keep = keep_partial && f.use_journal && f.journal_records > 0;
  if (!keep && f.dir_fd.valid()) {
    (void)::unlinkat(f.dir_fd.get(), PartName(f.name).c_str(), 0);
    (void)::unlinkat(f.dir_fd.get(), JournalName(f.name).c_str(), 0);
    ++space_epoch_;  // its space is free once the writes still queued on it complete
    if (f.writes_inflight > 0) {
      releasing_.push_back(id);
    }
  }
  f.fd = Fd();
  f.journal = Journal();
  f.dir_fd = Fd();
  std::string text =
      f.entry.path + ": " + e.ToString() + (keep ? " (partial data kept for --resume)" : "");
  Log("file failed: " + text);
  SendControl(FrameType::kFileError, id, EncodeErrorMessage(e.code(), text));
  if (f.claimed) {
    owner_.ReleasePath(f.entry.path);
    f.claimed = false;
  }
}

void RecvSession::SubmitFinalSync(RecvFile& f, uint32_t id) {
  if (f.writes_inflight > 0 || f.sync_inflight || f.final_sync_submitted) {
    return;  // called again when those complete
  }
  // O_DIRECT tails were written padded to 4 KiB: cut the file to its real size.
  if (::ftruncate(f.fd.get(), static_cast<off_t>(f.entry.size)) != 0) {
    FailFile(f, id, IoError("truncate failed", errno));
    return;
  }
  (void)::fchmod(f.fd.get(), static_cast<mode_t>(f.entry.mode & 0777));
  timespec ts[2];
  ts[0].tv_sec = 0;
  ts[0].tv_nsec = UTIME_OMIT;
  ts[1].tv_sec = static_cast<time_t>(f.entry.mtime_ns / 1000000000);
  ts[1].tv_nsec = static_cast<long>(f.entry.mtime_ns % 1000000000);
  (void)::futimens(f.fd.get(), ts);
  if (!io_->PrepFsync(f.fd.get(), /*datasync=*/false, kFsyncTag | id)) {
    Submit();
    if (!io_->PrepFsync(f.fd.get(), false, kFsyncTag | id)) {
      FailFile(f, id, IoError("cannot queue fsync", EBUSY));
      return;
    }
  }
  f.sync_inflight = true;
  f.sync_start_ns = StageNowNs();
  f.final_sync_submitted = true;
  if (f.unsynced_bytes > final_flush_max_.load(std::memory_order_relaxed)) {
    final_flush_max_.store(f.unsynced_bytes, std::memory_order_relaxed);  // writer thread only
  }
}

void RecvSession::BeginFinish(RecvFile& f, uint32_t id) {
  f.state = RecvFile::State::kFinishing;
  if (owner_.opt.discard) {
    FileDurable(f, id);  // nothing to sync or rename
    return;
  }
  SubmitFinalSync(f, id);
}

void RecvSession::RecordBlock(RecvFile& f, const WriteItem& item) {
  if (f.have[item.block] == 0) {
    f.have[item.block] = 1;
    ++f.n_have;
  }
  f.hashes[item.block] = item.hash;
  bytes_.fetch_add(item.length);
}

void RecvSession::FinishFile(RecvFile& f, uint32_t id) {
  if (::renameat(f.dir_fd.get(), PartName(f.name).c_str(), f.dir_fd.get(), f.name.c_str()) != 0) {
    FailFile(f, id, IoError("cannot rename into place", errno));
    return;
  }
  if (f.use_journal) {
    (void)::unlinkat(f.dir_fd.get(), JournalName(f.name).c_str(), 0);
  }
  f.renamed = true;
  f.fd = Fd();
  f.journal = Journal();
  // The rename is durable once the directory is synced; FILE_DONE waits for that.
  if (!io_->PrepFsync(f.dir_fd.get(), /*datasync=*/false, kDirSyncTag | id)) {
    Submit();
    if (!io_->PrepFsync(f.dir_fd.get(), false, kDirSyncTag | id)) {
      (void)::fsync(f.dir_fd.get());
      FileDurable(f, id);
      return;
    }
  }
  f.sync_inflight = true;
  f.sync_start_ns = StageNowNs();
}

void RecvSession::FileDurable(RecvFile& f, uint32_t id) {
  f.digest = FileDigest(f.entry.size, block_size_, f.hashes);
  f.state = RecvFile::State::kDone;
  files_done_.fetch_add(1);
  f.dir_fd = Fd();
  std::vector<uint64_t>().swap(f.hashes);
  std::vector<uint8_t>().swap(f.have);
  std::vector<BlockHash>().swap(f.resumed);
  SendControl(FrameType::kFileDone, id, EncodeFileDone({f.entry.size, f.digest}));
  if (f.claimed) {
    owner_.ReleasePath(f.entry.path);
    f.claimed = false;
  }
}

void RecvSession::HandleItem(WriteItem& item) {
  const int64_t now = st_queued_.Since(item.t_ns);
  RecvFile& f = files_[item.file];
  switch (f.state) {
    case RecvFile::State::kDone:
    case RecvFile::State::kSkipped:
    case RecvFile::State::kFinishing:
      Ack(item, AckStatus::kOk);  // a duplicate of a block we have
      pool_->Release(item.buffer);
      return;
    case RecvFile::State::kFailed:
      Ack(item, AckStatus::kFileFailed);
      pool_->Release(item.buffer);
      return;
    case RecvFile::State::kPending:
      if (Status s = OpenFile(f); !s) {
        FailFile(f, item.file, s.error());
        Ack(item, AckStatus::kFileFailed);
        pool_->Release(item.buffer);
        return;
      }
      break;
    case RecvFile::State::kOpen:
      break;
  }
  if (f.have[item.block] != 0 && f.hashes[item.block] == item.hash) {
    Ack(item, AckStatus::kOk);
    pool_->Release(item.buffer);
    return;
  }
  if (owner_.opt.discard) {
    RecordBlock(f, item);
    Ack(item, AckStatus::kOk);
    pool_->Release(item.buffer);
    if (f.n_have == f.n_blocks) {
      BeginFinish(f, item.file);
    }
    return;
  }
  uint32_t len = item.length;
  uint8_t* buf = pool_->data(item.buffer);
  if (f.direct && len % 4096 != 0) {
    uint32_t padded = AlignUp(len);
    std::memset(buf + len, 0, padded - len);
    len = padded;
  }
  WriteItem& slot = slots_[static_cast<size_t>(item.buffer)];
  slot = std::move(item);
  slot.submitted = len;
  slot.done = 0;
  slot.space_epoch = space_epoch_;
  slot.t_ns = now;
  uint64_t offset = slot.block * block_size_;
  if (!io_->PrepWrite(f.fd.get(), buf, len, offset, static_cast<uint64_t>(slot.buffer))) {
    Submit();
    if (!io_->PrepWrite(f.fd.get(), buf, len, offset, static_cast<uint64_t>(slot.buffer))) {
      FailFile(f, slot.file, IoError("cannot queue a write", EBUSY));
      Ack(slot, AckStatus::kFileFailed);
      pool_->Release(slot.buffer);
      slot.conn.reset();
      return;
    }
  }
  ++f.writes_inflight;
}

void RecvSession::HandleCompletion(const IoCompletion& c) {
  if ((c.tag & kDirSyncTag) != 0) {
    auto id = static_cast<uint32_t>(c.tag & ~kDirSyncTag);
    RecvFile& f = files_[id];
    f.sync_inflight = false;
    st_fsync_.Since(f.sync_start_ns);
    if (c.result < 0) {
      Log("directory sync after " + f.entry.path + " failed: " + ErrnoText(-c.result));
    }
    FileDurable(f, id);
    return;
  }
  if ((c.tag & kFsyncTag) != 0) {
    auto id = static_cast<uint32_t>(c.tag & ~kFsyncTag);
    RecvFile& f = files_[id];
    f.sync_inflight = false;
    st_fsync_.Since(f.sync_start_ns);
    if (f.state == RecvFile::State::kFailed || f.state == RecvFile::State::kDone) {
      f.syncing.clear();
      return;
    }
    if (c.result < 0) {
      FailFile(f, id, IoError("fsync failed", -c.result));
      return;
    }
    if (!f.syncing.empty()) {
      if (Status s = f.journal.Append(f.syncing); s) {
        f.journal_records += f.syncing.size();
      } else {
        Log("journal of " + f.entry.path + " disabled: " + s.error().ToString());
        f.use_journal = false;
      }
      f.syncing.clear();
    }
    if (f.state == RecvFile::State::kFinishing) {
      if (f.final_sync_submitted) {
        FinishFile(f, id);
      } else {
        SubmitFinalSync(f, id);
      }
    }
    return;
  }
  WriteItem& item = slots_[c.tag];
  RecvFile& f = files_[item.file];
  --f.writes_inflight;
  st_write_.Since(item.t_ns);
  auto release = [&](AckStatus status) {
    Ack(item, status);
    pool_->Release(item.buffer);
    item.conn.reset();
  };
  if (f.state == RecvFile::State::kFailed) {
    release(AckStatus::kFileFailed);
    return;
  }
  if (c.result <= 0) {
    int e = c.result == 0 ? ENOSPC : -c.result;
    if ((e == ENOSPC || e == EDQUOT) && MakeRoom(item)) {
      return;  // parked: written again once the given-up file's space is released
    }
    Error err = (e == ENOSPC || e == EDQUOT)
                    ? Error(ErrorCode::kNoSpace, "the receiver's disk is full", e)
                    : IoError("write failed", e);
    release(AckStatus::kFileFailed);
    FailFile(f, item.file, err);
    return;
  }
  item.done += static_cast<uint32_t>(c.result);
  if (item.done < item.submitted) {
    uint64_t offset = item.block * block_size_ + item.done;
    if (io_->PrepWrite(f.fd.get(), pool_->data(item.buffer) + item.done, item.submitted - item.done,
                       offset, c.tag)) {
      item.space_epoch = space_epoch_;
      item.t_ns = StageNowNs();
      ++f.writes_inflight;
      return;
    }
    release(AckStatus::kFileFailed);
    FailFile(f, item.file, IoError("cannot queue a write", EBUSY));
    return;
  }
  RecordBlock(f, item);
  if (f.use_journal) {
    f.unsynced.push_back({item.block, item.hash});
    f.unsynced_bytes += item.length;
    if (!f.dirty_listed) {
      f.dirty_listed = true;
      dirty_.push_back(item.file);
    }
  }
  uint32_t id = item.file;
  release(AckStatus::kOk);
  if (f.state == RecvFile::State::kOpen && f.n_have == f.n_blocks) {
    BeginFinish(f, id);
  } else if (f.state == RecvFile::State::kFinishing) {
    SubmitFinalSync(f, id);
  }
}

// Without preallocation, the files of a session share the free space in arrival order, so
// the file whose write meets ENOSPC first is often not the one that cannot fit: a small file
// would fail because a large one took the space, or because a large one that failed had not
// yet released its blocks. When the disk is full something has to give; giving up the file
// with the most left to write frees the most and keeps the most files. Its partial data is
// deleted, as keeping it would free nothing. Bounded: a write parks at most four times, and
// each parking follows a deletion.
bool RecvSession::MakeRoom(WriteItem& slot) {
  if (slot.space_retries >= 4) {
    return false;
  }
  if (space_epoch_ == slot.space_epoch) {
    auto left = [&](const RecvFile& f) {
      return f.n_blocks - f.n_have;
    };
    uint32_t victim = slot.file;
    for (uint32_t i = 0; i < files_.size(); ++i) {
      const RecvFile& f = files_[i];
      if (f.state == RecvFile::State::kOpen && left(f) > left(files_[victim])) {
        victim = i;
      }
    }
    if (victim == slot.file) {
      return false;
    }
    RecvFile& v = files_[victim];
    uint64_t bytes = std::min<uint64_t>(v.entry.size, left(v) * block_size_);
    FailFile(v, victim,
             Error(ErrorCode::kNoSpace,
                   "the receiver's disk is full: given up, with "
                       + HumanBytes(static_cast<double>(bytes)) + " still to write, to make room "
                       + "for smaller files such as " + files_[slot.file].entry.path,
                   ENOSPC),
             /*keep_partial=*/false);
  }
  ++slot.space_retries;
  parked_.push_back(slot.buffer);
  return true;
}

void RecvSession::RetryParkedWrites() {
  if (parked_.empty()) {
    return;
  }
  for (uint32_t i : releasing_) {
    if (files_[i].writes_inflight > 0) {
      return;  // its blocks still hold space: the file is gone only once they complete
    }
  }
  releasing_.clear();
  std::vector<int> parked;
  parked.swap(parked_);
  for (int b : parked) {
    WriteItem& item = slots_[static_cast<size_t>(b)];
    RecvFile& f = files_[item.file];
    uint64_t offset = item.block * block_size_ + item.done;
    bool failed = f.state == RecvFile::State::kFailed;
    if (failed || f.state != RecvFile::State::kOpen || f.have[item.block] != 0) {
      // Given up meanwhile, or a duplicate of this block landed while it waited.
      Ack(item, failed ? AckStatus::kFileFailed : AckStatus::kOk);
      pool_->Release(item.buffer);
      item.conn.reset();
    } else if (io_->PrepWrite(f.fd.get(), pool_->data(item.buffer) + item.done,
                              item.submitted - item.done, offset, static_cast<uint64_t>(b))) {
      item.space_epoch = space_epoch_;
      item.t_ns = StageNowNs();
      ++f.writes_inflight;
    } else {
      parked_.push_back(b);  // the ring is full: next round
    }
  }
  Submit();
}

void RecvSession::JournalTick(bool force) {
  auto now = std::chrono::steady_clock::now();
  size_t keep = 0;
  for (uint32_t id : dirty_) {
    RecvFile& f = files_[id];
    if (f.state != RecvFile::State::kOpen || f.unsynced.empty()) {
      f.dirty_listed = false;
      continue;
    }
    // FILE_DONE waits for the final fsync, which flushes whatever is still unsynced; in a
    // file's last stretch the syncs come closer together so that little is left for it.
    uint64_t sync_bytes = owner_.opt.journal_sync_bytes;
    if ((f.n_blocks - f.n_have) * block_size_ <= sync_bytes) {
      sync_bytes = std::max<uint64_t>(sync_bytes / kTailSyncDivisor, block_size_);
    }
    bool due = force || f.unsynced_bytes >= sync_bytes
               || now - f.last_sync >= std::chrono::milliseconds(owner_.opt.journal_sync_ms);
    if (f.sync_inflight || !due || !io_->PrepFsync(f.fd.get(), /*datasync=*/true, kFsyncTag | id)) {
      dirty_[keep++] = id;
      continue;
    }
    // Only writes that completed before this fsync was queued are covered by it.
    f.syncing.swap(f.unsynced);
    f.unsynced.clear();
    f.unsynced_bytes = 0;
    f.last_sync = now;
    f.sync_inflight = true;
    f.sync_start_ns = StageNowNs();
    f.dirty_listed = false;
  }
  dirty_.resize(keep);
}

void RecvSession::FlushOnExit() {
  for (RecvFile& f : files_) {
    if (f.state != RecvFile::State::kOpen && f.state != RecvFile::State::kFinishing) {
      continue;
    }
    if (f.use_journal && !f.unsynced.empty() && ::fdatasync(f.fd.get()) == 0) {
      if (f.journal.Append(f.unsynced)) {
        f.journal_records += f.unsynced.size();
      }
      f.unsynced.clear();
    }
    if (f.journal_records == 0 && f.dir_fd.valid()) {
      // Nothing worth resuming: leave no hidden files behind.
      (void)::unlinkat(f.dir_fd.get(), PartName(f.name).c_str(), 0);
      (void)::unlinkat(f.dir_fd.get(), JournalName(f.name).c_str(), 0);
    }
    f.fd = Fd();
    f.journal = Journal();
    f.dir_fd = Fd();
  }
}

void RecvSession::WriterMain() {
  // Files that need no data: empty ones, and resumed ones whose journal has every block.
  for (size_t i = 0; i < files_.size(); ++i) {
    RecvFile& f = files_[i];
    auto id = static_cast<uint32_t>(i);
    if (f.state == RecvFile::State::kPending
        && (f.n_blocks == 0 || (f.resumable && f.resumed.size() == f.n_blocks))) {
      if (Status s = OpenFile(f); !s) {
        FailFile(f, id, s.error());
        continue;
      }
      BeginFinish(f, id);
      Submit();
    }
  }
  std::vector<IoCompletion> done;
  std::chrono::steady_clock::time_point closing_since{};
  // Bounded: every idle wait is at most 100 ms; after closing, at most timeout_ms more.
  while (true) {
    bool progressed = false;
    while (auto item = queue_->TryPop()) {
      HandleItem(*item);
      progressed = true;
    }
    Submit();
    if (progressed) {
      q_writes_.Add(io_->inflight());
    }
    done.clear();
    if (io_->Reap(done) > 0) {
      progressed = true;
      for (const IoCompletion& c : done) {
        HandleCompletion(c);
      }
    }
    RetryParkedWrites();
    JournalTick(false);
    Submit();
    if (closing_.load()) {
      auto now = std::chrono::steady_clock::now();
      if (closing_since == std::chrono::steady_clock::time_point{}) {
        closing_since = now;
      }
      if ((queue_->size() == 0 && io_->inflight() == 0 && parked_.empty())
          || now - closing_since > std::chrono::milliseconds(owner_.opt.timeout_ms)) {
        break;
      }
    }
    if (!progressed) {
      int64_t t = StageNowNs();
      writer_waker_.Wait(io_->event_fd(), 100);
      st_writer_idle_.Since(t);
    }
  }
  FlushOnExit();
}

}  // namespace ferry::xfer
