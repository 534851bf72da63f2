// BatchPipeline: runs the Resampler one batch ahead of the writer on a second thread (double
// buffering), so resampling overlaps serialisation and compression.
//
// Batches are produced strictly in order by one thread with the caller's Resampler and
// EventIdSequence, so the values are identical with and without the thread. Memory: two
// batches of columns. The consumer (one thread) calls Next(); the returned columns stay valid
// until the following Next() or the destructor, which stops and joins the producer.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "gen/event_ids.h"
#include "gen/resampler.h"
#include "rootio/column.h"

namespace ferry::gen {

class BatchPipeline {
 public:
  // sizes: the number of events of each batch, in order. threaded = false resamples inline.
  BatchPipeline(Resampler& resampler,
                EventIdSequence& ids,
                std::vector<int64_t> sizes,
                bool threaded);
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;
  ~BatchPipeline();

  // The next batch, or nullptr after the last one.
  const std::vector<rootio::Column>* Next();

 private:
  void Produce();

  Resampler* resampler_;
  EventIdSequence* ids_;
  std::vector<int64_t> sizes_;
  std::vector<rootio::Column> slots_[2];
  int64_t current_ = -1;  // batch the consumer holds

  Mutex mu_;
  CondVar ready_;                               // a batch was produced
  CondVar free_;                                // a slot was released
  int64_t produced_ FERRY_GUARDED_BY(mu_) = 0;  // batches finished by the producer
  int64_t released_ FERRY_GUARDED_BY(mu_) = 0;  // batches the consumer is done with
  bool stop_ FERRY_GUARDED_BY(mu_) = false;
  std::thread producer_;
};

}  // namespace ferry::gen
