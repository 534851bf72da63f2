// Background replica builds (replica = auto, docs/format/replica.md).
//
// When the last handle of an entry that read new bytes closes, or the reading process moved
// past it (Cache::NoteRead), the reading process asks for a build: it drops a request file
// DIR/replica-queue/KEY and, unless a builder already drains the queue, starts one: `ferry cache
// replica build --dir DIR --background --queue` in its own session, at idle CPU and I/O priority,
// so that it never competes with an analysis and outlives the process that asked (an analysis exits
// right after its last file). The drainer builds every queued entry and exits when the queue is
// empty; the queue lock (DIR/replica-queue/.lock) makes it the only one, and it looks once more
// after letting the lock go, so a request that arrives while it stops is not stranded. The drainer
// is replica/replica_drain.h (the replica library, above the cache).
//
// Thread-safety: functions may be called from any thread; the spawned process is reaped by a
// detached thread (no zombie in a long-lived host such as a proxy server).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cache/config.h"

namespace ferry::replica {

// Queues a build of entry `key` and starts a drainer when none runs. Best effort: a failure
// only means no background build (logged at info level). `still_open`: the reader moved past
// the file and reads on (the request says so: kStillOpen); else its last handle closed, and
// the file is built at the drainer's priority even while the closing process still holds its
// open lock (it lets it go a moment later).
void RequestReplicaBuild(const cache::Config& config, const std::string& key, bool still_open);
// What a request file holds when the file was still open; empty: closed.
inline constexpr std::string_view kStillOpen = "open\n";
// Whether the request for `key` says the file was still open (false when there is none).
bool RequestedStillOpen(const cache::Config& config, const std::string& key);

// The queue: DIR/replica-queue, one empty file per entry KEY asked for. The drainer (the
// `--queue` command) is replica/replica_drain.h.
std::string QueueDir(const cache::Config& config);
// The keys queued now.
std::vector<std::string> QueuedKeys(const cache::Config& config);

// The second stage's queue: DIR/replica-queue/reencode, one empty file per entry KEY whose
// replica was relocated during a pass (stage 1) and waits to be re-encoded when the machine is
// idle. Filled and drained by the drainer; a request outlives a drainer that was killed.
std::string ReencodeQueueDir(const cache::Config& config);
// Adds KEY (best effort: a lost request only leaves the replica at stage 1 until the next
// build of the file).
void RequestReencode(const cache::Config& config, const std::string& key);
std::vector<std::string> QueuedReencodes(const cache::Config& config);

// The ferry binary that builds in the background: Config::replica_builder, else bin/ferry
// beside the library or program this code runs in; "" when there is none.
std::string ReplicaBuilderPath(const cache::Config& config);

}  // namespace ferry::replica
