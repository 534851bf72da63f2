// TaskPool: a fixed set of worker threads running submitted tasks in FIFO order (the
// converter's decode and compression work, docs/ARCHITECTURE.md store section).
//
// Submit() returns a Ticket whose Wait() blocks until the task ran; tasks must not throw.
// The destructor runs every queued task, then joins. Submit and Wait are thread-safe; a task
// may not Wait on a task submitted after it (FIFO order makes earlier ones safe).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ferry::store {

class TaskPool {
 public:
  class Ticket {
   public:
    void Wait() const;
    bool done() const;

   private:
    friend class TaskPool;
    struct State {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
    };
    std::shared_ptr<State> state_;
  };

  explicit TaskPool(size_t threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  Ticket Submit(std::function<void()> task);
  size_t threads() const { return workers_.size(); }
  // Tasks queued and not yet started.
  size_t queued();

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<Ticket::State>>> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ferry::store
