// ferry proxy config|run: ferry's site cache inside a stock xrootd server (the library
// libXrdFerryProxy-5.so, src/plugin/proxy). `config` prints a complete xrootd configuration;
// `run` writes it, prepares the cache directory for the account xrootd drops to, and runs
// xrootd in the foreground (with cmsd beside it when the proxy joins a cluster), supervised:
// restarted at once when it crashes (proxy_supervisor.h), with ferry's patched XRootD server
// library when it matches the installed version (proxy_xrootd_build.h).
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/self_exe.h"
#include "base/strings.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cli/args.h"
#include "cli/cmd_proxy_security.h"
#include "cli/commands.h"
#include "cli/proxy_metrics.h"
#include "cli/proxy_supervisor.h"
#include "cli/proxy_xrootd_build.h"
#include "plugin/proxy/proxy_config.h"

namespace ferry::cli {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') {
    return "localhost";
  }
  return buf;
}

// The proxy library beside the binary (base/self_exe.h), named the way xrootd's plug-in loader
// wants it: without the "-5" it adds itself.
std::string ProxyLibDefault() {
  const std::string found = FindLibrary("libXrdFerryProxy-5.so");
  const std::string path =
      found.empty()
          ? (LibraryDirs().empty() ? "" : LibraryDirs().front() + "/libXrdFerryProxy-5.so")
          : found;
  return path.substr(0, path.size() - std::string("-5.so").size()) + ".so";
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') {
    return path;
  }
  char cwd[4096] = {};
  return (::getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) : std::string(".")) + "/" + path;
}

struct Plan {
  std::string config;                  // the xrootd configuration text
  std::string admin;                   // xrootd's admin and pid directory
  std::string dir;                     // cache directory (the first --dir: status file, access log)
  std::vector<std::string> data_dirs;  // the other --dir: more cache disks
  int port = 0;                        // the xroot port
  bool cluster = false;
  // Files the configuration names (keytabs), written into the admin directory, mode 0600.
  std::vector<std::pair<std::string, std::string>> files;
};

// The default origin (the --origin without a PREFIX=) and the routes, in the order given.
Result<std::pair<std::string, std::vector<std::string>>> Origins(const Args& a) {
  std::string main;
  std::vector<std::string> routes;
  for (const std::string& o : a.All("--origin")) {
    if (o.find('=') != std::string::npos) {
      routes.push_back(o);
    } else if (main.empty()) {
      main = o;
    } else {
      std::string message = "--origin given twice without a PREFIX= (" + main;
      message.append(", ").append(o).append("): give other origins as --origin /PREFIX=HOST:PORT");
      return InvalidArgumentError(std::move(message));
    }
  }
  if (main.empty() && !routes.empty()) {
    return InvalidArgumentError("--origin " + routes.front()
                                + ": an --origin HOST:PORT for every other path is needed too");
  }
  return std::make_pair(main, routes);
}

Result<Plan> MakePlan(const Args& a) {
  const auto [main_origin, routes] = FERRY_TRY(Origins(a));
  const std::optional<std::string> origin =
      main_origin.empty() ? std::nullopt : std::optional<std::string>(main_origin);
  const auto port = a.Get("--port");
  const auto dir = a.Get("--dir");
  if (!origin || !port || !dir) {
    return InvalidArgumentError("--origin, --port and --dir are required");
  }
  auto port_number = ParseUint(*port);
  if (!port_number || *port_number == 0 || *port_number > 65535) {
    return InvalidArgumentError("--port '" + *port + "': expected 1..65535");
  }
  Plan p;
  p.port = static_cast<int>(*port_number);
  // The first --dir is the home (a.Get gives the last one).
  p.dir = Absolute(a.All("--dir").front());
  for (const std::string& d : a.All("--dir")) {
    if (std::string abs = Absolute(d); abs != p.dir) {
      p.data_dirs.push_back(std::move(abs));
    }
  }
  p.admin = Absolute(a.GetOr("--admin", "/var/tmp/ferry-proxy-" + *port));
  const std::string host = a.GetOr("--host", HostName());
  const std::string lib = a.GetOr("--lib", ProxyLibDefault());
  const auto manager = a.Get("--manager");
  p.cluster = manager.has_value();
  std::string& c = p.config;
  c += "# ferry site proxy (written by `ferry proxy config`): root://" + host + ":" + *port
       + "//PATH reads root://" + *origin + "//PATH through the ferry cache in " + p.dir + "\n";
  c += "xrd.port " + *port + "\n";
  c += "all.export /\n";
  // XrdXrootd hands a client's vector read to the file system in pieces of at most this many
  // bytes, one after another (2 MiB by default): through a cold cache each piece would wait a
  // round trip to the origin. 16 MiB is the cache's own request size.
  c += "xrd.buffers maxbsz 16m\n";
  // Reads and page reads are served asynchronously in segments of this size, at most 8 per
  // connection at once: with the 64 KiB default a sequential reader (xrdcp) through a cold
  // cache got 8 x 64 KiB per round trip.
  c += "xrootd.async segsize 2m\n";
  c += "all.adminpath " + p.admin + "\n";
  c += "all.pidpath " + p.admin + "\n";
  if (manager) {
    // A data server of an xrootd + cmsd cluster: the redirector at --manager sends clients here.
    c += "all.role server\n";
    c += "all.manager " + *manager + "\n";
  }
  c += "# The storage plug-in (reads through the cache) and the file-system head above XrdOfs\n";
  c += "# (redirects each open to this proxy under a synthetic user: one connection per open).\n";
  c += "ofs.osslib " + lib + "\n";
  c += "xrootd.fslib " + lib + " default\n";
  c += "xrootd.trace emsg login\n";
  SecurityPlan security = FERRY_TRY(MakeSecurityPlan(a, p.admin));
  c += security.config;
  p.files = std::move(security.files);
  c += "ferry.origin " + *origin + "\n";
  for (const std::string& route : routes) {
    c += "ferry.origin " + route + "\n";  // validated by the proxy's parser (proxy_config.h)
  }
  c += "ferry.dir " + p.dir + "\n";
  if (!p.data_dirs.empty()) {
    // More cache disks: one page store on each (the proxy's disk_set.h).
    c += "ferry.data_dirs";
    for (const std::string& d : p.data_dirs) {
      c += " " + d;
    }
    c += "\n";
  }
  if (!a.Has("--no-redirect")) {
    c += "ferry.self " + host + ":" + *port + "\n";
  }
  if (auto v = a.Get("--max-size")) {
    c += "ferry.max_size " + *v + "\n";
  }
  c += "ferry.channels " + a.GetOr("--channels", "1") + "\n";
  if (auto v = a.Get("--lookahead")) {
    c += "ferry.lookahead " + *v + "\n";
  }
  if (auto v = a.Get("--copy-cache-fraction")) {
    c += "ferry.copy_cache_fraction " + *v + "\n";
  }
  for (const std::string& kv : a.All("--set")) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--set '" + kv + "': expected KEY=VALUE");
    }
    c += "ferry." + kv.substr(0, eq) + " " + kv.substr(eq + 1) + "\n";
  }
  // The library reads these same lines: refuse what it would refuse.
  FERRY_TRY_CTX(proxy::ParseProxyConfig(c), "the generated configuration");
  if (p.cluster && !proxy::ValidHostPort(*manager)) {
    return InvalidArgumentError("--manager '" + *manager + "': expected HOST:PORT");
  }
  return p;
}

// chown -R of a tree to the account xrootd runs as (only entries that are not theirs yet).
uid_t g_uid = 0;
gid_t g_gid = 0;
int ChownEntry(const char* path, const struct stat* st, int /*flag*/, struct FTW* /*ftw*/) {
  if (st->st_uid != g_uid || st->st_gid != g_gid) {
    (void)::lchown(path, g_uid, g_gid);
  }
  return 0;
}

Status GiveTo(const std::string& path, uid_t uid, gid_t gid) {
  g_uid = uid;
  g_gid = gid;
  if (::nftw(path.c_str(), ChownEntry, 32, FTW_PHYS) != 0) {
    return IoError("cannot hand " + path + " to uid " + std::to_string(uid), errno);
  }
  return OkStatus();
}

Status MakeDirs(const std::string& path) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos);
    const std::string partial = path.substr(0, pos);
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return IoError("cannot create " + partial, errno);
    }
    if (pos != std::string::npos) {
      ++pos;
    }
  }
  return OkStatus();
}

// Writes the files the configuration names (keytabs: readable by their owner only).
Status WriteFiles(const Plan& plan) {
  if (plan.files.empty()) {
    return OkStatus();  // `config` without security options touches nothing
  }
  FERRY_TRY(MakeDirs(plan.admin));
  for (const auto& [path, content] : plan.files) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      return IoError("cannot write " + tmp, errno);
    }
    const bool written =
        ::fchmod(fd, 0600) == 0
        && ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    const int saved = errno;
    if (::close(fd) != 0 || !written || ::rename(tmp.c_str(), path.c_str()) != 0) {
      return IoError("cannot write " + path, written ? errno : saved);
    }
  }
  return OkStatus();
}

int Config(const Plan& plan) {
  // The keytab the configuration names must exist for xrootd to start: written now.
  if (Status st = WriteFiles(plan); !st) {
    return ReportError(st.error());
  }
  for (const auto& file : plan.files) {
    // `run` hands the admin directory to xrootd's account itself; after `config` the
    // operator does (xrootd refuses a keytab others can read, and cannot read root's).
    std::fprintf(stderr, "ferry proxy: wrote %s (mode 0600): chown it to xrootd's account\n",
                 file.first.c_str());
  }
  std::fputs(plan.config.c_str(), stdout);
  return kExitOk;
}

// xrootd's environment: ferry's patched server library first on its library path, and the
// connection guard preloaded beside whatever the caller preloads (proxy_supervisor.h).
std::vector<std::string> XrootdEnvironment(const XrootdBuild& build) {
  std::vector<std::string> env;
  auto current = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  if (build.patched()) {
    const std::string path = current("LD_LIBRARY_PATH");
    env.push_back("LD_LIBRARY_PATH=" + build.patched_dir + (path.empty() ? "" : ":" + path));
  }
  if (const std::string guard = FindLibrary("libferry_xrd_guard.so"); !guard.empty()) {
    const std::string preload = current("LD_PRELOAD");
    env.push_back("LD_PRELOAD=" + (preload.empty() ? guard : preload + " " + guard));
  }
  return env;
}

// The data dirs prepared (marker written). One that cannot be prepared does not stop the
// proxy: it starts without it (out of service, probed every ferry.disk_retry_s), as it would
// lose it while running.
std::vector<std::string> PrepareDataDirs(const Plan& plan) {
  std::vector<std::string> usable;
  for (const std::string& d : plan.data_dirs) {
    if (Status st = cache::PrepareCacheDir(d); !st) {
      std::fprintf(stderr, "ferry proxy: cache disk %s left out: %s\n", d.c_str(),
                   st.error().ToString().c_str());
    } else {
      usable.push_back(d);
    }
  }
  return usable;
}

int Run(const Args& options, const Plan& plan) {
  const std::string user = options.GetOr("--user", "xrootd");
  const bool root = ::geteuid() == 0;
  // getpwnam_r: getpwnam returns a static buffer that any other lookup overwrites.
  struct passwd pw_entry = {};
  std::vector<char> pw_strings(16384);
  struct passwd* pw = nullptr;
  const int pw_rc =
      root ? ::getpwnam_r(user.c_str(), &pw_entry, pw_strings.data(), pw_strings.size(), &pw) : 0;
  if (pw_rc != 0) {
    return ReportError(IoError("cannot look up account '" + user + "'", pw_rc));
  }
  if (root && pw == nullptr) {
    return ReportError(InvalidArgumentError("no account '" + user + "' for xrootd to run as"));
  }
  // The cache directories get their marker now, so that the library finds a ferry cache on
  // each: a disk that later loses it is taken for removed, and the library never makes it again.
  for (const Status& st :
       {cache::PrepareCacheDir(plan.dir), MakeDirs(plan.admin), WriteFiles(plan)}) {
    if (!st) {
      return ReportError(st.error());
    }
  }
  const std::vector<std::string> usable = PrepareDataDirs(plan);
  const std::string cfg = Absolute(options.GetOr("--config-out", plan.admin + "/xrootd.cfg"));
  {
    std::ofstream out(cfg);
    out << plan.config;
    if (!out.flush()) {
      return ReportError(IoError("cannot write " + cfg, errno));
    }
  }
  // xrootd refuses to run as root: it drops to `user` (-R), who must own what it writes (the
  // cache and the admin directory; a --log file's directory too: xrootd keeps a lock file
  // there and rotates the log daily).
  std::vector<std::string> owned = {plan.dir, plan.admin};
  owned.insert(owned.end(), usable.begin(), usable.end());
  if (root) {
    for (const std::string& path : owned) {
      if (Status st = GiveTo(path, pw->pw_uid, pw->pw_gid); !st) {
        return ReportError(st.error());
      }
    }
  }
  auto command = [&](const std::string& program) {
    std::vector<std::string> args = {program, "-c", cfg, "-s", plan.admin + "/" + program + ".pid"};
    if (root) {
      args.insert(args.end(), {"-R", user});
    }
    if (auto log = options.Get("--log")) {
      args.insert(args.end(), {"-l", Absolute(*log) + (program == "cmsd" ? ".cmsd" : "")});
    }
    return args;
  };
  const XrootdBuild build = FindXrootdBuild(options.GetOr("--xrootd-lib", "auto"));
  std::fprintf(stderr, "ferry proxy: %s\n", build.Describe().c_str());
  SupervisorOptions s;
  s.xrootd_argv = command("xrootd");
  if (plan.cluster) {
    s.cmsd_argv = command("cmsd");
  }
  s.xrootd_env = XrootdEnvironment(build);
  s.cmsd_env = XrootdEnvironment(XrootdBuild{});  // the guard's lifeline, the system's library
  if (!FindLibrary("libferry_xrd_guard.so").empty()) {
    s.guard_map = plan.admin + "/guard.map";
  }
  s.cache_dir = plan.dir;
  if (auto key = options.Get("--encrypt-key")) {
    // Read here, as the user who runs ferry (xrootd's copy in the admin directory is not ours).
    auto loaded = cache::MasterKey::Load(*key);
    if (!loaded) {
      return ReportError(loaded.error());
    }
    s.master_key = std::make_shared<const cache::MasterKey>(std::move(*loaded));
  }
  s.data_dirs = usable;
  s.listen_ports.push_back(plan.port);
  if (auto https = options.Get("--https")) {
    if (auto n = ParseUint(*https)) {
      s.listen_ports.push_back(static_cast<int>(*n));
    }
  }
  s.owner_uid = root ? pw->pw_uid : ::getuid();
  s.owner_gid = root ? pw->pw_gid : ::getgid();
  for (auto [flag, field] :
       {std::pair{"--refuse-after", &s.refuse_after}, std::pair{"--refuse-for", &s.refuse_for_s}}) {
    if (auto v = options.Get(flag)) {
      auto n = ParseUint(*v);
      if (!n || *n > 1000000) {
        return UsageError(std::string(flag) + " '" + *v + "': expected a count", options.spec());
      }
      *field = static_cast<int>(*n);
    }
  }
  return Supervise(s);
}

int PrintConfig(const Args& args) {
  auto plan = MakePlan(args);
  return plan ? Config(*plan) : UsageError(plan.error().ToString(), args.spec());
}

int RunXrootd(const Args& args) {
  auto plan = MakePlan(args);
  return plan ? Run(args, *plan) : UsageError(plan.error().ToString(), args.spec());
}

// node_exporter's textfile collector reads every *.prom file of its directory whenever it is
// scraped: the file is written beside and renamed, so that it never sees half of it.
int PrintMetrics(const Args& args) {
  const auto dir = args.Get("--dir");
  if (!dir) {
    return UsageError("--dir is required", args.spec());
  }
  auto text = ProxyMetricsText(*dir);
  if (!text) {
    return ReportError(text.error());
  }
  const auto out = args.Get("--out");
  if (!out) {
    std::fputs(text->c_str(), stdout);
    return kExitOk;
  }
  const std::string tmp = *out + ".tmp";
  {
    std::ofstream f(tmp);
    f << *text;
    if (!f.flush()) {
      return ReportError(IoError("cannot write " + tmp, errno));
    }
  }
  if (::rename(tmp.c_str(), out->c_str()) != 0) {
    return ReportError(IoError("cannot rename " + tmp + " to " + *out, errno));
  }
  return kExitOk;
}

constexpr OptionSpec kConfigOptions[] = {
    {"--origin", "[/PREFIX=]HOST:PORT",
     "the origin: the proxy serves root://HOST:PORT//path; repeat with /PREFIX= for paths "
     "under PREFIX that another origin holds (the longest prefix wins; each origin gets its "
     "own limit of requests in flight, so one that stalls does not stall the others)"},
    {"--port", "P", "the port the proxy listens on"},
    {"--dir", "DIR",
     "the cache directory; repeat for more cache disks (one page store on each, new files "
     "placed by free space and load, a failing disk taken out of service); the first holds "
     "the status file and the access log"},
    {"--max-size", "S", "the most disk space the cache takes (on each disk)"},
    {"--channels", "N", "connections to the origin", "1"},
    {"--host", "NAME",
     "the name clients reach the proxy by; opens are redirected to it under synthetic user names",
     "this host's name"},
    {"--admin", "DIR", "xrootd's admin and pid directory", "/var/tmp/ferry-proxy-P"},
    {"--manager", "HOST:PORT",
     "the cmsd of a redirector: the proxy joins its cluster as a data server (cmsd beside xrootd)"},
    {"--no-redirect", "", "no redirect of opens to the proxy itself"},
    {"--lookahead", "N", "read-ahead of the files served (0: off)", "8"},
    {"--copy-cache-fraction", "F",
     "share of a file (0..1) a whole-file copy (xrdcp) leaves in the cache; the rest is served "
     "through uncached (1: copies cached whole)",
     "0.25"},
    {"--encrypt-key", "FILE",
     "encrypt the cache at rest under this master key (32 bytes, or keyring:NAME for the "
     "key NAME in the keyring of the user who runs this; copied into the admin directory for "
     "xrootd's account, mode 0600, as the keytabs are)"},
    {"--lib", "PATH", "the proxy library", "libXrdFerryProxy.so beside ferry"},
    {"--set", "KEY=VALUE",
     "a ferry.KEY VALUE line (any key of the proxy or the client cache); repeat for more"},
    {"--auth", "PROTO[:ARG],...",
     "clients must authenticate with one of these XRootD protocols: sss:KEYTAB, unix, gsi[:ARGS], "
     "ztn[:ARGS] (sec.protocol parameters; gsi alone takes --cert, --key, --ca-dir, --gridmap)"},
    {"--authdb", "FILE",
     "XRootD authorisation database checked on every open, stat and listing before the cache "
     "(needs --auth or --https)"},
    {"--scitokens", "FILE",
     "bearer tokens authorise by their scopes (XrdAccSciTokens configuration FILE: issuers, "
     "base paths, audience), before the authdb; over HTTPS in the Authorization header"},
    {"--origin-credentials", "sss:KEYTAB|token:FILE|x509:PROXYFILE",
     "the proxy's own identity at the origin: a keytab of one key, or a bearer token file (ztn "
     "over TLS) or X.509 proxy (gsi) read anew whenever an origin channel authenticates; "
     "required with --auth sss"},
    {"--origin-ca-dir", "DIR", "CA certificates that verify the origin's TLS or host certificate"},
    {"--https", "PORT", "also serve HTTPS (XrdHttp) on this port, from the same cache"},
    {"--cert", "FILE", "the server certificate (PEM) for --https, ztn and gsi"},
    {"--key", "FILE", "its private key (PEM)"},
    {"--ca-dir", "DIR", "CA certificates (hashed) for client certificates (HTTPS, gsi)"},
    {"--gridmap", "FILE",
     "HTTPS and gsi: map verified client certificates' DNs to user names (\"/CN=alice\" alice), "
     "for the authdb (needs --ca-dir; gsi refuses DNs it does not map)"},
};

// run takes config's options and its own.
constexpr auto kRunOptions = JoinOptions(
    kConfigOptions,
    {
        {"--user", "NAME", "the account xrootd drops to when started as root", "xrootd"},
        {"--log", "FILE", "xrootd's log file (cmsd's: FILE.cmsd)", "stderr"},
        {"--config-out", "FILE", "where the configuration is written", "xrootd.cfg in --admin"},
        {"--xrootd-lib", "auto|system|DIR",
         "XRootD's server library: ferry's patched build when it matches the installed xrootd "
         "(auto), the system's, or the folder of another patched libXrdServer.so.3",
         "auto"},
        {"--refuse-after", "N",
         "refuse a peer's connections after N crashes of xrootd came from its requests within "
         "10 minutes (0: never)",
         "3"},
        {"--refuse-for", "SECONDS", "how long such a peer is refused", "600"},
    });

constexpr CommandSpec kConfig{
    .path = "proxy config",
    .summary =
        "print the xrootd configuration of a ferry site proxy serving root://NAME:P//path "
        "from root://HOST:PORT//path through the cache in DIR",
    .synopsis = "--origin HOST:PORT --port P --dir DIR",
    .options = kConfigOptions,
    .run = PrintConfig,
};

constexpr CommandSpec kRun{
    .path = "proxy run",
    .summary =
        "write that configuration and run xrootd in the foreground (and cmsd, with "
        "--manager), restarting it at once when it crashes",
    .synopsis = "--origin HOST:PORT --port P --dir DIR",
    .options = kRunOptions,
    .run = RunXrootd,
};

constexpr OptionSpec kMetricsOptions[] = {
    {"--dir", "DIR", "the proxy's cache directory"},
    {"--out", "FILE",
     "write there (atomically: node_exporter's textfile collector reads FILE.prom files)",
     "stdout"},
};

constexpr CommandSpec kMetrics{
    .path = "proxy metrics",
    .summary =
        "print a proxy's live counters (cache hits and misses, bytes from the origin and served, "
        "open files, origin requests outstanding, cache size and free space) in the Prometheus "
        "text format",
    .synopsis = "--dir DIR",
    .options = kMetricsOptions,
    .run = PrintMetrics,
};

constexpr const CommandSpec* kProxySubcommands[] = {&kConfig, &kRun, &kMetrics,
                                                    &kProxyDoctorCommand};

}  // namespace

const std::span<const OptionSpec> kProxyRunOptions = kRunOptions;

constexpr CommandSpec kProxyCommand{
    .path = "proxy",
    .summary = "site cache inside an xrootd server",
    .subcommands = kProxySubcommands,
};

}  // namespace ferry::cli
