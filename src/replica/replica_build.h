// Building the replica of one cache entry, and reporting on replicas (docs/format/replica.md).
//
// BuildReplica reads only what the byte tier holds — it never contacts an origin:
// 1. the file's header, keys lists and TTree records (a tree whose record is not held is left
//    alone), and the previous replica, if any (a stale one is removed);
// 2. the hot baskets, from the access trace (or every basket held whole when there is none),
//    in the order the analysis read them; baskets of the previous replica are kept;
// 3. the codec: the previous replica's, else measured on a sample (replica_codec.h);
// 4. the overlay (replica/overlay_writer.h): new baskets re-encoded and checked by decoding them
//    again, previous ones copied; the data file is synced, then the manifest published;
//    or, in stage 1 (ReplicaStage below), new baskets copied as the original stores them;
// 5. the byte-tier pages the replica supersedes are released (and the fragment log compacted)
//    when no other process has the entry open; otherwise later (the next build or close).
// Memory: one basket (and its candidate encodings), the 4 MiB write buffer, the tree records,
// and the codec sample (1 MiB as stored, its encodings: ~10 MiB).
// It runs on the calling thread; the CLI runs it at idle CPU and I/O priority for `auto`.
//
// Concurrency: one builder per entry (byte 2 of KEY.lock); an explicit build that waits for it
// holds byte 3 shared, which a background builder sees at its next pause and yields to;
// readers keep their layout; a crash or a yield at any point leaves the previous replica or
// the new one, and at most an unused data file that the next build removes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "cache/config.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "codec/compression.h"
#include "replica/replica_manifest.h"

namespace ferry::replica {

enum class ReplicaState : uint8_t { kNone, kBuilding, kBuilt, kPartial, kUnsupported };

// The two stages of a replica (docs/format/replica.md, "Stages"). Stage 1 relocates: the hot
// units are copied as the original stores them (a copy, no codec), in access order, with the
// metadata rewritten — cheap enough to run while a pass fills the cache. Stage 2 re-encodes
// every unit with the measured codec plan, as a new generation that replaces stage 1.
enum class ReplicaStage : uint8_t {
  kRelocate,  // stage 1: new units as stored; units of the previous replica kept as they are
  kReencode,  // stage 2: every unit re-encoded (stage-1 units from the previous replica)
  kAuto,      // stage 2 when `reencode_fits` says the CPU is there now, else stage 1
};
// "none", "building", "built", "partial", "unsupported".
std::string_view ReplicaStateName(ReplicaState state);

struct ReplicaBuildOptions {
  std::string codec = "auto";          // Config::replica_codec
  uint32_t budget_percent = 0;         // Config::replica_budget_percent (0: auto)
  uint64_t sample_bytes = 1ull << 20;  // bound on the codec sample (as stored)
  // Called before the codec is chosen, between the steps of its sample and before each basket
  // is placed; a background build waits in it while an analysis reads through the cache
  // (activity.h), and returns early once `give_up()` is true. May be empty.
  std::function<void(const std::function<bool()>& give_up)> pause;
  // A background build (true) steps aside for an explicit one: at its next pause after an
  // explicit build started waiting for the same file, it stops and leaves the file to it
  // (state building, reason "yielded to an explicit build"), and it skips a file another
  // process is building. An explicit build (false) waits for another process's build of the
  // file, at most `wait_ms`, then builds: it returns with the file built or with a reason.
  bool yield = false;
  int wait_ms = 30 * 60 * 1000;
  ReplicaStage stage = ReplicaStage::kReencode;
  // kAuto: asked once, when the file has units to place: whether re-encoding fits the CPU the
  // machine leaves now (measured by the caller); `why` gets the figures. Empty: it fits.
  std::function<bool(std::string* why)> reencode_fits;
  // A re-encoding build stops at its next pause (as a yield does: the previous replica stays,
  // state building, reason kPreemptedReason) once this says true, whether the pause waits for a
  // pass or not: the drainer has a relocation waiting, which must not wait for a pass to end
  // nor for a re-encoding. Asked at every pause of a re-encoding. May be empty.
  std::function<bool()> preempt;
  // Where set, the codec choice and encoding of a re-encoding asked for (stage kReencode, not
  // one kAuto chose because the cores are there now) run on a thread of their own that calls
  // this first (the background builder: SCHED_IDLE and the idle I/O class for that thread
  // only). A relocation, the publish and the release of byte-tier ranges stay on the
  // caller's thread: a reader's open waits for that release (it holds the entry's open lock
  // exclusively), and an idle-class holder would keep it waiting while anything else runs.
  std::function<void()> become_idle;
  // Where set, the build of a file another process has open (a pass moved past it and reads
  // on) runs on a thread of its own that calls this first (the drainer: nice 19 for that
  // thread), so that it takes no CPU that pass wants; the build of a closed file runs at the
  // caller's priority, since the pass's user may be waiting for it. A relocation there that
  // the file's close overtakes (the pass ended) stops at its next basket and is redone on the
  // caller's thread: the low thread cannot raise its priority back.
  std::function<void()> become_low;
  // A relocation (stage 1) that a re-encoding will follow (the drainer's): published before its
  // data file is durable (writeback only started), and releasing no byte-tier range, so that
  // the files a pass left are served as soon as possible and a new reader's open never waits
  // for a release. Safe: every extent is checked on read against the manifest's CRC or tag, and
  // one a crash lost is rebuilt from its original unit (which the byte tier still holds, unless
  // an earlier build released it: then the origin's). The re-encoding's generation is durable
  // before it is published, and it releases the ranges.
  bool relocate_first = false;
};

inline constexpr std::string_view kPreemptedReason = "left for a relocation that is waiting";
// A relocation begun on the low thread that the file's close overtook; BuildReplica redoes it
// at the caller's priority, so no report carries it.
inline constexpr std::string_view kHandedBackReason = "closed by the pass: redone at full priority";

struct ReplicaBuildReport {
  std::string key;
  std::string url;
  ReplicaState state = ReplicaState::kNone;
  std::string reason;      // why not built (none, unsupported), or what is missing (partial)
  bool published = false;  // this build published a new generation
  uint64_t generation = 0;
  int stage = 0;          // of the replica (ReplicaManifest::Stage), 0 without one
  std::string stage_why;  // why this build relocated or re-encoded
  codec::Setting setting{codec::Algorithm::kNone, 0};
  std::string codec_why;
  std::vector<CodecRate> rates;
  std::vector<std::string> hot_branches;  // "tree/branch"
  // How many baskets got each encoding ("zstd:6", "lz4", "none"), and their stored bytes.
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> encodings;
  uint64_t baskets = 0;          // in the replica
  uint64_t new_baskets = 0;      // re-encoded by this build
  uint64_t missing_baskets = 0;  // hot but not held whole
  uint64_t original_bytes = 0;   // the replica's baskets in their original encoding
  uint64_t replica_bytes = 0;    // data file + manifest on disk
  uint64_t origin_bytes = 0;     // size of the remote file
  uint64_t virtual_bytes = 0;
  uint64_t released_bytes = 0;    // byte-tier bytes freed by this build
  bool release_deferred = false;  // another process had the entry open
  uint64_t cpu_ns = 0;
  double seconds = 0;
};

// Builds or extends the replica of the entry `key` of config.dir (see above). Errors are
// faults of the cache directory (I/O, an index that does not decode); everything about the
// file itself ends up in the report's state and reason (also kept in KEY.rps).
Result<ReplicaBuildReport> BuildReplica(const cache::Config& config,
                                        const std::string& key,
                                        const ReplicaBuildOptions& options);

// The replica state of one entry as `ferry cache replica status` reports it (reads only). An
// encrypted entry's sealed replica is read with `key` (the conf's cache_key_file); without it,
// or with another key, the state is none and the reason says why.
Result<ReplicaBuildReport> ReplicaStatusOf(const cache::EntryPaths& paths,
                                           const cache::MasterKey* key = nullptr);

// Removes an entry's replica (manifest, data files, status, trace). The byte tier stays; the
// baskets the replica held are fetched again when read. Safe while readers use the replica:
// they keep their descriptors.
Status DropReplica(const cache::EntryPaths& paths);

}  // namespace ferry::replica
