// The sender's I/O stage: reads blocks into pool buffers with io_uring (O_DIRECT where the
// filesystem allows it) and hands them to the streams through the ready queue.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "xfer/send_session.h"

namespace ferry::xfer {
namespace {

// Files smaller than this are read through the page cache: O_DIRECT gains nothing for them.
constexpr uint64_t kDirectMinBytes = 1u << 20;

uint32_t AlignUp(uint32_t v) {
  return (v + 4095u) & ~4095u;
}

}  // namespace

bool SendSession::NextRange(ReadRange& r) {
  MutexLock lock(mu_);
  // Blocks to send again come first, one per read.
  while (!retry_.empty()) {
    Ticket t = retry_.front();
    retry_.pop_front();
    if (!files_[t.file]->failed.load() && !files_[t.file]->acked[t.block]) {
      r = {t.file, t.block, 1, t.avoid_stream};
      return true;
    }
  }
  // Bounded by the number of files: each step advances the cursor.
  while (next_file_ < files_.size()) {
    SendFile& f = *files_[next_file_];
    if (f.failed.load() || f.skipped || next_block_ >= f.n_blocks) {
      ++next_file_;
      next_block_ = 0;
      continue;
    }
    auto n = static_cast<uint32_t>(std::min<uint64_t>(blocks_per_read_, f.n_blocks - next_block_));
    r = {next_file_, next_block_, n, -1};
    next_block_ += n;
    return true;
  }
  return false;
}

void SendSession::ReleaseBlock(int buffer) {
  if (buffer_refs_[static_cast<size_t>(buffer)].fetch_sub(1) == 1) {
    pool_->Release(buffer);
  }
}

int SendSession::OpenSource(uint32_t file) {
  auto it = open_.find(file);
  if (it != open_.end()) {
    return it->second.fd.get();
  }
  const SourceFile& src = *files_[file]->src;
  bool want_direct = opt_.direct_io && src.size >= kDirectMinBytes;
  int fd = ::open(src.local_path.c_str(), O_RDONLY | O_CLOEXEC | (want_direct ? O_DIRECT : 0));
  if (fd < 0 && want_direct && errno == EINVAL) {
    if (!direct_refused_noted_.exchange(true)) {
      Notice("the source filesystem refuses O_DIRECT (" + src.local_path
             + "): using buffered reads");
    }
    want_direct = false;
    fd = ::open(src.local_path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    FailFile(file, "cannot open " + src.local_path + ": " + ErrnoText(errno));
    return -1;
  }
  if (want_direct) {
    direct_used_.store(true);
  }
  open_[file].fd = Fd(fd);
  return fd;
}

void SendSession::CloseIdleSources() {
  // Keep the file under the cursor open; close the others once their reads are done.
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.outstanding == 0 && it->first != next_file_) {
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

void SendSession::HandleReadCompletion(const IoCompletion& c) {
  ReadSlot& slot = slots_[c.tag];
  slot.used = false;
  st_read_.Since(slot.t_ns);
  const ReadRange r = slot.range;
  const int buffer = slot.buffer;
  auto it = open_.find(r.file);
  if (it != open_.end()) {
    --it->second.outstanding;
  }
  SendFile& f = *files_[r.file];
  const uint64_t offset = r.first * opt_.block_size;
  Status s = OkStatus();
  if (c.result >= 0 && static_cast<uint32_t>(c.result) < slot.length) {
    // Short read: finish through the page cache (rare; O_DIRECT alignment rules do not apply).
    auto got = static_cast<uint32_t>(c.result);
    Fd plain(::open(f.src->local_path.c_str(), O_RDONLY | O_CLOEXEC));
    s = plain.valid()
            ? PreadFull(plain.get(), pool_->data(buffer) + got, slot.length - got, offset + got)
            : IoError("reopen failed", errno);
  } else if (c.result < 0) {
    int e = -c.result;
    s = IoError("read failed", e);
    if (e == EINVAL) {  // O_DIRECT refused for this request: read it through the page cache
      Fd plain(::open(f.src->local_path.c_str(), O_RDONLY | O_CLOEXEC));
      s = plain.valid() ? PreadFull(plain.get(), pool_->data(buffer), slot.length, offset)
                        : IoError("reopen failed", errno);
    }
  }
  if (!s) {
    FailFile(r.file, f.src->local_path + ": " + s.error().ToString()
                         + " (did the file change while it was sent?)");
    pool_->Release(buffer);
    return;
  }
  // Hand out the blocks; the buffer goes back to the pool when the last one was sent.
  buffer_refs_[static_cast<size_t>(buffer)].store(static_cast<int>(r.count));
  for (uint32_t k = 0; k < r.count; ++k) {
    ReadyBlock blk;
    blk.buffer = buffer;
    blk.offset = k * opt_.block_size;
    blk.file = r.file;
    blk.block = r.first + k;
    blk.avoid_stream = r.avoid_stream;
    blk.length = BlockLength(f.src->size, opt_.block_size, blk.block);
    blk.verify = !f.remote_has.empty() && f.remote_has[blk.block] != 0;
    blk.expected = blk.verify ? f.remote_hash[blk.block] : 0;
    // The queue holds every block of every buffer, so this never waits.
    if (!ready_->Push(blk, 1000)) {
      ReleaseBlock(buffer);
    }
  }
}

void SendSession::ReaderMain() {
  std::vector<IoCompletion> done;
  done.reserve(slots_.size());
  // Bounded: exits when stop_ is set; every idle wait is at most 100 ms.
  while (!stop_.load()) {
    if (!state_ready_.load()) {
      reader_waker_.Wait(-1, 100);
      continue;
    }
    bool progressed = false;
    done.clear();
    if (io_->Reap(done) > 0) {
      progressed = true;
      for (const IoCompletion& c : done) {
        HandleReadCompletion(c);
      }
    }
    while (io_->inflight() < slots_.size()) {
      int buf = pool_->TryAcquire();
      if (buf < 0) {
        break;
      }
      ReadRange r;
      if (!NextRange(r)) {
        pool_->Release(buf);
        break;
      }
      int fd = OpenSource(r.file);
      if (fd < 0) {
        pool_->Release(buf);
        continue;
      }
      size_t slot = 0;
      while (slots_[slot].used) {
        ++slot;
      }
      const SourceFile& src = *files_[r.file]->src;
      uint64_t offset = r.first * opt_.block_size;
      auto len = static_cast<uint32_t>(
          std::min<uint64_t>(src.size - offset, static_cast<uint64_t>(r.count) * opt_.block_size));
      slots_[slot] = {buf, r, len, true, StageNowNs()};
      ++open_[r.file].outstanding;
      uint32_t read_len = std::min<uint32_t>(AlignUp(len), read_size_);
      if (!io_->PrepRead(fd, pool_->data(buf), read_len, offset, slot)) {
        // Cannot happen with inflight < depth; give everything back and retry later.
        slots_[slot].used = false;
        --open_[r.file].outstanding;
        pool_->Release(buf);
        MutexLock lock(mu_);
        for (uint32_t k = r.count; k > 0; --k) {
          retry_.push_front({r.file, r.first + k - 1, r.avoid_stream});
        }
        break;
      }
      progressed = true;
    }
    int64_t t = StageNowNs();
    if (Status s = io_->Submit(); !s) {
      Notice("read submission failed: " + s.error().ToString());
    }
    st_read_submit_.Since(t);
    if (progressed) {
      q_reads_.Add(io_->inflight());
      q_free_buffers_.Add(pool_->free_count());
    }
    CloseIdleSources();
    if (!progressed) {
      t = StageNowNs();
      reader_waker_.Wait(io_->event_fd(), 100);
      st_reader_idle_.Since(t);
    }
  }
  // Wait (bounded) for reads still in the kernel so their buffers are not freed under them.
  for (int i = 0; i < 500 && io_->inflight() > 0; ++i) {
    done.clear();
    if (io_->Reap(done) == 0) {
      reader_waker_.Wait(io_->event_fd(), 10);
    }
  }
  open_.clear();
}

}  // namespace ferry::xfer
