#include "store/task_pool.h"

namespace ferry::store {

void TaskPool::Ticket::Wait() const {
  if (state_ == nullptr) {
    return;
  }
  std::unique_lock lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->done; });
}

bool TaskPool::Ticket::done() const {
  if (state_ == nullptr) {
    return true;
  }
  std::lock_guard lock(state_->mu);
  return state_->done;
}

TaskPool::TaskPool(size_t threads) {
  for (size_t i = 0; i < threads; ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

TaskPool::~TaskPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    t.join();
  }
}

TaskPool::Ticket TaskPool::Submit(std::function<void()> task) {
  Ticket t;
  t.state_ = std::make_shared<Ticket::State>();
  {
    std::lock_guard lock(mu_);
    queue_.emplace_back(std::move(task), t.state_);
  }
  cv_.notify_one();
  return t;
}

size_t TaskPool::queued() {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void TaskPool::Work() {
  for (;;) {
    std::function<void()> task;
    std::shared_ptr<Ticket::State> state;
    {
      std::unique_lock lock(mu_);
      // Drain the queue before stopping: a queued task may own buffers a ticket waits on.
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;
      }
      task = std::move(queue_.front().first);
      state = std::move(queue_.front().second);
      queue_.pop_front();
    }
    task();
    {
      std::lock_guard lock(state->mu);
      state->done = true;
    }
    state->cv.notify_all();
  }
}

}  // namespace ferry::store
