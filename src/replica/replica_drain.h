// The drainer of the background build queue (replica_queue.h): the `ferry cache replica
// build --queue` command that a reading process starts when the last handle of an entry that
// read new bytes closes, or when it moved past the entry (Cache::NoteRead).
// Thread-safety: one drainer per directory (the queue lock); safe to call from any thread.
#pragma once

#include "base/result.h"
#include "cache/config.h"
#include "replica/replica_build.h"

namespace ferry::replica {

// Builds every queued entry until the queue stays empty. Returns at once when another process
// drains it.
Status DrainReplicaQueue(const cache::Config& config, const ReplicaBuildOptions& options);

}  // namespace ferry::replica
