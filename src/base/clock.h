// The monotonic clock every timing of ferry reads (intervals, rates, ages of in-process state).
// Thread-safety: free function.
#pragma once

#include <cstdint>

namespace ferry {

// Monotonic clock in nanoseconds.
int64_t NowNs();

}  // namespace ferry
