// The sender's I/O stage: reads blocks into pool buffers with io_uring (O_DIRECT where the
// filesystem allows it) and hands them to the streams through the ready queue.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

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

bool SendSession::NextTicket(Ticket& t, bool& verify, uint64_t& expected) {
  std::lock_guard lock(mu_);
  while (!retry_.empty()) {
    t = retry_.front();
    retry_.pop_front();
    if (!files_[t.file]->failed.load() && !files_[t.file]->acked[t.block]) {
      verify = false;
      return true;
    }
  }
  // Bounded by the number of blocks: each step advances the cursor.
  while (next_file_ < files_.size()) {
    SendFile& f = *files_[next_file_];
    if (f.failed.load() || f.skipped || next_block_ >= f.n_blocks) {
      ++next_file_;
      next_block_ = 0;
      continue;
    }
    t = {next_file_, next_block_++};
    verify = !f.remote_has.empty() && f.remote_has[t.block] != 0;
    expected = verify ? f.remote_hash[t.block] : 0;
    return true;
  }
  return false;
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
    FailFile(file, "cannot open " + src.local_path + ": " + std::strerror(errno));
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
  ReadyBlock blk = slot.blk;
  auto it = open_.find(blk.file);
  if (it != open_.end()) {
    --it->second.outstanding;
  }
  SendFile& f = *files_[blk.file];
  if (c.result >= 0 && static_cast<uint32_t>(c.result) < blk.length && it != open_.end()) {
    // Short read: finish through the page cache (rare; O_DIRECT alignment rules do not apply).
    auto got = static_cast<uint32_t>(c.result);
    Fd plain(::open(f.src->local_path.c_str(), O_RDONLY | O_CLOEXEC));
    Status s = plain.valid() ? PreadFull(plain.get(), pool_->data(blk.buffer) + got,
                                         blk.length - got, blk.block * opt_.block_size + got)
                             : IoError("reopen failed", errno);
    if (!s) {
      FailFile(blk.file, f.src->local_path + ": " + s.error().ToString()
                             + " (did the file shrink while it was sent?)");
      pool_->Release(blk.buffer);
      return;
    }
  } else if (c.result < 0) {
    int e = -c.result;
    Status s = IoError("read failed", e);
    if (e == EINVAL) {  // O_DIRECT refused for this request: read it through the page cache
      Fd plain(::open(f.src->local_path.c_str(), O_RDONLY | O_CLOEXEC));
      s = plain.valid() ? PreadFull(plain.get(), pool_->data(blk.buffer), blk.length,
                                    blk.block * opt_.block_size)
                        : IoError("reopen failed", errno);
    }
    if (!s) {
      FailFile(blk.file, f.src->local_path + ": " + s.error().ToString());
      pool_->Release(blk.buffer);
      return;
    }
  }
  // The queue's capacity equals the pool size, so this never waits.
  if (!ready_->Push(blk, 1000)) {
    pool_->Release(blk.buffer);
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
      Ticket t;
      bool verify = false;
      uint64_t expected = 0;
      if (!NextTicket(t, verify, expected)) {
        pool_->Release(buf);
        break;
      }
      int fd = OpenSource(t.file);
      if (fd < 0) {
        pool_->Release(buf);
        continue;
      }
      size_t slot = 0;
      while (slots_[slot].used) {
        ++slot;
      }
      const SourceFile& src = *files_[t.file]->src;
      uint32_t len = BlockLength(src.size, opt_.block_size, t.block);
      slots_[slot] = {{buf, t.file, t.block, len, verify, expected}, true};
      ++open_[t.file].outstanding;
      uint32_t read_len = std::min<uint32_t>(AlignUp(len), opt_.block_size);
      if (!io_->PrepRead(fd, pool_->data(buf), read_len, t.block * opt_.block_size, slot)) {
        // Cannot happen with inflight < depth; give everything back and retry later.
        slots_[slot].used = false;
        --open_[t.file].outstanding;
        pool_->Release(buf);
        std::lock_guard lock(mu_);
        retry_.push_front(t);
        break;
      }
      progressed = true;
    }
    if (Status s = io_->Submit(); !s) {
      Notice("read submission failed: " + s.error().ToString());
    }
    CloseIdleSources();
    if (!progressed) {
      reader_waker_.Wait(io_->event_fd(), 100);
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
