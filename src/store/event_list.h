// Event lists: the files `ferry store get --events-file LIST` reads, which another program (a
// selection job, a person) wrote. One RUN:LUMI:EVENT per line (decimal, docs/store.md); '#'
// starts a comment; blank lines and spaces, tabs and carriage returns around an event are
// skipped. Events keep the order and duplicates of the file.
// Thread-safety: a pure function.
#pragma once

#include <string_view>
#include <vector>

#include "base/result.h"
#include "store/store.h"

namespace ferry::store {

// kInvalidArgument naming the line ("line N > event '...' is not RUN:LUMI:EVENT").
Result<std::vector<EventId>> ParseEventList(std::string_view text);

}  // namespace ferry::store
