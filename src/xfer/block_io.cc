#include "xfer/block_io.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>

#include <liburing.h>

namespace ferry::xfer {
namespace {

class UringIo final : public BlockIo {
 public:
  UringIo() = default;
  ~UringIo() override {
    if (ready_) {
      io_uring_queue_exit(&ring_);
    }
  }
  UringIo(const UringIo&) = delete;
  UringIo& operator=(const UringIo&) = delete;

  Status Init(unsigned depth) {
    int rc = io_uring_queue_init(depth, &ring_, 0);
    if (rc < 0) {
      return IoError("io_uring_queue_init failed", -rc);
    }
    ready_ = true;
    event_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!event_.valid()) {
      return IoError("eventfd failed", errno);
    }
    rc = io_uring_register_eventfd(&ring_, event_.get());
    if (rc < 0) {
      return IoError("io_uring_register_eventfd failed", -rc);
    }
    return OkStatus();
  }

  bool PrepRead(int fd, void* buf, uint32_t len, uint64_t offset, uint64_t tag) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      return false;
    }
    io_uring_prep_read(sqe, fd, buf, len, offset);
    io_uring_sqe_set_data64(sqe, tag);
    ++queued_;
    return true;
  }

  bool PrepWrite(int fd, const void* buf, uint32_t len, uint64_t offset, uint64_t tag) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      return false;
    }
    io_uring_prep_write(sqe, fd, buf, len, offset);
    io_uring_sqe_set_data64(sqe, tag);
    ++queued_;
    return true;
  }

  bool PrepFsync(int fd, bool datasync, uint64_t tag) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      return false;
    }
    io_uring_prep_fsync(sqe, fd, datasync ? IORING_FSYNC_DATASYNC : 0);
    io_uring_sqe_set_data64(sqe, tag);
    ++queued_;
    return true;
  }

  Status Submit() override {
    // Bounded: each round submits at least one entry or fails.
    for (int round = 0; queued_ > 0 && round < 1000; ++round) {
      int rc = io_uring_submit(&ring_);
      if (rc < 0) {
        if (rc == -EINTR || rc == -EAGAIN || rc == -EBUSY) {
          continue;
        }
        return IoError("io_uring_submit failed", -rc);
      }
      auto n = static_cast<unsigned>(rc);
      inflight_ += n;
      queued_ -= std::min(queued_, n);
    }
    return OkStatus();
  }

  size_t Reap(std::vector<IoCompletion>& out) override {
    uint64_t counter;
    (void)!::read(event_.get(), &counter, sizeof counter);
    size_t n = 0;
    unsigned head;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      out.push_back({io_uring_cqe_get_data64(cqe), cqe->res});
      ++n;
    }
    io_uring_cq_advance(&ring_, static_cast<unsigned>(n));
    inflight_ -= static_cast<unsigned>(std::min<size_t>(n, inflight_));
    return n;
  }

  int event_fd() const override { return event_.get(); }
  unsigned inflight() const override { return inflight_ + queued_; }
  bool uses_uring() const override { return true; }

 private:
  io_uring ring_{};
  bool ready_ = false;
  Fd event_;
  unsigned queued_ = 0;
  unsigned inflight_ = 0;
};

// Executes each operation synchronously in Submit().
class SyncIo final : public BlockIo {
 public:
  explicit SyncIo(std::string reason, unsigned depth) : depth_(depth) {
    fallback_reason_ = std::move(reason);
  }

  bool PrepRead(int fd, void* buf, uint32_t len, uint64_t offset, uint64_t tag) override {
    return Queue({Op::kRead, fd, buf, len, offset, tag, false});
  }
  bool PrepWrite(int fd, const void* buf, uint32_t len, uint64_t offset, uint64_t tag) override {
    return Queue({Op::kWrite, fd, const_cast<void*>(buf), len, offset, tag, false});
  }
  bool PrepFsync(int fd, bool datasync, uint64_t tag) override {
    return Queue({Op::kFsync, fd, nullptr, 0, 0, tag, datasync});
  }

  Status Submit() override {
    for (const Pending& p : queued_) {
      ssize_t rc;
      do {
        switch (p.op) {
          case Op::kRead:
            rc = ::pread(p.fd, p.buf, p.len, static_cast<off_t>(p.offset));
            break;
          case Op::kWrite:
            rc = ::pwrite(p.fd, p.buf, p.len, static_cast<off_t>(p.offset));
            break;
          default:
            rc = p.datasync ? ::fdatasync(p.fd) : ::fsync(p.fd);
            break;
        }
      } while (rc < 0 && errno == EINTR);
      done_.push_back({p.tag, rc < 0 ? -errno : static_cast<int32_t>(rc)});
    }
    queued_.clear();
    return OkStatus();
  }

  size_t Reap(std::vector<IoCompletion>& out) override {
    size_t n = done_.size();
    out.insert(out.end(), done_.begin(), done_.end());
    done_.clear();
    return n;
  }

  int event_fd() const override { return -1; }
  unsigned inflight() const override {
    return static_cast<unsigned>(queued_.size() + done_.size());
  }
  bool uses_uring() const override { return false; }

 private:
  enum class Op { kRead, kWrite, kFsync };
  struct Pending {
    Op op;
    int fd;
    void* buf;
    uint32_t len;
    uint64_t offset;
    uint64_t tag;
    bool datasync;
  };
  bool Queue(const Pending& p) {
    if (queued_.size() + done_.size() >= depth_) {
      return false;
    }
    queued_.push_back(p);
    return true;
  }
  unsigned depth_;
  std::vector<Pending> queued_;
  std::vector<IoCompletion> done_;
};

}  // namespace

Result<std::unique_ptr<BlockIo>> BlockIo::Create(unsigned queue_depth, bool allow_uring) {
  if (allow_uring) {
    auto ring = std::make_unique<UringIo>();
    Status s = ring->Init(queue_depth);
    if (s) {
      return std::unique_ptr<BlockIo>(std::move(ring));
    }
    return std::unique_ptr<BlockIo>(std::make_unique<SyncIo>(s.error().ToString(), queue_depth));
  }
  return std::unique_ptr<BlockIo>(std::make_unique<SyncIo>("io_uring disabled", queue_depth));
}

Waker::Waker() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void Waker::Wake() const {
  uint64_t one = 1;
  (void)!::write(fd_.get(), &one, sizeof one);
}

void Waker::Wait(int other_fd, int timeout_ms) const {
  pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {other_fd, POLLIN, 0}};
  int n = ::poll(fds, other_fd >= 0 ? 2 : 1, timeout_ms);
  if (n > 0 && (fds[0].revents & POLLIN) != 0) {
    uint64_t counter;
    (void)!::read(fd_.get(), &counter, sizeof counter);
  }
}

}  // namespace ferry::xfer
