// Background replica builds (replica = auto, docs/format/replica.md).
//
// When the last handle of an entry that read new bytes closes, the reading process asks for a
// build: it drops a request file DIR/replica-queue/KEY and, unless a builder already drains
// the queue, starts one: `ferry cache replica build --dir DIR --background --queue` in its own
// session, at idle CPU and I/O priority, so that it never competes with an analysis and
// outlives the process that asked (an analysis exits right after its last file). The drainer
// builds every queued entry and exits when the queue is empty; the queue lock
// (DIR/replica-queue/.lock) makes it the only one, and it looks once more after letting the
// lock go, so a request that arrives while it stops is not stranded.
//
// Thread-safety: functions may be called from any thread; the spawned process is reaped by a
// detached thread (no zombie in a long-lived host such as a proxy server).
#pragma once

#include <string>

#include "base/result.h"
#include "cache/config.h"
#include "cache/replica_build.h"

namespace ferry::cache {

// Queues a build of entry `key` and starts a drainer when none runs. Best effort: a failure
// only means no background build (logged at info level).
void RequestReplicaBuild(const Config& config, const std::string& key);

// Builds every queued entry until the queue stays empty (the `--queue` command). Returns at
// once when another process drains it.
Status DrainReplicaQueue(const Config& config, const ReplicaBuildOptions& options);

// The ferry binary that builds in the background: Config::replica_builder, else bin/ferry
// beside the library or program this code runs in; "" when there is none.
std::string ReplicaBuilderPath(const Config& config);

}  // namespace ferry::cache
