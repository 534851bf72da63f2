// TaskPool: a fixed set of worker threads running submitted tasks in FIFO order (the
// converter's decode and compression work, docs/ARCHITECTURE.md store section).
//
// Submit() returns a Ticket whose Wait() blocks until the task ran; tasks must not throw.
// The destructor runs every queued task, then joins. Submit and Wait are thread-safe; a task
// may not Wait on a task submitted after it (FIFO order makes earlier ones safe).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace ferry::store {

class TaskPool {
 public:
  class Ticket {
   public:
    void Wait() const;
    bool done() const;

   private:
    friend class TaskPool;
    class State {
     public:
      void MarkDone();
      void WaitDone();
      bool IsDone();

     private:
      Mutex mu_;
      CondVar cv_;
      bool done_ FERRY_GUARDED_BY(mu_) = false;
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

  Mutex mu_;
  CondVar cv_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<Ticket::State>>> queue_
      FERRY_GUARDED_BY(mu_);
  bool stop_ FERRY_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace ferry::store
