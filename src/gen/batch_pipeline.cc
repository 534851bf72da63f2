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
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  free_.notify_all();
  if (producer_.joinable()) {
    producer_.join();
  }
}

void BatchPipeline::Produce() {
  const auto n = static_cast<int64_t>(sizes_.size());
  for (int64_t i = 0; i < n; ++i) {
    {
      std::unique_lock lock(mu_);
      // Slot i % 2 is free once the consumer released batch i - 2.
      free_.wait(lock, [&] { return stop_ || i - released_ < 2; });
      if (stop_) {
        return;
      }
    }
    resampler_->NextBatch(sizes_[static_cast<size_t>(i)], *ids_, &slots_[i % 2]);
    {
      std::lock_guard lock(mu_);
      produced_ = i + 1;
    }
    ready_.notify_one();
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
  std::unique_lock lock(mu_);
  if (current_ >= 0) {
    released_ = current_ + 1;
    free_.notify_one();
  }
  if (++current_ >= n) {
    return nullptr;
  }
  ready_.wait(lock, [&] { return produced_ > current_; });
  return &slots_[current_ % 2];
}

}  // namespace ferry::gen
