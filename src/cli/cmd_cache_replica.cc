// ferry cache replica build|status|drop: the replica tier of the client cache
// (docs/format/replica.md, cache/replica_build.h).
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/strings.h"
#include "cache/entry_store.h"
#include "cache/lock_file.h"
#include "cache/page_seal.h"
#include "cache/url.h"
#include "cli/args.h"
#include "cli/cache_conf.h"
#include "cli/commands.h"
#include "replica/activity.h"
#include "replica/replica_build.h"
#include "replica/replica_drain.h"
#include "replica/replica_queue.h"

namespace ferry::cli {
namespace {

// A background build waits until no process has read through the cache for this long.
constexpr std::chrono::milliseconds kQuietAfterRead{300};
constexpr std::chrono::milliseconds kQuietPoll{50};

// The CPU and I/O scheduling classes that only use what nothing else wants: a background build
// must never slow an analysis down.
void BecomeIdle() {
  sched_param p = {};
  (void)::sched_setscheduler(0, SCHED_IDLE, &p);
  constexpr int kWhoProcess = 1;
  constexpr int kClassIdle = 3;
  constexpr int kClassShift = 13;
  (void)::syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift);
}

// This process's peak resident set so far (getrusage reports KiB on Linux).
uint64_t PeakRssBytes() {
  rusage usage = {};
  return ::getrusage(RUSAGE_SELF, &usage) == 0 ? static_cast<uint64_t>(usage.ru_maxrss) * 1024 : 0;
}

// The entry keys the command works on: those of the URLs, or every entry with an index.
Result<std::vector<std::string>> SelectKeys(const cache::Config& config, const Args& args) {
  std::vector<std::string> keys;
  for (const std::string& url : args.positional()) {
    auto normalized = cache::NormalizeUrl(url, config.url_params);
    if (!normalized) {
      return InvalidArgumentError("not a URL the cache can hold: " + url);
    }
    keys.push_back(cache::EntryKey(*normalized));
  }
  if (!args.positional().empty()) {
    return keys;
  }
  for (const cache::EntryListing& e : FERRY_TRY(cache::ScanEntries(config.dir))) {
    if (e.has_index) {
      keys.push_back(e.key);
    }
  }
  return keys;
}

std::string CodecName(const codec::Setting& s) {
  return s.algorithm == codec::Algorithm::kNone ? "none" : s.ToString();
}

void WriteReport(JsonWriter& w, const replica::ReplicaBuildReport& r) {
  w.BeginObject();
  w.Field("url", r.url).Field("key", r.key);
  w.Field("state", replica::ReplicaStateName(r.state));
  // 1: relocated as stored, re-encoding when idle; 2: re-encoded; 0: no replica.
  w.Field("stage", static_cast<uint64_t>(r.stage)).Field("stage_why", r.stage_why);
  w.Field("codec", r.generation != 0 ? CodecName(r.setting) : "");
  w.Field("original_bytes", r.origin_bytes).Field("virtual_bytes", r.virtual_bytes);
  w.Field("replica_bytes", r.replica_bytes);
  w.Key("hot_branches").BeginArray();
  for (const std::string& b : r.hot_branches) {
    w.String(b);
  }
  w.EndArray();
  w.Field("baskets", r.baskets).Field("missing_baskets", r.missing_baskets);
  w.Field("baskets_original_bytes", r.original_bytes);
  w.Field("generation", r.generation).Field("reason", r.reason);
  w.Field("build_cpu_seconds", static_cast<double>(r.cpu_ns) / 1e9);
  w.Key("encodings").BeginObject();
  for (const auto& [name, counts] : r.encodings) {
    w.Key(name).BeginObject().Field("baskets", counts.first).Field("bytes", counts.second);
    w.EndObject();
  }
  w.EndObject();
  w.Key("decode_rates").BeginArray();
  for (const replica::CodecRate& c : r.rates) {
    w.BeginObject().Field("codec", CodecName(c.setting));
    w.Field("decode_mb_per_s", static_cast<double>(c.decode_bytes_per_s) / 1e6);
    w.Field("size_ratio", static_cast<double>(c.compressed_per_mib) / 1048576.0);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void PrintReport(const replica::ReplicaBuildReport& r, bool built_now) {
  std::printf("%-11s %s\n", std::string(replica::ReplicaStateName(r.state)).c_str(), r.url.c_str());
  if (r.generation != 0) {
    std::printf("            stage %d: %s%s%s\n", r.stage,
                r.stage == 1 ? "relocated as stored, re-encoding when idle" : "re-encoded",
                r.stage_why.empty() ? "" : "; ", r.stage_why.c_str());
    std::printf(
        "            %s, %llu baskets (%s as stored originally, %s now), %zu branches,"
        " file %s -> %s\n",
        CodecName(r.setting).c_str(), static_cast<unsigned long long>(r.baskets),
        HumanBytes(static_cast<double>(r.original_bytes)).c_str(),
        HumanBytes(static_cast<double>(r.replica_bytes)).c_str(), r.hot_branches.size(),
        HumanBytes(static_cast<double>(r.origin_bytes)).c_str(),
        HumanBytes(static_cast<double>(r.virtual_bytes)).c_str());
  }
  if (!r.encodings.empty()) {
    std::printf("            encodings:");
    for (const auto& [name, counts] : r.encodings) {
      std::printf(" %s %llu baskets (%s)", name.c_str(),
                  static_cast<unsigned long long>(counts.first),
                  HumanBytes(static_cast<double>(counts.second)).c_str());
    }
    std::printf("\n");
  }
  if (built_now && r.generation != 0) {
    std::printf(
        "            built in %.2f s (%.2f s CPU), %llu baskets re-encoded, %s of the byte"
        " tier released%s\n",
        r.seconds, static_cast<double>(r.cpu_ns) / 1e9,
        static_cast<unsigned long long>(r.new_baskets),
        HumanBytes(static_cast<double>(r.released_bytes)).c_str(),
        r.release_deferred ? " (later: another process has the file open)" : "");
  }
  if (!r.rates.empty() && r.generation != 0) {
    std::printf("            decode rates:");
    for (const replica::CodecRate& c : r.rates) {
      std::printf(" %s %.0f MB/s (x%.2f)", CodecName(c.setting).c_str(),
                  static_cast<double>(c.decode_bytes_per_s) / 1e6,
                  static_cast<double>(c.compressed_per_mib) / 1048576.0);
    }
    std::printf("\n");
  }
  if (!r.reason.empty()) {
    std::printf("            %s\n", r.reason.c_str());
  }
}

// What every replica command starts with: its options, the cache's settings, the entries.
struct Selection {
  Args args;
  cache::Config config;
  std::vector<std::string> keys;
};

// The cache and entries of the command; on an input error, prints it, sets *rc and returns
// nullopt.
std::optional<Selection> Select(const Args& args, int* rc) {
  auto config = ExistingCacheConfig(args);
  if (!config) {
    *rc = ReportError(config.error());
    return std::nullopt;
  }
  auto keys = SelectKeys(*config, args);
  if (!keys) {
    *rc = ReportError(keys.error());
    return std::nullopt;
  }
  return Selection{args, std::move(*config), std::move(*keys)};
}

// Prints the report `make(key)` gives for every selected entry: one JSON document with
// --json, text otherwise. An entry that vanished meanwhile is skipped when no URL named it.
int PrintReports(
    const Selection& s,
    bool built_now,
    const std::function<Result<replica::ReplicaBuildReport>(const std::string&)>& make) {
  const bool json = s.args.Has("--json");
  JsonWriter w;
  w.BeginObject().Key("files").BeginArray();
  int rc = kExitOk;
  for (const std::string& key : s.keys) {
    auto report = make(key);
    if (!report) {
      if (report.error().code() != ErrorCode::kNotFound || !s.args.positional().empty()) {
        rc = ReportError(report.error());
      }
      continue;
    }
    if (json) {
      WriteReport(w, *report);
    } else {
      PrintReport(*report, built_now);
    }
  }
  w.EndArray();
  if (built_now) {
    // The builder's memory against the hot bytes it placed (issue 38 compares both).
    w.Field("peak_rss_bytes", PeakRssBytes());
  }
  w.EndObject();
  if (json) {
    std::printf("%s\n", w.str().c_str());
  }
  return rc;
}

int Build(const Args& args) {
  int rc = kExitOk;
  const bool background = args.Has("--background");
  // The plug-in's drainer (--queue) relocates at the priority of the pass that started it: a
  // relocation is a copy that pass's user waits for, and it releases byte-tier ranges under the
  // entry's open lock, which a new reader's open waits for. Only its re-encodings go idle
  // (ReplicaBuildOptions::become_idle). Any other background build is idle as a whole.
  const bool drain = background && args.Has("--queue");
  if (background && !drain) {
    BecomeIdle();  // before anything else: a pass may be starting beside this process
  }
  auto s = Select(args, &rc);
  if (!s) {
    return rc;
  }
  replica::ReplicaBuildOptions options;
  options.codec = s->args.GetOr("--codec", s->config.replica_codec);
  options.budget_percent = s->config.replica_budget_percent;
  if (options.codec != "auto" && !codec::Setting::Parse(options.codec)) {
    return UsageError("--codec must be auto, zstd:N, lz4 or none", args.spec());
  }
  const std::string stage = s->args.GetOr("--stage", "2");
  if (stage != "1" && stage != "2" && stage != "auto") {
    return UsageError("--stage must be 1, 2 or auto", args.spec());
  }
  options.stage = stage == "1"   ? replica::ReplicaStage::kRelocate
                  : stage == "2" ? replica::ReplicaStage::kReencode
                                 : replica::ReplicaStage::kAuto;
  if (background) {
    // And out of the way of a running analysis: before each file and between baskets, wait
    // while any process reads through this cache — unless that pass is filling the cache and
    // leaves a core idle (checked at most every 5 ms of building) — and leave a file to an
    // explicit build that asks for it.
    options.yield = true;
    if (drain) {
      options.become_idle = BecomeIdle;
      options.become_low = [] {
        // The nice value is per thread on Linux: this thread's only.
        (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
      };
    }
    auto room = std::make_shared<replica::CpuRoom>();
    // FERRY_REPLICA_FILL_CORES: the idle cores a filling pass must leave (replica::kMinSpareCores;
    // tests set 0 to take the machine's load out of their outcome).
    const char* want_cores = std::getenv("FERRY_REPLICA_FILL_CORES");
    const double cores = want_cores != nullptr ? std::atof(want_cores) : replica::kMinSpareCores;
    options.pause = [dir = s->config.dir, room, cores,
                     next = std::chrono::steady_clock::time_point{}](
                        const std::function<bool()>& give_up) mutable {
      const auto now = std::chrono::steady_clock::now();
      if (now < next) {
        return;
      }
      replica::WaitForRoom(
          dir, kQuietAfterRead, kQuietPoll, [room] { return room->SpareCores(); }, cores, give_up);
      next = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    };
    // Stage 2 at once only where the filling pass itself leaves the cores for it (a machine
    // with spare cores), by the same measure. Once the pass has ended the copy still goes
    // first: it is ready in a fraction of the pass, and the re-encoding follows at idle.
    options.reencode_fits = [dir = s->config.dir, room, cores](std::string* why) {
      if (!replica::FillingPassRunning(dir, kQuietAfterRead)) {
        *why = "no filling pass running: the copy first, ready at once";
        return false;
      }
      return replica::MayBuildNow(
          dir, kQuietAfterRead, [room] { return room->SpareCores(); }, cores, why);
    };
  }
  if (s->args.Has("--queue")) {
    // The plug-in's background requests (replica/replica_queue.h).
    auto done = replica::DrainReplicaQueue(s->config, options);
    return done ? kExitOk : ReportError(done.error());
  }
  return PrintReports(*s, true, [&](const std::string& key) {
    return replica::BuildReplica(s->config, key, options);
  });
}

int ShowStatus(const Args& args) {
  int rc = kExitOk;
  auto s = Select(args, &rc);
  if (!s) {
    return rc;
  }
  // An encrypted cache's replicas are sealed: the conf's key opens their manifests. A key that
  // does not load is reported per entry (as for a cache process, which reads through then).
  std::optional<cache::MasterKey> master;
  std::string key_error;
  if (!s->config.key_file.empty()) {
    auto loaded = cache::MasterKey::Load(s->config.key_file);
    if (loaded) {
      master.emplace(std::move(*loaded));
    } else {
      key_error = loaded.error().message();
    }
  }
  const cache::MasterKey* key = master ? &*master : nullptr;
  auto status = [&](const std::string& entry) -> Result<replica::ReplicaBuildReport> {
    auto r = replica::ReplicaStatusOf(cache::PathsFor(s->config.dir, entry), key);
    if (r && !key_error.empty() && r->reason.rfind("sealed replica", 0) == 0) {
      r->reason += " (" + key_error + ")";
    }
    return r;
  };
  return PrintReports(*s, false, status);
}

int Drop(const Args& args) {
  int rc = kExitOk;
  auto s = Select(args, &rc);
  if (!s) {
    return rc;
  }
  for (const std::string& key : s->keys) {
    Status st = replica::DropReplica(cache::PathsFor(s->config.dir, key));
    if (!st) {
      return ReportError(st.error());
    }
  }
  std::printf("dropped the replicas of %zu files\n", s->keys.size());
  return kExitOk;
}

constexpr OptionSpec kBuildOptions[] = {
    kCacheDirOption,
    kConfDirOption,
    {"--codec", "auto|zstd:N|lz4|none", "the encoding of the re-encoded baskets",
     "the cache's replica_codec setting"},
    kCacheJsonOption,
    {"--stage", "1|2|auto",
     "1: relocate the baskets as stored (a copy); 2: re-encode them; auto: 2 when the machine "
     "has the CPU now, else 1 (the queue's drainer always decides so)",
     "2"},
    {"--background", "",
     "idle CPU and I/O priority (with --queue: its re-encodings only, on a thread of their "
     "own)"},
    {"--queue", "",
     "build what the plug-in asked for in the background (replica = auto); with --background, "
     "how the plug-in runs the builder"},
};
constexpr OptionSpec kStatusOptions[] = {kCacheDirOption, kConfDirOption, kCacheJsonOption};
constexpr OptionSpec kDropOptions[] = {kCacheDirOption, kConfDirOption};

constexpr CommandSpec kBuild{
    .path = "cache replica build",
    .summary =
        "re-encode the baskets cached ROOT files were read by, in read order, and serve "
        "the files from them; returns when the replicas are built",
    .synopsis = "[URL...]",
    .options = kBuildOptions,
    .notes =
        "Files that are not ROOT files, or whose baskets are not cached, are reported and "
        "left as\nthey are.",
    .run = Build,
};
constexpr CommandSpec kStatus{
    .path = "cache replica status",
    .summary = "the replica of each file: state, codec, sizes, branches, encodings",
    .synopsis = "[URL...]",
    .options = kStatusOptions,
    .run = ShowStatus,
};
constexpr CommandSpec kDrop{
    .path = "cache replica drop",
    .summary = "remove the replicas: the byte tier serves the files again",
    .synopsis = "[URL...]",
    .options = kDropOptions,
    .run = Drop,
};

constexpr const CommandSpec* kReplicaSubcommands[] = {&kBuild, &kStatus, &kDrop};

}  // namespace

constexpr CommandSpec kCacheReplicaCommand{
    .path = "cache replica",
    .summary = "replicas of cached ROOT files, their baskets re-encoded in read order",
    .notes = "Without URLs: every cached file.",
    .subcommands = kReplicaSubcommands,
};

}  // namespace ferry::cli
