#include "cache/writer.h"

#include <algorithm>

namespace ferry::cache {

WriteBehind::WriteBehind(const Config& config,
                         Counters& counters,
                         std::function<void(uint64_t)> on_written,
                         std::function<void(const std::shared_ptr<Entry>&)> on_idle)
    : config_(config),
      counters_(counters),
      on_written_(std::move(on_written)),
      on_idle_(std::move(on_idle)) {
  thread_ = std::thread([this] { Run(); });
}

WriteBehind::~WriteBehind() {
  Stop();
}

void WriteBehind::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  room_cv_.NotifyAll();
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool WriteBehind::Submit(std::shared_ptr<Entry> entry, std::shared_ptr<Fetch> fetch) {
  const uint64_t bytes = fetch->bytes();
  {
    MutexLock lock(mu_);
    WaitForRoom(bytes);
    if (stop_ || blocked_ || queued_bytes_ + bytes > config_.writeback_bytes) {
      counters_.Add(Counter::kWritesDropped);
      return false;
    }
    queued_bytes_ += bytes;
    queue_.push_back({std::move(entry), std::move(fetch), bytes, next_seq_++});
    idle_ = false;
  }
  cv_.NotifyOne();
  return true;
}

void WriteBehind::WaitForRoom(uint64_t bytes) {
  if (config_.writeback_wait_ms == 0 || bytes > config_.writeback_bytes) {
    return;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.writeback_wait_ms);
  while (!stop_ && !blocked_ && !stalled_ && queued_bytes_ + bytes > config_.writeback_bytes) {
    if (!room_cv_.WaitUntil(mu_, deadline)) {
      // No room came in time: the disk is stuck, not slow. Fetches are dropped at once (the
      // cache fails open) until the writer has emptied half the queue.
      stalled_ = true;
    }
  }
}

void WriteBehind::Freed(uint64_t bytes) {
  {
    MutexLock lock(mu_);
    queued_bytes_ -= bytes;
    if (stalled_ && queued_bytes_ <= config_.writeback_bytes / 2) {
      stalled_ = false;
    }
  }
  room_cv_.NotifyAll();
}

void WriteBehind::RequestPublish(std::shared_ptr<Entry> entry, bool then_idle) {
  {
    MutexLock lock(mu_);
    if (stop_) {
      return;
    }
    queue_.push_back({std::move(entry), nullptr, 0, next_seq_++, then_idle});
    idle_ = false;
  }
  cv_.NotifyOne();
}

bool WriteBehind::Flush(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mu_);
  const uint64_t target = next_seq_ - 1;
  // A publish request at the end makes "flushed" include publishing.
  queue_.push_back({nullptr, nullptr, 0, next_seq_++});
  idle_ = false;
  cv_.NotifyOne();
  while (done_seq_ <= target) {
    if (!done_cv_.WaitUntil(mu_, deadline)) {
      return done_seq_ > target;
    }
  }
  return true;
}

void WriteBehind::SetBlocked(bool blocked) {
  {
    MutexLock lock(mu_);
    blocked_ = blocked;
  }
  room_cv_.NotifyAll();
}

uint64_t WriteBehind::queued_bytes() const {
  MutexLock lock(mu_);
  return queued_bytes_;
}

bool WriteBehind::idle() const {
  MutexLock lock(mu_);
  return idle_;
}

void WriteBehind::Run() {
  std::vector<Job> batch;
  while (TakeBatch(batch)) {
    if (!batch.empty()) {
      Process(batch);
    }
    PublishDue(/*force=*/false);
    FinishBatch(batch);
    batch.clear();
  }
  PublishDue(/*force=*/true);
  {
    MutexLock lock(mu_);
    done_seq_ = next_seq_ - 1;
    idle_ = true;
  }
  done_cv_.NotifyAll();
}

bool WriteBehind::TakeBatch(std::vector<Job>& batch) {
  // Wakes at least every publish interval, so due publishes happen while the queue is idle.
  const auto deadline = std::chrono::steady_clock::now()
                        + std::chrono::milliseconds(std::max<uint32_t>(config_.publish_ms, 10));
  MutexLock lock(mu_);
  while (!stop_ && queue_.empty()) {
    if (!cv_.WaitUntil(mu_, deadline)) {
      break;
    }
  }
  if (queue_.empty() && stop_) {
    return false;
  }
  // One entry per batch: the first job's, plus every later job for the same entry.
  batch.clear();
  if (!queue_.empty()) {
    Entry* first = queue_.front().entry.get();
    for (auto it = queue_.begin(); it != queue_.end() && batch.size() < 256;) {
      if (it->entry.get() == first) {
        batch.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return true;
}

void WriteBehind::FinishBatch(const std::vector<Job>& batch) {
  uint64_t seq = 0;
  uint64_t freed = 0;
  for (const Job& j : batch) {
    seq = std::max(seq, j.seq);
    freed += j.bytes;  // what Release did not free (none of a batch that ran)
  }
  {
    MutexLock lock(mu_);
    queued_bytes_ -= freed;
    // Jobs are taken out of order across entries: done means every earlier seq is done,
    // i.e. nothing older is still queued.
    uint64_t oldest_queued = next_seq_;
    for (const Job& j : queue_) {
      oldest_queued = std::min(oldest_queued, j.seq);
    }
    done_seq_ = std::max(done_seq_, std::min(seq, oldest_queued - 1));
    if (queue_.empty()) {
      done_seq_ = next_seq_ - 1;
    }
    // dirty_ is the writer thread's, and this is the writer thread.
    idle_ = queue_.empty() && dirty_.empty();
  }
  done_cv_.NotifyAll();
}

void WriteBehind::Process(std::vector<Job>& batch) {
  const std::shared_ptr<Entry>& entry = batch.front().entry;
  if (!entry) {  // Flush marker
    PublishDue(/*force=*/true);
    return;
  }
  const bool publish =
      std::any_of(batch.begin(), batch.end(), [](const Job& j) { return !j.fetch; });
  const bool then_idle =
      std::any_of(batch.begin(), batch.end(), [](const Job& j) { return j.then_idle; });
  uint64_t written = 0;
  Status why;
  if (!entry->failed() && entry->TryLockForWrite(why)) {
    for (Job& j : batch) {
      if (j.fetch && !entry->failed()) {
        Status stored = entry->Store(*j.fetch, scratch_);
        if (stored) {
          written += j.fetch->ok_bytes();
        } else if (stored.error().code() != ErrorCode::kCancelled) {
          entry->Fail(stored.error());
        }
      }
      Release(*entry, j);
    }
    if (!entry->failed()) {
      Status pub = entry->MaybePublish(publish, encode_scratch_);
      if (!pub) {
        entry->Fail(pub.error());
      }
      entry->FlushTrace();
      entry->MaybeCompact();
    }
    entry->UnlockForWrite();
  } else if (!why) {
    entry->Fail(why.error());
  }
  for (Job& j : batch) {
    Release(*entry, j);  // those of a batch that did not run
  }
  if (!entry->failed() && entry->dirty()
      && std::find(dirty_.begin(), dirty_.end(), entry) == dirty_.end()) {
    dirty_.push_back(entry);
  }
  if (written > 0 && on_written_) {
    on_written_(written);
  }
  // A last close (or a reader that moved past the entry) asked for this publish: what the
  // entry holds is on disk now.
  if (publish && on_idle_ && !entry->failed() && (then_idle || entry->handles() == 0)) {
    on_idle_(entry);
  }
}

void WriteBehind::Release(Entry& entry, Job& j) {
  if (!j.fetch) {
    return;
  }
  // Stored or not, the fetch is no longer in flight: a later miss fetches what was not stored.
  // Its room in the queue is free at once, not when the batch ends: a batch is every job of
  // the entry, up to the whole bound, and a copy that outran the writer had every fetch that
  // came while the writer stored a batch dropped.
  entry.ReleaseInflight(j.fetch.get());
  j.fetch.reset();
  Freed(j.bytes);
  j.bytes = 0;
}

void WriteBehind::PublishDue(bool force) {
  for (auto it = dirty_.begin(); it != dirty_.end();) {
    Entry& e = **it;
    if (e.failed() || !e.dirty()) {
      it = dirty_.erase(it);
      continue;
    }
    Status st;
    if (!e.TryLockForWrite(st)) {
      e.Fail(st.error());
      it = dirty_.erase(it);
      continue;
    }
    Status pub = e.MaybePublish(force, encode_scratch_);
    e.FlushTrace();
    e.MaybeCompact();
    e.UnlockForWrite();
    if (!pub) {
      e.Fail(pub.error());
    }
    if (!e.dirty() || e.failed()) {
      it = dirty_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace ferry::cache
