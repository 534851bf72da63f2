// The replica tier as the cache sees it (cache/replica_hooks.h): published replicas served as
// virtual files (ReplicaView), the access trace's records (access_trace.h), builds asked for
// through the background queue (replica_queue.h), and a replica's check for `ferry cache verify`.
// A host that creates a cache plugs it in:
//
//   cache::Config config = ...;
//   config.replica_hooks = replica::Hooks();
//   auto cache = cache::Cache::Get(config);
//
// Thread-safety: Hooks() returns one immutable object, shared by every cache of the process.
#pragma once

#include <memory>

#include "cache/replica_hooks.h"

namespace ferry::replica {

std::shared_ptr<const cache::ReplicaHooks> Hooks();

}  // namespace ferry::replica
