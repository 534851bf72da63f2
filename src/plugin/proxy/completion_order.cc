#include "plugin/proxy/completion_order.h"

#include <utility>
#include <vector>

namespace ferry::proxy {

uint64_t CompletionOrder::Take() {
  MutexLock lock(mu_);
  return next_ticket_++;
}

void CompletionOrder::Finish(uint64_t ticket, Task task) {
  std::vector<Task> due;
  {
    MutexLock lock(mu_);
    ready_.emplace(ticket, std::move(task));
    // Another thread is running due tasks: it picks this one up before it stops, so tasks
    // run one thread at a time and never overtake each other.
    if (running_) {
      return;
    }
    running_ = true;
  }
  for (;;) {
    due.clear();
    {
      MutexLock lock(mu_);
      for (auto it = ready_.begin(); it != ready_.end() && it->first == next_due_;
           it = ready_.erase(it)) {
        due.push_back(std::move(it->second));
        ++next_due_;
      }
      if (due.empty()) {
        running_ = false;
        return;
      }
    }
    for (Task& t : due) {
      t();
    }
  }
}

size_t CompletionOrder::waiting() const {
  MutexLock lock(mu_);
  return ready_.size();
}

}  // namespace ferry::proxy
