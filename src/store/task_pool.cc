#include "store/task_pool.h"

namespace ferry::store {

void TaskPool::Ticket::State::MarkDone() {
  MutexLock lock(mu_);
  done_ = true;
  cv_.NotifyAll();
}

void TaskPool::Ticket::State::WaitDone() {
  MutexLock lock(mu_);
  while (!done_) {
    cv_.Wait(mu_);
  }
}

bool TaskPool::Ticket::State::IsDone() {
  MutexLock lock(mu_);
  return done_;
}

void TaskPool::Ticket::Wait() const {
  if (state_ != nullptr) {
    state_->WaitDone();
  }
}

bool TaskPool::Ticket::done() const {
  return state_ == nullptr || state_->IsDone();
}

TaskPool::TaskPool(size_t threads) {
  for (size_t i = 0; i < threads; ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

TaskPool::~TaskPool() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  for (std::thread& t : workers_) {
    t.join();
  }
}

TaskPool::Ticket TaskPool::Submit(std::function<void()> task) {
  Ticket t;
  t.state_ = std::make_shared<Ticket::State>();
  {
    MutexLock lock(mu_);
    queue_.emplace_back(std::move(task), t.state_);
  }
  cv_.NotifyOne();
  return t;
}

size_t TaskPool::queued() {
  MutexLock lock(mu_);
  return queue_.size();
}

void TaskPool::Work() {
  for (;;) {
    std::function<void()> task;
    std::shared_ptr<Ticket::State> state;
    {
      MutexLock lock(mu_);
      // Drain the queue before stopping: a queued task may own buffers a ticket waits on.
      while (!stop_ && queue_.empty()) {
        cv_.Wait(mu_);
      }
      if (queue_.empty()) {
        return;
      }
      task = std::move(queue_.front().first);
      state = std::move(queue_.front().second);
      queue_.pop_front();
    }
    task();
    state->MarkDone();
  }
}

}  // namespace ferry::store
