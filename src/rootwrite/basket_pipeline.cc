#include "rootwrite/basket_pipeline.h"

namespace ferry::rootwrite {

BasketPipeline::BasketPipeline(FileWriter& file, codec::Setting setting, size_t max_queued_bytes)
    : file_(&file), setting_(setting), max_queued_bytes_(max_queued_bytes), slots_(kSlots) {
  thread_ = std::thread([this] { Run(); });
}

BasketPipeline::~BasketPipeline() {
  {
    MutexLock lock(mu_);
    // Bounded: the background thread finishes what is queued (or drops it after an error).
    while (count_ != 0) {
      space_.Wait(mu_);
    }
    stop_ = true;
  }
  work_.NotifyAll();
  thread_.join();
}

Result<BasketPipeline::Slot*> BasketPipeline::Acquire(size_t bytes) {
  // A basket larger than the whole budget still goes through once the queue is empty.
  while (error_ == nullptr
         && (count_ >= kSlots || (count_ != 0 && queued_bytes_ + bytes > max_queued_bytes_))) {
    space_.Wait(mu_);
  }
  if (error_ != nullptr) {
    return Error(*error_);
  }
  return &slots_[(head_ + count_) % kSlots];
}

void BasketPipeline::Publish(size_t bytes) {
  ++count_;
  queued_bytes_ += bytes;
  work_.NotifyOne();
}

Status BasketPipeline::Submit(BranchBuffer& branch) {
  if (branch.pending_entries() == 0) {
    return OkStatus();
  }
  const size_t bytes = branch.pending_bytes();
  MutexLock lock(mu_);
  Slot* slot = FERRY_TRY(Acquire(bytes));
  retained_bytes_ -= slot->basket.payload.capacity();  // it goes to the branch
  lock.Unlock();
  slot->mark = nullptr;
  Status sealed = branch.SealBasket(&slot->basket);
  lock.Lock();
  if (!sealed.has_value()) {
    retained_bytes_ += slot->basket.payload.capacity();  // nothing moved: the slot keeps it
    return std::move(sealed).error();
  }
  Publish(slot->basket.payload.size());
  return OkStatus();
}

Status BasketPipeline::Mark(int64_t* out) {
  MutexLock lock(mu_);
  Slot* slot = FERRY_TRY(Acquire(0));
  retained_bytes_ -= slot->basket.payload.capacity();  // counted again when it is done
  slot->basket.branch = nullptr;
  slot->mark = out;
  Publish(0);
  return OkStatus();
}

Status BasketPipeline::Drain() {
  MutexLock lock(mu_);
  while (count_ != 0) {
    space_.Wait(mu_);
  }
  if (error_ != nullptr) {
    return Error(*error_);
  }
  return OkStatus();
}

void BasketPipeline::Run() {
  for (;;) {
    Slot* slot = nullptr;
    bool failed = false;
    {
      MutexLock lock(mu_);
      while (!stop_ && count_ == 0) {
        work_.Wait(mu_);
      }
      if (count_ == 0) {
        return;  // stop_ with nothing queued
      }
      slot = &slots_[head_];
      failed = error_ != nullptr;
    }
    if (slot->basket.branch == nullptr) {
      *slot->mark = zip_bytes();
    } else if (!failed) {
      const int64_t before = slot->basket.branch->zip_bytes();
      Status st = slot->basket.branch->WriteSealed(*file_, setting_, scratch_, slot->basket);
      if (st.has_value()) {
        zip_bytes_.fetch_add(slot->basket.branch->zip_bytes() - before, std::memory_order_relaxed);
      } else {
        MutexLock lock(mu_);
        error_ = std::make_unique<Error>(std::move(st).error());
      }
    }
    {
      MutexLock lock(mu_);
      ByteVector& payload = slot->basket.payload;
      queued_bytes_ -= slot->basket.branch == nullptr ? 0 : payload.size();
      payload.clear();
      // The buffer goes to the branch whose basket takes this slot next; idle slots keep at
      // most max_queued_bytes of buffers, the rest is freed.
      if (retained_bytes_ + payload.capacity() > max_queued_bytes_) {
        payload = ByteVector();
      }
      retained_bytes_ += payload.capacity();
      head_ = (head_ + 1) % kSlots;
      --count_;
    }
    space_.NotifyAll();
  }
}

}  // namespace ferry::rootwrite
