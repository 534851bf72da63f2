// ferry cache enable|disable|status|ls|stats|verify|evict|clear|pin: the client cache
// (XrdCl plug-in libXrdClFerry-5.so over the page store of docs/format/page-store.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/json_writer.h"
#include "base/progress.h"
#include "base/self_exe.h"
#include "base/strings.h"
#include "cache/capacity.h"
#include "cache/conf_file.h"
#include "cache/config.h"
#include "cache/dir_access.h"
#include "cache/entry_store.h"
#include "cache/key_ring.h"
#include "cache/page_seal.h"
#include "cache/stats.h"
#include "cache/url.h"
#include "cache/verify.h"
#include "cli/args.h"
#include "cli/cache_access.h"
#include "cli/cache_conf.h"
#include "cli/commands.h"
#include "replica/hooks.h"

namespace ferry::cli {
namespace {

// The conf directory a command works on: --conf-dir, --system, or the user's.
std::string ConfDir(const Args& a) {
  if (auto d = a.Get("--conf-dir")) {
    return *d;
  }
  return a.Has("--system") ? std::string(cache::kSystemConfDir) : cache::UserConfDir();
}

Result<cache::Config> EffectiveConfig(const Args& args) {
  return cache::EffectiveConfig(args.Get("--conf-dir"), args.Get("--dir"), replica::Hooks().get());
}

Result<cache::Config> ExistingCache(const Args& args) {
  cache::Config config = FERRY_TRY(EffectiveConfig(args));
  if (!cache::IsCacheDir(config.dir)) {
    return Error(ErrorCode::kNotFound, config.dir + " is not a ferry cache directory");
  }
  return config;
}

// The client plug-in beside the binary (base/self_exe.h): an installed ferry's conf file names
// the installed plug-in.
std::string PluginLibDefault() {
  std::string found = FindLibrary("libXrdClFerry-5.so");  // not const: returned by move
  if (!found.empty()) {
    return found;
  }
  return LibraryDirs().empty() ? "libXrdClFerry-5.so"
                               : LibraryDirs().front() + "/libXrdClFerry-5.so";
}

std::string OctalMode(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// `pin` and `clear --all` decide for every user of a group cache: its owner's (or root's) call.
Status RequireOwner(const std::string& dir, const char* what) {
  struct stat st = {};
  if (::stat(dir.c_str(), &st) != 0) {
    return IoError("cannot look at " + dir, errno);
  }
  if (st.st_uid != ::geteuid() && ::geteuid() != 0) {
    return Error(ErrorCode::kPermission, std::string(what) + " needs the owner of " + dir + " (uid "
                                             + std::to_string(st.st_uid) + ")");
  }
  return OkStatus();
}

std::string Ago(int64_t ns) {
  if (ns <= 0) {
    return "-";
  }
  const int64_t s = std::time(nullptr) - ns / 1'000'000'000;
  char buf[32];
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%llds ago", static_cast<long long>(s));
  } else if (s < 7200) {
    std::snprintf(buf, sizeof buf, "%lldm ago", static_cast<long long>(s / 60));
  } else if (s < int64_t{2} * 86400) {
    std::snprintf(buf, sizeof buf, "%lldh ago", static_cast<long long>(s / 3600));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd ago", static_cast<long long>(s / 86400));
  }
  return buf;
}

// ---- enable / disable ----

// Makes `dir` the kind of cache `shared` asks for (dir_access.h): a new directory is created so;
// one of ours is changed, with everything in it we own; another's is accepted only when it
// already is the group cache asked for (a member joining it), never changed.
Status PrepareCacheDirMode(const std::string& dir, const std::string& shared) {
  const cache::Sharing sharing = shared.empty() ? cache::Sharing::kPrivate : cache::Sharing::kGroup;
  const gid_t gid = shared.empty() ? 0 : FERRY_TRY(cache::GroupId(shared));
  if (!shared.empty() && ::geteuid() != 0 && !cache::InGroup(gid)) {
    return Error(ErrorCode::kPermission, "you are not a member of group " + shared);
  }
  const cache::DirAccess found = cache::InspectCacheDir(dir, shared);
  if (found.exists && (found.owner == ::geteuid() || ::geteuid() == 0)) {
    if (!cache::IsCacheDir(dir)) {
      FERRY_TRY(cache::PrepareCacheDir(dir));  // refuses a foreign non-empty directory
    }
    const uint64_t changed = FERRY_TRY(cache::ApplyCacheMode(dir, sharing, gid));
    if (changed > 0) {
      std::printf(
          "made %s %s: %llu files and folders changed mode\n", dir.c_str(),
          sharing == cache::Sharing::kGroup ? ("the group cache of " + shared).c_str() : "private",
          static_cast<unsigned long long>(changed));
    }
  } else if (!found.problem.empty()) {
    return Error(ErrorCode::kPermission, found.problem);
  }
  return cache::PrepareCacheDir(dir, sharing, gid);
}

std::string AbsolutePath(const std::string& path) {
  if (path.starts_with('/')) {
    return path;
  }
  char cwd[4096];
  return ::getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) + "/" + path : path;
}

int Enable(const Args& a) {
  auto dir = a.Get("--dir");
  if (!dir || !a.positional().empty()) {
    return UsageError("cache enable needs --dir DIR", a.spec());
  }
  const std::string abs_dir = AbsolutePath(*dir);
  std::map<std::string, std::string> kv;
  kv["dir"] = abs_dir;
  kv["max_size"] = a.GetOr("--max-size", "100G");
  if (auto group = a.Get("--shared")) {
    kv["shared"] = *group;
  }
  if (auto key = a.Get("--encrypt-key")) {
    // Checked now (mode, size), so that a bad key file is reported here and not at each read.
    kv["cache_key_file"] = cache::IsKeyringSource(*key) ? *key : AbsolutePath(*key);
    if (auto loaded = cache::MasterKey::Load(kv["cache_key_file"]); !loaded) {
      return ReportError(loaded.error());
    }
  }
  for (const std::string& setting : a.All("--set")) {
    const size_t eq = setting.find('=');
    if (eq == std::string::npos) {
      return UsageError("--set needs KEY=VALUE", a.spec());
    }
    kv[setting.substr(0, eq)] = setting.substr(eq + 1);
  }
  for (const auto& [k, v] : kv) {
    if (std::find(cache::ConfigKeys().begin(), cache::ConfigKeys().end(), k)
        == cache::ConfigKeys().end()) {
      return UsageError("unknown cache setting '" + k + "'", a.spec());
    }
  }
  if (auto check = cache::ConfigFromMap(kv, /*use_env=*/false, replica::Hooks().get()); !check) {
    return ReportError(check.error());
  }
  if (Status st = PrepareCacheDirMode(abs_dir, kv.count("shared") != 0 ? kv["shared"] : ""); !st) {
    return ReportError(st.error());
  }
  const bool system = a.Has("--system");
  const std::string lib = a.GetOr("--lib", PluginLibDefault());
  if (!cache::PathExists(lib)) {
    std::fprintf(stderr,
                 "ferry: warning: plug-in library %s does not exist (build it, or pass --lib)\n",
                 lib.c_str());
  }
  const std::string conf_dir = ConfDir(a);
  auto written = cache::WriteConfFile(
      conf_dir, cache::PluginConf{.url = a.GetOr("--url", "root://*"), .lib = lib, .settings = kv});
  if (!written) {
    return ReportError(written.error());
  }
  const std::string& path = *written;
  const char* confdir_env = std::getenv("XRD_PLUGINCONFDIR");  // NOLINT: read-only
  const std::string account_dir = cache::AccountHome() + "/.xrootd/client.plugins.d";
  if (!system && !a.Get("--conf-dir") && conf_dir != account_dir
      && (confdir_env == nullptr || conf_dir != confdir_env)) {
    std::fprintf(stderr,
                 "ferry: note: XrdCl reads %s and $XRD_PLUGINCONFDIR, not $HOME; to use this "
                 "conf set XRD_PLUGINCONFDIR=%s\n",
                 account_dir.c_str(), conf_dir.c_str());
  }
  std::printf(
      "ferry cache enabled for %s\n  cache directory: %s (max %s, %s)\n  conf file:       %s\n"
      "  plug-in:         %s\n",
      a.GetOr("--url", "root://*").c_str(), abs_dir.c_str(), kv["max_size"].c_str(),
      kv.count("shared") != 0 ? ("group cache of " + kv["shared"] + ", 2770").c_str()
                              : "private, 0700",
      path.c_str(), lib.c_str());
  std::printf(
      "XRootD clients started from now on read through the cache (XRD_PLUGIN, if set, "
      "overrides conf files).\nTo disable: ferry cache disable%s   (or remove %s)\n",
      system ? " --system" : "", path.c_str());
  return kExitOk;
}

int Disable(const Args& args) {
  const std::string path = ConfDir(args) + "/" + cache::kConfFileName;
  auto removed = cache::RemoveConfFile(ConfDir(args));
  if (!removed) {
    return ReportError(removed.error());
  }
  if (!*removed) {
    std::printf("ferry cache is not enabled (%s does not exist)\n", path.c_str());
    return kExitOk;
  }
  std::printf(
      "ferry cache disabled (removed %s); the cache directory is kept ('ferry cache "
      "clear' empties it)\n",
      path.c_str());
  return kExitOk;
}

// ---- status / ls / stats ----

void WriteCounters(JsonWriter& w, const cache::CounterValues& v) {
  for (size_t i = 0; i < cache::kCounterCount; ++i) {
    w.Field(cache::CounterName(static_cast<cache::Counter>(i)), v[i]);
  }
}

int ShowStatus(const Args& args) {
  const std::string conf = cache::FindEnabledConf(args.Get("--conf-dir"));
  std::map<std::string, std::string> kv =
      conf.empty() ? std::map<std::string, std::string>{} : cache::ReadConfFile(conf);
  auto config = EffectiveConfig(args);
  const bool have_dir = config && cache::IsCacheDir(config->dir);
  cache::Usage usage;
  uint64_t free_bytes = 0;
  cache::DirAccess access;
  if (have_dir) {
    usage = cache::MeasureUsage(config->dir).value_or(cache::Usage{});
    free_bytes = cache::FreeBytes(config->dir).value_or(0);
    access = cache::InspectCacheDir(config->dir, config->shared);
  }
  if (args.Has("--json")) {
    JsonWriter w;
    w.BeginObject().Field("enabled", !conf.empty()).Field("conf", conf);
    w.Field("url", kv.count("url") != 0 ? kv["url"] : "");
    w.Field("lib", kv.count("lib") != 0 ? kv["lib"] : "");
    w.Field("dir", config ? config->dir : "");
    w.Field("mode", config && !config->shared.empty() ? "group" : "private");
    w.Field("shared_group", config ? config->shared : "");
    w.Field("dir_mode", access.exists ? OctalMode(access.mode) : "");
    w.Field("dir_owner", access.exists ? static_cast<uint64_t>(access.owner) : 0);
    w.Field("dir_group", access.exists ? access.group_name : "");
    w.Field("problem", access.problem);
    w.Field("max_size", config ? config->max_bytes : 0);
    w.Field("entries", usage.entries).Field("disk_bytes", usage.disk_bytes);
    w.Field("free_bytes", free_bytes).EndObject();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  if (conf.empty()) {
    std::printf("plug-in:   not enabled (ferry cache enable --dir DIR)\n");
  } else {
    std::printf("plug-in:   enabled for %s by %s\n           lib %s%s\n", kv["url"].c_str(),
                conf.c_str(), kv["lib"].c_str(), cache::PathExists(kv["lib"]) ? "" : "  (MISSING)");
  }
  if (!config) {
    std::printf("directory: none\n");
    return kExitOk;
  }
  std::printf("directory: %s%s\n", config->dir.c_str(), have_dir ? "" : "  (not created yet)");
  std::printf("mode:      %s",
              config->shared.empty() ? "private" : ("group cache of " + config->shared).c_str());
  if (access.exists) {
    std::printf(" (directory %s, group %s)", OctalMode(access.mode).c_str(),
                access.group_name.c_str());
  }
  std::printf("\n");
  if (!access.problem.empty()) {
    std::printf("PROBLEM:   %s; the plug-in reads through without caching\n",
                access.problem.c_str());
  }
  std::printf("usage:     %llu entries, %s of %s, %s free on its filesystem\n",
              static_cast<unsigned long long>(usage.entries),
              HumanBytes(static_cast<double>(usage.disk_bytes)).c_str(),
              HumanBytes(static_cast<double>(config->max_bytes)).c_str(),
              HumanBytes(static_cast<double>(free_bytes)).c_str());
  return kExitOk;
}

int Ls(const Args& args) {
  auto config = ExistingCache(args);
  if (!config) {
    return ReportError(config.error());
  }
  auto entries = cache::ScanEntries(config->dir);
  if (!entries) {
    return ReportError(entries.error());
  }
  std::sort(entries->begin(), entries->end(),
            [](const auto& a, const auto& b) { return a.last_read_ns > b.last_read_ns; });
  JsonWriter w;
  const bool json = args.Has("--json");
  if (json) {
    w.BeginObject().Key("entries").BeginArray();
  } else {
    std::printf("%-10s %-10s %-10s %-12s %s\n", "size", "held", "disk", "last read", "url");
  }
  for (const cache::EntryListing& e : *entries) {
    auto index = cache::LoadIndex(e.paths.idx());
    if (!index) {
      continue;
    }
    const auto& info = index->info();
    if (json) {
      w.BeginObject().Field("url", info.url).Field("key", e.key);
      w.Field("size", info.origin_size).Field("held_bytes", index->held_bytes());
      w.Field("full_pages", index->full_pages());
      w.Field("fragments", static_cast<uint64_t>(index->fragments().size()));
      w.Field("page_size", static_cast<uint64_t>(info.page_size));
      w.Field("disk_bytes", e.disk_bytes).Field("pinned", e.pinned);
      w.Field("last_read_unix", e.last_read_ns / 1'000'000'000).EndObject();
    } else {
      std::printf("%-10s %-10s %-10s %-12s %s%s\n",
                  HumanBytes(static_cast<double>(info.origin_size)).c_str(),
                  HumanBytes(static_cast<double>(index->held_bytes())).c_str(),
                  HumanBytes(static_cast<double>(e.disk_bytes)).c_str(),
                  Ago(e.last_read_ns).c_str(), info.url.c_str(), e.pinned ? "  [pinned]" : "");
    }
  }
  if (json) {
    w.EndArray().EndObject();
    std::printf("%s\n", w.str().c_str());
  }
  return kExitOk;
}

int Stats(const Args& args) {
  auto config = ExistingCache(args);
  if (!config) {
    return ReportError(config.error());
  }
  auto counters = cache::ReadStatsFile(config->dir);
  if (!counters) {
    return ReportError(counters.error());
  }
  auto usage = cache::MeasureUsage(config->dir);
  if (!usage) {
    return ReportError(usage.error());
  }
  if (args.Has("--json")) {
    JsonWriter w;
    w.BeginObject();
    WriteCounters(w, *counters);
    w.Field("entries", usage->entries).Field("disk_bytes", usage->disk_bytes);
    WriteProxyStatsJson(w, config->dir);
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  const auto& v = *counters;
  auto get = [&](cache::Counter c) {
    return v[static_cast<size_t>(c)];
  };
  const uint64_t reads = get(cache::Counter::kHits) + get(cache::Counter::kMisses);
  std::printf("reads:     %llu hits, %llu misses (%.1f%% hits)\n",
              static_cast<unsigned long long>(get(cache::Counter::kHits)),
              static_cast<unsigned long long>(get(cache::Counter::kMisses)),
              reads == 0 ? 0.0
                         : 100.0 * static_cast<double>(get(cache::Counter::kHits))
                               / static_cast<double>(reads));
  std::printf("bytes:     %s from the cache, %s from origins\n",
              HumanBytes(static_cast<double>(get(cache::Counter::kBytesFromCache))).c_str(),
              HumanBytes(static_cast<double>(get(cache::Counter::kBytesFromOrigin))).c_str());
  std::printf("origin:    %llu requests, %llu chunks, %llu retries\n",
              static_cast<unsigned long long>(get(cache::Counter::kOriginRequests)),
              static_cast<unsigned long long>(get(cache::Counter::kOriginChunks)),
              static_cast<unsigned long long>(get(cache::Counter::kRetries)));
  std::printf("replicas:  %s in %llu reads (%llu byte-tier disk reads), %llu replica faults\n",
              HumanBytes(static_cast<double>(get(cache::Counter::kBytesFromReplica))).c_str(),
              static_cast<unsigned long long>(get(cache::Counter::kReplicaReads)),
              static_cast<unsigned long long>(get(cache::Counter::kDiskReads)),
              static_cast<unsigned long long>(get(cache::Counter::kReplicaFaults)));
  std::printf("faults:    %llu CRC failures, %llu fail-open events, %llu writes dropped\n",
              static_cast<unsigned long long>(get(cache::Counter::kCrcFailures)),
              static_cast<unsigned long long>(get(cache::Counter::kFailopenEvents)),
              static_cast<unsigned long long>(get(cache::Counter::kWritesDropped)));
  std::printf("capacity:  %llu entries, %s on disk, %llu evictions, %llu admissions declined\n",
              static_cast<unsigned long long>(usage->entries),
              HumanBytes(static_cast<double>(usage->disk_bytes)).c_str(),
              static_cast<unsigned long long>(get(cache::Counter::kEvictions)),
              static_cast<unsigned long long>(get(cache::Counter::kAdmissionsDeclined)));
  PrintProxyStats(config->dir);
  return kExitOk;
}

// ---- verify / evict / clear / pin ----

int Verify(const Args& args) {
  auto config = ExistingCache(args);
  if (!config) {
    return ReportError(config.error());
  }
  auto entries = cache::ScanEntries(config->dir);
  if (!entries) {
    return ReportError(entries.error());
  }
  const bool repair = args.Has("--repair");
  std::optional<cache::MasterKey> key;
  if (!config->key_file.empty()) {
    auto loaded = cache::MasterKey::Load(config->key_file);
    if (!loaded) {
      return ReportError(loaded.error());
    }
    key = std::move(*loaded);
  }
  uint64_t sealed_unchecked = 0;
  uint64_t checked = 0, bad_entries = 0, pages_ok = 0, pages_bad = 0, frags_ok = 0, frags_bad = 0,
           bad_index = 0, garbage = 0, replicas = 0, replicas_bad = 0, extents_ok = 0,
           extents_bad = 0;
  Progress progress("verify", entries->size(), "entries");
  for (const cache::EntryListing& e : *entries) {
    progress.Add(1);
    if (!e.has_index) {
      continue;
    }
    auto r = cache::VerifyEntry(e.paths, repair, static_cast<int>(config->lock_timeout_ms),
                                key ? &*key : nullptr, replica::Hooks().get());
    if (!r) {
      if (r.error().code() == ErrorCode::kNotFound) {
        continue;  // evicted meanwhile
      }
      return ReportError(r.error());
    }
    ++checked;
    if (r->sealed_unchecked) {
      ++sealed_unchecked;
      if (!args.Has("--json")) {
        std::fprintf(stderr, "%s %s: not checked: %s\n", e.key.c_str(), r->url.c_str(),
                     r->sealed_note.c_str());
      }
    }
    pages_ok += r->pages_ok;
    pages_bad += r->pages_bad;
    frags_ok += r->fragments_ok;
    frags_bad += r->fragments_bad;
    garbage += r->garbage_bytes;
    if (!r->index_ok) {
      ++bad_index;
    }
    replicas += r->has_replica ? 1u : 0u;
    replicas_bad += r->replica_bad ? 1u : 0u;
    extents_ok += r->replica_extents_ok;
    extents_bad += r->replica_extents_bad;
    if (r->bad()) {
      ++bad_entries;
      if (!args.Has("--json")) {
        std::fprintf(
            stderr, "%s %s: %s%llu bad pages, %llu bad fragments%s%s\n", e.key.c_str(),
            r->url.c_str(), r->index_ok ? "" : ("bad index (" + r->index_error + "), ").c_str(),
            static_cast<unsigned long long>(r->pages_bad),
            static_cast<unsigned long long>(r->fragments_bad),
            r->replica_bad
                ? (", bad replica (" + std::to_string(r->replica_extents_bad) + " extents bad"
                   + (r->replica_error.empty() ? "" : ": ") + r->replica_error + ")")
                      .c_str()
                : "",
            r->repaired ? " (repaired)" : "");
      }
    }
  }
  progress.Finish();
  if (args.Has("--json")) {
    JsonWriter w;
    w.BeginObject().Field("entries", checked).Field("bad_entries", bad_entries);
    w.Field("bad_indexes", bad_index).Field("pages_ok", pages_ok).Field("pages_bad", pages_bad);
    w.Field("fragments_ok", frags_ok).Field("fragments_bad", frags_bad);
    w.Field("garbage_bytes", garbage).Field("replicas", replicas);
    w.Field("replicas_bad", replicas_bad).Field("replica_extents_ok", extents_ok);
    w.Field("replica_extents_bad", extents_bad).Field("encrypted_unchecked", sealed_unchecked);
    w.Field("repaired", repair && bad_entries > 0).EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf(
        "verified %llu entries: %llu pages and %llu fragments ok, %llu pages and %llu "
        "fragments bad, %llu bad indexes; %llu replicas (%llu bad)%s\n",
        static_cast<unsigned long long>(checked), static_cast<unsigned long long>(pages_ok),
        static_cast<unsigned long long>(frags_ok), static_cast<unsigned long long>(pages_bad),
        static_cast<unsigned long long>(frags_bad), static_cast<unsigned long long>(bad_index),
        static_cast<unsigned long long>(replicas), static_cast<unsigned long long>(replicas_bad),
        repair && bad_entries > 0 ? " (repaired)" : "");
  }
  return bad_entries == 0 || repair ? kExitOk : kExitBadInput;
}

int PrintEvict(const cache::EvictResult& r, bool counted, const std::string& dir) {
  if (counted && r.evicted > 0) {
    cache::Counters c;
    c.Add(cache::Counter::kEvictions, r.evicted);
    (void)c.MergeInto(dir);
  }
  std::printf("evicted %llu entries (%s); kept %llu open, %llu pinned; now %llu entries, %s%s\n",
              static_cast<unsigned long long>(r.evicted),
              HumanBytes(static_cast<double>(r.freed_bytes)).c_str(),
              static_cast<unsigned long long>(r.skipped_open),
              static_cast<unsigned long long>(r.skipped_pinned),
              static_cast<unsigned long long>(r.after.entries),
              HumanBytes(static_cast<double>(r.after.disk_bytes)).c_str(),
              r.still_over ? " (still over the target)" : "");
  return kExitOk;
}

int Evict(const Args& args) {
  auto config = ExistingCache(args);
  if (!config) {
    return ReportError(config.error());
  }
  cache::EvictOptions o;
  o.lock_wait_ms = 10000;
  if (auto d = args.Get("--older-than")) {
    auto s = ParseDurationSeconds(*d);
    if (!s) {
      return UsageError(s.error().message(), args.spec());
    }
    o.older_than_s = *s;
  }
  if (auto sz = args.Get("--to-size")) {
    auto b = ParseSize(*sz);
    if (!b) {
      return UsageError("bad --to-size", args.spec());
    }
    o.target_bytes = *b;
  }
  if (o.older_than_s == 0 && o.target_bytes == UINT64_MAX) {
    o.target_bytes = config->max_bytes;  // enforce the configured caps and floors
    o.min_free_bytes = config->min_free_bytes;
    o.target_entries = config->max_entries != 0 ? config->max_entries : UINT64_MAX;
    o.min_free_inodes = config->min_free_inodes;
  }
  auto r = cache::Evict(config->dir, o);
  if (!r) {
    return ReportError(r.error());
  }
  if (r->busy) {
    return ReportError(Error(ErrorCode::kTimeout, "another process is evicting; try again"));
  }
  return PrintEvict(*r, true, config->dir);
}

int Clear(const Args& args) {
  auto config = ExistingCache(args);
  if (!config) {
    return ReportError(config.error());
  }
  if (args.Has("--all")) {
    if (Status st = RequireOwner(config->dir, "clear --all"); !st) {
      return ReportError(st.error());
    }
  }
  cache::EvictOptions o;
  o.everything = true;
  o.include_pinned = args.Has("--all");
  o.lock_wait_ms = 10000;
  auto r = cache::Evict(config->dir, o);
  if (!r) {
    return ReportError(r.error());
  }
  if (args.Has("--stats")) {
    if (Status st = cache::WriteStatsFile(config->dir, cache::CounterValues{}); !st) {
      return ReportError(st.error());
    }
  }
  return PrintEvict(*r, !args.Has("--stats"), config->dir);
}

int Pin(const Args& args) {
  if (args.positional().size() != 1) {
    return UsageError("cache pin needs one URL", args.spec());
  }
  auto config = ExistingCache(args);
  if (!config) {
    return ReportError(config.error());
  }
  if (Status st = RequireOwner(config->dir, "cache pin"); !st) {
    return ReportError(st.error());
  }
  auto url = cache::NormalizeUrl(args.positional()[0], config->url_params);
  if (!url) {
    return ReportError(url.error());
  }
  const cache::EntryPaths paths = cache::PathsFor(config->dir, cache::EntryKey(*url));
  if (args.Has("--unpin")) {
    if (::unlink(paths.pin().c_str()) != 0 && errno != ENOENT) {
      return ReportError(IoError("cannot remove " + paths.pin(), errno));
    }
    std::printf("unpinned %s\n", url->c_str());
    return kExitOk;
  }
  if (Status st = cache::MakeCacheSubdir(paths.subdir); !st) {
    return ReportError(st.error());
  }
  auto fd = cache::OpenCacheFile(paths.pin(), O_WRONLY);
  if (!fd) {
    return ReportError(fd.error());
  }
  std::printf("pinned %s (never evicted; 'ferry cache pin --unpin URL' undoes)%s\n", url->c_str(),
              cache::PathExists(paths.idx()) ? "" : "; not cached yet: it stays once read");
  return kExitOk;
}

constexpr OptionSpec kSystem = {
    "--system", "",
    "the system-wide conf directory (/etc/xrootd/client.plugins.d), for every user"};
constexpr OptionSpec kWhere = {"--conf-dir", "D", "the conf directory to write instead",
                               "~/.xrootd/client.plugins.d"};

constexpr OptionSpec kEnableOptions[] = {
    {"--dir", "DIR", "the cache directory (created if needed)"},
    {"--max-size", "SIZE", "the most disk space the cache takes", "100G"},
    {"--url", "PATTERN", "the URLs XrdCl hands to the plug-in", "root://*"},
    kSystem,
    kWhere,
    {"--lib", "PATH", "the plug-in library the conf file names", "libXrdClFerry-5.so beside ferry"},
    {"--shared", "GROUP",
     "a group cache (setgid 2770, files 0660 of GROUP) instead of a private one (0700); each "
     "member is served a cached file only once the origin let them open it"},
    {"--set", "KEY=VALUE", "any other cache setting (src/cache/config.h); repeat for more"},
    {"--encrypt-key", "FILE",
     "encrypt cached files at rest under this master key (32 bytes, mode 0600; make one with "
     "head -c 32 /dev/urandom), or keyring:NAME for the kernel keyring's user key NAME (keyctl "
     "padd user NAME @u < FILE); sets cache_key_file"},
};
constexpr OptionSpec kDisableOptions[] = {kSystem, kWhere};
// --system names the conf directory as --conf-dir does: both would leave one ignored.
constexpr OptionConflict kSystemOrWhere[] = {{"--system", "--conf-dir"}};
constexpr OptionSpec kShowOptions[] = {kCacheDirOption, kConfDirOption, kCacheJsonOption};
constexpr OptionSpec kVerifyOptions[] = {
    kCacheDirOption,
    kConfDirOption,
    {"--repair", "",
     "remove what is bad: an entry's bad pages from its index, an index that does not decode, a "
     "bad replica (safe while other processes use the cache)"},
    kCacheJsonOption,
};
constexpr OptionSpec kEvictOptions[] = {
    kCacheDirOption,
    kConfDirOption,
    {"--older-than", "D", "evict the files last read longer ago than D (30d, 12h, 15m, 60s)"},
    {"--to-size", "S", "evict the least recently read files until the cache holds at most S"},
};
constexpr OptionSpec kClearOptions[] = {
    kCacheDirOption,
    kConfDirOption,
    {"--all", "", "pinned files too"},
    {"--stats", "", "also reset the counters of 'ferry cache stats'"},
};
constexpr OptionSpec kPinOptions[] = {
    kCacheDirOption,
    kConfDirOption,
    {"--unpin", "", "undo a pin: the file may be evicted again"},
};

constexpr CommandSpec kEnable{
    .path = "cache enable",
    .summary =
        "write the XrdCl plug-in conf file: XRootD clients started from now on read through "
        "the cache",
    .synopsis = "--dir DIR",
    .options = kEnableOptions,
    .conflicts = kSystemOrWhere,
    .run = Enable,
};
constexpr CommandSpec kDisable{
    .path = "cache disable",
    .summary = "remove the conf file; the cache directory is kept",
    .options = kDisableOptions,
    .conflicts = kSystemOrWhere,
    .run = Disable,
};
constexpr CommandSpec kStatus{
    .path = "cache status",
    .summary = "whether the plug-in is enabled, the cache directory and its usage",
    .options = kShowOptions,
    .run = ShowStatus,
};
constexpr CommandSpec kLs{
    .path = "cache ls",
    .summary = "the cached files, last read first: size, bytes held, disk use, last read, URL",
    .options = kShowOptions,
    .run = Ls,
};
constexpr CommandSpec kStats{
    .path = "cache stats",
    .summary =
        "hits and misses, bytes from the cache and from origins, replicas, faults, "
        "capacity (and a site proxy's access records and status)",
    .options = kShowOptions,
    .run = Stats,
};
constexpr CommandSpec kVerify{
    .path = "cache verify",
    .summary =
        "check every cached page, fragment and replica against its CRC32C (exit 1 when one "
        "is bad, unless --repair)",
    .options = kVerifyOptions,
    .run = Verify,
};
constexpr CommandSpec kEvict{
    .path = "cache evict",
    .summary =
        "evict the least recently read files; without --older-than or --to-size, down to "
        "the configured size cap",
    .options = kEvictOptions,
    .run = Evict,
};
constexpr CommandSpec kClear{
    .path = "cache clear",
    .summary = "evict every file but those open elsewhere (and the pinned ones, without --all)",
    .options = kClearOptions,
    .run = Clear,
};
constexpr CommandSpec kPin{
    .path = "cache pin",
    .summary = "never evict a file (cached or not yet)",
    .synopsis = "URL",
    .options = kPinOptions,
    .run = Pin,
};

constexpr const CommandSpec* kCacheSubcommands[] = {
    &kEnable,
    &kDisable,
    &kStatus,
    &kLs,
    &kStats,
    &kVerify,
    &kEvict,
    &kClear,
    &kPin,
    &kCacheReplicaCommand,
    &kCacheRekeyCommand,
    &kCacheDoctorCommand,
    &kCacheNetBenchCommand,
};

}  // namespace

Result<cache::Config> ExistingCacheConfig(const Args& args) {
  return ExistingCache(args);
}

constexpr CommandSpec kCacheCommand{
    .path = "cache",
    .summary = "XRootD client cache",
    .notes =
        "The cache directory comes from --dir, else $FERRY_CACHE_DIR, else the enabled conf "
        "file\n(--conf-dir D, else $XRD_PLUGINCONFDIR, else ~/.xrootd/client.plugins.d, "
        "else\n/etc/xrootd/client.plugins.d).",
    .subcommands = kCacheSubcommands,
};

}  // namespace ferry::cli
