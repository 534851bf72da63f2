// ferry cache doctor | netbench: what stands between this account and a working client cache,
// each finding with the command that fixes it (doctor_report.h), and a bounded read-rate probe
// of an origin. The checks follow what XrdCl and the plug-in really do:
// - XrdCl 5.5 (XrdClPlugInManager.cc) reads the *.conf files of /etc/xrootd/client.plugins.d,
//   then of the account's home from the password database (not $HOME), then of
//   $XRD_PLUGINCONFDIR; a later conf for the same URLs replaces an earlier one, and $XRD_PLUGIN
//   replaces them all;
// - the plug-in refuses a cache directory it may not use (dir_access.h), admits nothing below
//   the free-space floor, and reads through (fail-open) in both cases.
#include <dirent.h>
#include <dlfcn.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/strings.h"
#include "base/version.h"
#include "cache/conf_file.h"
#include "cache/config.h"
#include "cache/dir_access.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cache/verify.h"
#include "cli/args.h"
#include "cli/cache_conf.h"
#include "cli/commands.h"
#include "cli/doctor_report.h"
#include "io/byte_source.h"
#include "replica/hooks.h"
#include "xrd/open_source.h"

namespace ferry::cli {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read-only
  return v != nullptr ? std::string(v) : std::string();
}

std::string JoinComma(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

std::string ThisBuild() {
  const std::string git = GitDescription();
  return std::string(Version()) + (git.empty() ? "" : " (" + git + ")");
}

// ---- the plug-in conf XrdCl reads ----

struct PluginConf {
  std::string path;  // the file
  std::map<std::string, std::string> kv;
};

// The directories XrdCl reads, in its order (a later one wins).
std::vector<std::string> XrdClConfDirs() {
  std::vector<std::string> dirs = {cache::kSystemConfDir};
  if (const std::string home = cache::AccountHome(); !home.empty()) {
    dirs.push_back(home + "/.xrootd/client.plugins.d");
  }
  if (const std::string custom = Env("XRD_PLUGINCONFDIR"); !custom.empty()) {
    dirs.push_back(custom);
  }
  return dirs;
}

// Every conf XrdCl would register, in the order it reads them (sorted names per directory).
std::vector<PluginConf> ReadableConfs() {
  std::vector<PluginConf> out;
  for (const std::string& dir : XrdClConfDirs()) {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir.c_str()); d != nullptr) {
      for (int n = 0; n < 1000; ++n) {
        const struct dirent* e = ::readdir(d);  // NOLINT(concurrency-mt-unsafe): own DIR
        if (e == nullptr) {
          break;
        }
        const std::string name = e->d_name;
        if (name.size() > 5 && name.ends_with(".conf")) {
          names.push_back(name);
        }
      }
      ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      std::string path = dir;
      path.append("/").append(name);
      PluginConf c{path, cache::ReadConfFile(path)};
      if (c.kv.count("url") != 0 && c.kv.count("lib") != 0 && c.kv.count("enable") != 0) {
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

bool IsFerryConf(const PluginConf& c) {
  return c.path.ends_with(std::string("/") + cache::kConfFileName)
         || c.kv.at("lib").find("XrdClFerry") != std::string::npos;
}

// Finds the ferry conf in effect; adds the check "conf". Returns false when there is none.
bool CheckConf(DoctorReport& report, PluginConf& found) {
  if (const std::string forced = Env("XRD_PLUGIN"); !forced.empty()) {
    if (forced.find("XrdClFerry") == std::string::npos) {
      report.Add("conf", CheckStatus::kFail,
                 "XRD_PLUGIN=" + forced + " replaces every plug-in conf: the cache is not used",
                 "unset XRD_PLUGIN");
      return false;
    }
    report.Add("conf", CheckStatus::kWarn,
               "XRD_PLUGIN=" + forced + " loads the plug-in without a conf file (its settings "
               "come from FERRY_CACHE_* only)",
               "unset XRD_PLUGIN and run 'ferry cache enable --dir DIR'");
    found.kv["lib"] = forced;
    return true;
  }
  const std::vector<PluginConf> confs = ReadableConfs();
  const PluginConf* ferry = nullptr;
  for (const PluginConf& c : confs) {
    if (IsFerryConf(c)) {
      ferry = &c;
    }
  }
  const std::string home_dir = cache::AccountHome() + "/.xrootd/client.plugins.d";
  if (ferry == nullptr) {
    // The usual mistake: `ferry cache enable` run with $HOME pointing elsewhere (sudo -E, a
    // batch system's scratch home), which XrdCl never reads.
    const std::string env_home = cache::UserConfDir() + "/" + cache::kConfFileName;
    if (cache::UserConfDir() != home_dir && cache::PathExists(env_home)) {
      report.Add("conf", CheckStatus::kFail,
                 env_home + " exists but XrdCl does not read it: it reads " + home_dir
                     + " (your account's home, not $HOME) and $XRD_PLUGINCONFDIR",
                 "export XRD_PLUGINCONFDIR=" + cache::UserConfDir() + "   (or 'ferry cache enable "
                     "--dir DIR --conf-dir " + home_dir + "')");
    } else {
      report.Add("conf", CheckStatus::kFail,
                 "no plug-in conf: XrdCl reads none naming the ferry cache (looked in "
                     + JoinComma(XrdClConfDirs()) + ")",
                 "ferry cache enable --dir DIR");
    }
    return false;
  }
  found = *ferry;
  if (found.kv["enable"] != "true") {
    report.Add("conf", CheckStatus::kFail,
               found.path + " says enable = " + found.kv["enable"] + ": XrdCl loads nothing",
               "ferry cache enable --dir DIR");
    return false;
  }
  for (const PluginConf& c : confs) {
    if (&c > ferry && c.kv.at("url") == found.kv["url"]) {
      report.Add("conf", CheckStatus::kFail,
                 c.path + " is read after " + found.path + " and takes the same URLs ("
                     + c.kv.at("url") + ") for " + c.kv.at("lib"),
                 "remove " + c.path + " or change its url");
      return false;
    }
  }
  report.Add("conf", CheckStatus::kOk, found.path + " (url " + found.kv["url"] + ")")
      .Text("path", found.path)
      .Text("url", found.kv["url"]);
  return true;
}

// ---- the plug-in library ----

// dlopen()s `lib` in a child process (a library whose initialisers crash takes only the child)
// and returns what it says: "V<version>", "N" (no version record), "E<error>".
std::string ProbeLibrary(const std::string& lib) {
  int fds[2];
  if (::pipe(fds) != 0) {
    return "Ecannot make a pipe: " + ErrnoText(errno);
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return "Ecannot fork: " + ErrnoText(errno);
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string answer;
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();  // NOLINT(concurrency-mt-unsafe): one thread
      answer = std::string("E") + (why != nullptr ? why : "dlopen failed");
    } else if (::dlsym(handle, "XrdClGetPlugIn") == nullptr) {
      answer = "Eit has no XrdClGetPlugIn: not an XrdCl client plug-in";
    } else if (auto* version =
                   reinterpret_cast<const char* (*)()>(::dlsym(handle, "FerryXrdClVersion"))) {
      answer = std::string("V") + version();
    } else {
      answer = "N";
    }
    (void)!::write(fds[1], answer.data(), answer.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  const ChildOutput child = CollectChild(pid, fds[0], 20000, 4096);
  if (!child.finished) {
    return "Eloading it did not finish within 20 s";
  }
  if (WIFSIGNALED(child.status)) {
    return "Eloading it crashed the process (signal " + std::to_string(WTERMSIG(child.status))
           + ")";
  }
  return child.out.empty() ? "Eloading it gave no answer" : child.out;
}

void CheckPlugin(DoctorReport& report, const std::string& lib) {
  const std::string fix = "ferry cache enable --dir DIR   (names the plug-in beside this ferry)";
  if (lib.find('/') != std::string::npos && !cache::PathExists(lib)) {
    report.Add("plugin", CheckStatus::kFail, "the plug-in library " + lib + " does not exist", fix);
    return;
  }
  const std::string answer = ProbeLibrary(lib);
  const std::string mine = ThisBuild();
  if (answer[0] == 'E') {
    report.Add("plugin", CheckStatus::kFail, lib + " does not load: " + answer.substr(1), fix);
  } else if (answer[0] == 'N') {
    report.Add(
        "plugin", CheckStatus::kFail,
        lib + " loads but carries no ferry version: a build older than this ferry (" + mine + ")",
        fix);
  } else if (answer.compare(1, std::string::npos, Version(), 0, std::string::npos) != 0
             && !answer.substr(1).starts_with(std::string(Version()) + " ")) {
    report
        .Add("plugin", CheckStatus::kFail,
             lib + " is ferry " + answer.substr(1) + ", this ferry is " + mine
                 + ": the cache format or settings may differ",
             fix)
        .Text("version", answer.substr(1));
  } else if (answer.substr(1) != mine) {
    // The same release from another commit: the formats are the release's, so the cache
    // works; a rebuild of one of the two is likely forgotten.
    report
        .Add("plugin", CheckStatus::kWarn,
             lib + " is ferry " + answer.substr(1) + ", this ferry is " + mine
                 + ": the same release from another commit",
             "rebuild both (cmake --build), or 'ferry cache enable --dir DIR' names this one's")
        .Text("version", answer.substr(1));
  } else {
    report.Add("plugin", CheckStatus::kOk, lib + " loads, ferry " + mine)
        .Text("lib", lib)
        .Text("version", mine);
  }
}

// ---- the cache directory and its index ----

// The nearest existing ancestor of `path`.
std::string ExistingAncestor(std::string path) {
  for (int depth = 0; depth < 256 && !path.empty() && !cache::PathExists(path); ++depth) {
    const size_t slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return path.empty() ? "/" : path;
}

// Adds "dir"; false when the cache cannot be used as it is (nothing more to look at).
bool CheckDir(DoctorReport& report, const cache::Config& config) {
  const std::string& dir = config.dir;
  const std::string fix_enable = "ferry cache enable --dir " + dir
                                 + (config.shared.empty() ? "" : " --shared " + config.shared);
  if (!cache::PathExists(dir)) {
    const std::string parent = ExistingAncestor(dir);
    if (::access(parent.c_str(), W_OK | X_OK) != 0) {
      report.Add(
          "dir", CheckStatus::kFail,
          dir + " does not exist and you cannot create it (" + parent + " is not writable for you)",
          "ferry cache enable --dir DIRECTORY-OF-YOURS");
    } else {
      report.Add("dir", CheckStatus::kWarn, dir + " does not exist yet: the plug-in creates it",
                 fix_enable);
    }
    return false;
  }
  const cache::DirAccess access = cache::InspectCacheDir(dir, config.shared);
  if (!access.problem.empty()) {
    report.Add("dir", CheckStatus::kFail, access.problem + "; meanwhile reads bypass the cache",
               fix_enable);
    return false;
  }
  if (!cache::IsCacheDir(dir)) {
    report.Add("dir", CheckStatus::kWarn,
               dir + " is not a ferry cache yet (no marker): the plug-in makes it one if it is "
                     "empty, and refuses it otherwise",
               fix_enable);
    return false;
  }
  report
      .Add("dir", CheckStatus::kOk,
           dir + ": " + cache::SharingName(access.sharing) + " cache, mode "
               + OctalMode(access.mode) + ", group " + access.group_name)
      .Text("path", dir)
      .Text("mode", OctalMode(access.mode))
      .Text("sharing", cache::SharingName(access.sharing))
      .Value("owner_uid", access.owner);
  return true;
}

// Decodes the index of the most recently read entries (at most 200) and verifies every page of
// a few of them (at most 8 entries, 256 MiB, 3 s).
void CheckIndex(DoctorReport& report, const cache::Config& config) {
  constexpr size_t kDecode = 200;
  constexpr size_t kVerify = 8;
  constexpr uint64_t kVerifyBytes = 256ull << 20;
  constexpr double kVerifyMs = 3000;
  auto entries = cache::ScanEntries(config.dir);
  if (!entries) {
    report.Add("index", CheckStatus::kFail, entries.error().ToString(),
               "ferry cache verify --repair --dir " + config.dir);
    return;
  }
  std::sort(entries->begin(), entries->end(),
            [](const auto& a, const auto& b) { return a.last_read_ns > b.last_read_ns; });
  uint64_t decoded = 0, bad_index = 0, verified = 0, bad_entries = 0, pages = 0, bytes = 0;
  std::string first_bad;
  const Clock::time_point start = Clock::now();
  for (const cache::EntryListing& e : *entries) {
    if (decoded >= kDecode) {
      break;
    }
    if (!e.has_index) {
      continue;
    }
    ++decoded;
    auto index = cache::LoadIndex(e.paths.idx());
    if (!index) {
      if (index.error().code() != ErrorCode::kNotFound) {
        ++bad_index;
        first_bad = first_bad.empty() ? e.key + ": " + index.error().message() : first_bad;
      }
      continue;
    }
    if (verified >= kVerify || bytes + e.disk_bytes > kVerifyBytes || MsSince(start) > kVerifyMs) {
      continue;
    }
    auto r = cache::VerifyEntry(e.paths, /*repair=*/false, static_cast<int>(config.lock_timeout_ms),
                                /*key=*/nullptr, replica::Hooks().get());
    if (!r) {
      continue;  // evicted meanwhile, or locked for longer than a reader would wait
    }
    ++verified;
    bytes += e.disk_bytes;
    pages += r->pages_ok + r->pages_bad;
    if (r->bad()) {
      ++bad_entries;
      first_bad = first_bad.empty()
                      ? e.key + " (" + r->url + "): " + std::to_string(r->pages_bad) + " bad pages"
                      : first_bad;
    }
  }
  const std::string summary = std::to_string(decoded) + " of " + std::to_string(entries->size())
                              + " indexes decoded, " + std::to_string(verified) + " entries ("
                              + std::to_string(pages) + " pages) verified";
  Check& c = bad_index + bad_entries > 0
                 ? report.Add("index", CheckStatus::kFail,
                              summary + "; " + std::to_string(bad_index) + " bad indexes, "
                                  + std::to_string(bad_entries) + " bad entries, first " + first_bad
                                  + " (bad pages are read from the origin)",
                              "ferry cache verify --repair --dir " + config.dir)
                 : report.Add("index", CheckStatus::kOk, summary);
  c.Value("entries", static_cast<double>(entries->size()))
      .Value("indexes_decoded", static_cast<double>(decoded))
      .Value("bad_indexes", static_cast<double>(bad_index))
      .Value("entries_verified", static_cast<double>(verified))
      .Value("bad_entries", static_cast<double>(bad_entries));
}

// Encrypted entries the configured key (or its lack) does not open are read from the origin:
// say so, with the key id they need.
void CheckEncryption(DoctorReport& report, const cache::Config& config) {
  std::optional<cache::MasterKey> key;
  if (!config.key_file.empty()) {
    auto loaded = cache::MasterKey::Load(config.key_file);
    if (!loaded) {
      report.Add("encryption", CheckStatus::kFail,
                 loaded.error().message() + ": the plug-in reads every file from the origin",
                 "chmod 600 " + config.key_file + " (a 32-byte key of this account)");
      return;
    }
    key = std::move(*loaded);
  }
  auto entries = cache::ScanEntries(config.dir);
  uint64_t encrypted = 0, locked = 0, plain = 0;
  std::string needed;
  for (size_t i = 0; entries && i < entries->size() && i < 200; ++i) {
    auto index = cache::LoadIndex((*entries)[i].paths.idx());
    if (!index) {
      continue;
    }
    encrypted += index->encrypted() ? 1u : 0u;
    plain += index->encrypted() ? 0u : 1u;
    if (index->encrypted() && (!key || key->id() != index->info().key_id)) {
      ++locked;
      needed = cache::KeyIdHex(index->info().key_id);
    }
  }
  const std::string have = key ? "master key " + cache::KeyIdHex(key->id()) : "no cache_key_file";
  if (locked > 0) {
    report.Add("encryption", CheckStatus::kFail,
               std::to_string(locked) + " entries are encrypted under master key " + needed
                   + " and this configuration has " + have
                   + ": they are read from the origin, never from the cache",
               "ferry cache enable --dir " + config.dir + " --encrypt-key FILE-OF-KEY-" + needed);
  } else {
    report.Add("encryption", CheckStatus::kOk,
               key ? have + ": " + std::to_string(encrypted) + " entries encrypted, "
                         + std::to_string(plain) + " plaintext (re-encrypted when next opened)"
                   : "off");
  }
}

// ---- the origin ----

struct Probe {
  double open_ms = 0;       // first open: connection, login, open and stat
  double reopen_ms = 0;     // second open on the same connection: open and stat
  double rtt_ms = 0;        // fastest of five 1-byte reads
  double read_seconds = 0;  // of the rate probe
  uint64_t read_bytes = 0;  // of the rate probe
  uint64_t size = 0;
  double mb_per_s() const {
    return read_seconds > 0 ? static_cast<double>(read_bytes) / read_seconds / 1e6 : 0;
  }
};

// Opens `url` twice without client plug-ins (the origin itself, not the cache), times five
// 1-byte reads, then reads the file in order (wrapping around) in `block` bytes until
// `max_seconds` or `max_bytes`.
Result<Probe> ProbeOrigin(const std::string& url,
                          double max_seconds,
                          uint64_t max_bytes,
                          uint64_t block) {
  xrd::OpenOptions options;
  options.enable_plugins = false;
  options.timeout_seconds = 15;
  Probe p;
  Clock::time_point start = Clock::now();
  auto first = FERRY_TRY(xrd::OpenSource(url, options));
  p.open_ms = MsSince(start);
  start = Clock::now();
  auto source = FERRY_TRY(xrd::OpenSource(url, options));
  p.reopen_ms = MsSince(start);
  first.reset();
  p.size = source->size();
  if (p.size == 0) {
    return p;
  }
  uint8_t byte = 0;
  p.rtt_ms = 1e9;
  for (int i = 0; i < 5; ++i) {
    start = Clock::now();
    FERRY_TRY(source->ReadAt(0, std::span<uint8_t>(&byte, 1)));
    p.rtt_ms = std::min(p.rtt_ms, MsSince(start));
  }
  std::vector<uint8_t> buf(static_cast<size_t>(block));
  uint64_t offset = 0;
  start = Clock::now();
  for (int n = 0; n < 100000 && p.read_bytes < max_bytes && MsSince(start) < max_seconds * 1000;
       ++n) {
    const uint64_t want = std::min({block, p.size - offset, max_bytes - p.read_bytes});
    FERRY_TRY(source->ReadAt(offset, std::span<uint8_t>(buf.data(), static_cast<size_t>(want))));
    p.read_bytes += want;
    offset = offset + want == p.size ? 0 : offset + want;
  }
  p.read_seconds = MsSince(start) / 1000;
  return p;
}

void AddProbeValues(Check& c, const Probe& p) {
  c.Value("open_ms", p.open_ms)
      .Value("login_ms", std::max(0.0, p.open_ms - p.reopen_ms))
      .Value("stat_ms", p.reopen_ms)
      .Value("rtt_ms", p.rtt_ms)
      .Value("size_bytes", static_cast<double>(p.size))
      .Value("read_bytes", static_cast<double>(p.read_bytes))
      .Value("read_seconds", p.read_seconds)
      .Value("read_mb_per_s", p.mb_per_s());
}

std::string ProbeText(const Probe& p) {
  return "connect+login " + Fixed(std::max(0.0, p.open_ms - p.reopen_ms), 1) + " ms, open+stat "
         + Fixed(p.reopen_ms, 1) + " ms, round trip " + Fixed(p.rtt_ms, 2) + " ms, read "
         + HumanBytes(static_cast<double>(p.read_bytes)) + " in " + Fixed(p.read_seconds, 2)
         + " s = " + Fixed(p.mb_per_s(), 1) + " MB/s (one stream, no cache)";
}

std::string OriginFix(const std::string& url) {
  std::string host = url;
  if (const size_t scheme = host.find("://"); scheme != std::string::npos) {
    host = host.substr(scheme + 3);
  }
  host = host.substr(0, host.find('/'));
  return "check that the origin runs and serves the file: xrdfs " + host + " stat "
         + url.substr(std::min(url.size(), url.find("//", url.find("://") + 3) + 1));
}

void CheckOrigin(DoctorReport& report, const std::string& url) {
  auto probe = ProbeOrigin(url, 2.0, 64ull << 20, 8ull << 20);
  if (!probe) {
    report.Add("origin", CheckStatus::kFail, url + ": " + probe.error().ToString(), OriginFix(url));
    return;
  }
  AddProbeValues(report.Add("origin", CheckStatus::kOk, url + ": " + ProbeText(*probe)), *probe);
}

int Doctor(const Args& args) {
  if (args.positional().size() > 1) {
    return UsageError("cache doctor takes at most one URL", args.spec());
  }
  DoctorReport report("ferry cache doctor");
  PluginConf conf;
  if (CheckConf(report, conf) && conf.kv.count("lib") != 0) {
    CheckPlugin(report, conf.kv["lib"]);
  }
  auto config = cache::ConfigFromMap(conf.kv, /*use_env=*/true, replica::Hooks().get());
  if (config && args.Get("--dir")) {
    config->dir = *args.Get("--dir");
  }
  if (!config) {
    report.Add("settings", CheckStatus::kFail, config.error().message(),
               "fix it in " + (conf.path.empty() ? std::string("FERRY_CACHE_*") : conf.path));
  } else if (config->dir.empty()) {
    report.Add("dir", CheckStatus::kFail, "no cache directory: the plug-in reads through",
               "ferry cache enable --dir DIR");
  } else {
    const bool usable = CheckDir(report, *config);
    CheckDiskSpace(report, ExistingAncestor(config->dir), config->max_bytes, config->min_free_bytes,
                   "ferry cache enable --dir " + config->dir + " --set ");
    if (usable) {
      CheckIndex(report, *config);
      CheckEncryption(report, *config);
    }
  }
  if (!args.positional().empty()) {
    CheckOrigin(report, args.positional()[0]);
  }
  return report.Print(args.Has("--json"));
}

int NetBench(const Args& args) {
  if (args.positional().size() != 1) {
    return UsageError("cache netbench needs one URL", args.spec());
  }
  auto seconds = ParseUint(args.GetOr("--seconds", "3"));
  auto bytes = ParseSize(args.GetOr("--max-bytes", "256M"));
  auto block = ParseSize(args.GetOr("--block", "8M"));
  if (!seconds || *seconds == 0 || *seconds > 60) {
    return UsageError("--seconds: expected 1..60", args.spec());
  }
  if (!bytes || *bytes == 0 || !block || *block == 0 || *block > (64ull << 20)) {
    return UsageError("--max-bytes and --block: expected sizes (--block at most 64M)", args.spec());
  }
  const std::string& url = args.positional()[0];
  auto probe = ProbeOrigin(url, static_cast<double>(*seconds), *bytes, *block);
  if (!probe) {
    std::fprintf(stderr, "ferry: %s: %s\n  fix: %s\n", url.c_str(),
                 probe.error().ToString().c_str(), OriginFix(url).c_str());
    return kExitBadInput;
  }
  if (args.Has("--json")) {
    JsonWriter w;
    w.BeginObject().Field("url", url).Field("format", 1);
    w.Field("open_ms", probe->open_ms)
        .Field("login_ms", std::max(0.0, probe->open_ms - probe->reopen_ms))
        .Field("stat_ms", probe->reopen_ms)
        .Field("rtt_ms", probe->rtt_ms)
        .Field("size_bytes", probe->size)
        .Field("read_bytes", probe->read_bytes)
        .Field("read_seconds", probe->read_seconds)
        .Field("read_mb_per_s", probe->mb_per_s());
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("%s: %s\n", url.c_str(), ProbeText(*probe).c_str());
  }
  return kExitOk;
}

constexpr OptionSpec kDoctorOptions[] = {
    {"--dir", "DIR", "the cache directory to check", "the conf file's"},
    {"--json", "", "print one JSON document (docs/doctor.md)"},
};

constexpr OptionSpec kNetBenchOptions[] = {
    {"--seconds", "S", "read for at most S seconds (1..60)", "3"},
    {"--max-bytes", "SIZE", "read at most SIZE bytes", "256M"},
    {"--block", "SIZE", "bytes per read request (at most 64M)", "8M"},
    {"--json", "", "print one JSON document (docs/doctor.md)"},
};

}  // namespace

constexpr CommandSpec kCacheDoctorCommand{
    .path = "cache doctor",
    .summary =
        "check this account's client cache: the plug-in conf XrdCl reads, the plug-in library, "
        "the cache directory, its space, inodes and index, and with URL the origin",
    .synopsis = "[URL]",
    .options = kDoctorOptions,
    .notes =
        "One line per check: OK, WARN or FAIL, and under a problem the command that fixes it.\n"
        "Exit status: 0 when nothing failed (warnings allowed), 1 when something makes the\n"
        "cache read through or fail (no conf, a plug-in that does not load or is of another\n"
        "build, a directory it may not use, no space or inodes, a bad index, an origin that\n"
        "does not answer), 2 on a usage error. --json: docs/doctor.md.",
    .run = Doctor,
};

constexpr CommandSpec kCacheNetBenchCommand{
    .path = "cache netbench",
    .summary =
        "measure an origin without the cache: login and open+stat time, round trip, and the "
        "read rate of one stream (bounded in time and bytes)",
    .synopsis = "URL",
    .options = kNetBenchOptions,
    .run = NetBench,
};

}  // namespace ferry::cli
