#include "gen/batch_pipeline.h"

namespace ferry::gen {

BatchPipeline::BatchPipeline(Resampler& resampler,
                             EventIdSequence& ids,
                             std::vector<int64_t> sizes,
                             bool threaded)
    : resampler_(&resampler), ids_(&ids), sizes_(std::move(sizes)) {
  if (threaded && sizes_.size() > 1) {
    producer_ = std::thread([this] { Produce(); });
  }
}

BatchPipeline::~BatchPipeline() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  free_.NotifyAll();
  if (producer_.joinable()) {
    producer_.join();
  }
}

void BatchPipeline::Produce() {
  const auto n = static_cast<int64_t>(sizes_.size());
  for (int64_t i = 0; i < n; ++i) {
    {
      MutexLock lock(mu_);
      // Slot i % 2 is free once the consumer released batch i - 2.
      while (!stop_ && i - released_ >= 2) {
        free_.Wait(mu_);
      }
      if (stop_) {
        return;
      }
    }
    resampler_->NextBatch(sizes_[static_cast<size_t>(i)], *ids_, &slots_[i % 2]);
    {
      MutexLock lock(mu_);
      produced_ = i + 1;
    }
    ready_.NotifyOne();
  }
}

const std::vector<rootio::Column>* BatchPipeline::Next() {
  const auto n = static_cast<int64_t>(sizes_.size());
  if (!producer_.joinable()) {
    if (++current_ >= n) {
      return nullptr;
    }
    std::vector<rootio::Column>& slot = slots_[current_ % 2];
    resampler_->NextBatch(sizes_[static_cast<size_t>(current_)], *ids_, &slot);
    return &slot;
  }
  MutexLock lock(mu_);
  if (current_ >= 0) {
    released_ = current_ + 1;
    free_.NotifyOne();
  }
  if (++current_ >= n) {
    return nullptr;
  }
  while (produced_ <= current_) {
    ready_.Wait(mu_);
  }
  return &slots_[current_ % 2];
}

}  // namespace ferry::gen
