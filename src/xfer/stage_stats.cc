#include "xfer/stage_stats.h"

#include "base/json_writer.h"

namespace ferry::xfer {

StageTime StageTimer::Snapshot(std::string name, int threads) const {
  StageTime s;
  s.name = std::move(name);
  s.threads = threads;
  s.count = count_.load(std::memory_order_relaxed);
  s.seconds = static_cast<double>(total_ns_.load(std::memory_order_relaxed)) / 1e9;
  s.max_ms = static_cast<double>(max_ns_.load(std::memory_order_relaxed)) / 1e6;
  return s;
}

QueueDepth Occupancy::Snapshot(std::string name, uint64_t capacity) const {
  QueueDepth q;
  q.name = std::move(name);
  uint64_t n = samples_.load(std::memory_order_relaxed);
  q.mean = n > 0
               ? static_cast<double>(sum_.load(std::memory_order_relaxed)) / static_cast<double>(n)
               : 0.0;
  q.max = max_.load(std::memory_order_relaxed);
  q.capacity = capacity;
  return q;
}

void WriteStagesJson(JsonWriter& w,
                     const std::vector<StageTime>& stages,
                     const std::vector<QueueDepth>& queues) {
  w.Key("stages").BeginObject();
  for (const StageTime& s : stages) {
    w.Key(s.name)
        .BeginObject()
        .Field("threads", static_cast<int64_t>(s.threads))
        .Field("count", s.count)
        .Field("seconds", s.seconds)
        .Field("max_ms", s.max_ms)
        .EndObject();
  }
  w.EndObject();
  w.Key("queues").BeginObject();
  for (const QueueDepth& q : queues) {
    w.Key(q.name)
        .BeginObject()
        .Field("mean", q.mean)
        .Field("max", q.max)
        .Field("capacity", q.capacity)
        .EndObject();
  }
  w.EndObject();
}

}  // namespace ferry::xfer
