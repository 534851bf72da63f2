#include "cli/proxy_supervisor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "cache/entry_store.h"
#include "cache/verify.h"
#include "plugin/proxy/guard_map.h"
#include "replica/hooks.h"

namespace ferry::cli {
namespace {

using Clock = std::chrono::steady_clock;
using Addr = std::array<uint8_t, 16>;

volatile sig_atomic_t g_stop_signal = 0;
pid_t g_xrootd = -1;
pid_t g_cmsd = -1;

void OnStop(int sig) {
  g_stop_signal = sig;
  for (pid_t pid : {g_xrootd, g_cmsd}) {
    if (pid > 0) {
      ::kill(pid, sig);
    }
  }
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string PeerText(const uint8_t* addr) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  char buf[INET6_ADDRSTRLEN] = {};
  if (std::memcmp(addr, kMapped, sizeof kMapped) == 0) {
    ::inet_ntop(AF_INET, addr + 12, buf, sizeof buf);
    return buf;
  }
  ::inet_ntop(AF_INET6, addr, buf, sizeof buf);
  return std::string("[") + buf + "]";
}

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// The guard's shared file, mapped for the supervisor's whole life.
class GuardFile {
 public:
  bool Open(const std::string& path, uid_t uid, gid_t gid) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::ftruncate(fd, sizeof(ferry_guard_map)) != 0) {
      std::fprintf(stderr, "ferry proxy: cannot create %s: %s (no crash attribution)\n",
                   path.c_str(), ErrnoText(errno).c_str());
      if (fd >= 0) {
        ::close(fd);
      }
      return false;
    }
    (void)::fchown(fd, uid, gid);
    void* p = ::mmap(nullptr, sizeof(ferry_guard_map), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
      return false;
    }
    map_ = static_cast<ferry_guard_map*>(p);
    map_->magic = FERRY_GUARD_MAGIC;
    map_->version = FERRY_GUARD_VERSION;
    return true;
  }
  bool open() const { return map_ != nullptr; }

  // The crash's peer, when the guard's handler recorded one; cleared for the next run.
  bool TakeCrashPeer(Addr* peer) {
    if (map_ == nullptr || __atomic_load_n(&map_->crash_valid, __ATOMIC_ACQUIRE) == 0) {
      return false;
    }
    std::memcpy(peer->data(), map_->crash_peer.addr, 16);
    map_->crash_valid = 0;
    return true;
  }

  // The last `n` distinct peers accepted, newest first.
  std::vector<std::string> RecentPeers(size_t n) const {
    std::vector<std::string> out;
    if (map_ == nullptr) {
      return out;
    }
    const uint64_t seq = __atomic_load_n(&map_->accept_seq, __ATOMIC_ACQUIRE);
    for (uint64_t i = 0; i < FERRY_GUARD_RING && i < seq && out.size() < n; ++i) {
      const std::string text = PeerText(map_->accepted[(seq - 1 - i) % FERRY_GUARD_RING].addr);
      if (std::find(out.begin(), out.end(), text) == out.end()) {
        out.push_back(text);
      }
    }
    return out;
  }

  uint64_t refused() const { return map_ == nullptr ? 0 : map_->refused; }

  // Refuses `addr` until `until_ms`, in a free or expired slot (the oldest when all are live).
  void Deny(const Addr& addr, uint64_t until_ms) {
    if (map_ == nullptr) {
      return;
    }
    ferry_guard_peer* slot = &map_->deny[0];
    for (ferry_guard_peer& d : map_->deny) {
      if (d.unix_ms < slot->unix_ms) {
        slot = &d;
      }
    }
    __atomic_store_n(&slot->unix_ms, uint64_t{0}, __ATOMIC_RELEASE);
    std::memcpy(slot->addr, addr.data(), 16);
    __atomic_store_n(&slot->unix_ms, until_ms, __ATOMIC_RELEASE);
  }

  size_t denied_now(uint64_t now_ms) const {
    if (map_ == nullptr) {
      return 0;
    }
    return static_cast<size_t>(
        std::count_if(std::begin(map_->deny), std::end(map_->deny),
                      [now_ms](const ferry_guard_peer& d) { return d.unix_ms > now_ms; }));
  }

 private:
  ferry_guard_map* map_ = nullptr;
};

// A listening TCP socket of `family` bound to `addr`; -1 with errno.
int ListenAt(int family, const sockaddr* addr, socklen_t len) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  const int on = 1;
  const int off = 0;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (family == AF_INET6) {  // IPv4 clients too, as ::ffff:a.b.c.d
    (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  }
  if (::bind(fd, addr, len) == 0 && ::listen(fd, 1024) == 0) {
    return fd;
  }
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return -1;
}

// A listening TCP socket on every address (IPv6 and IPv4) at `port`, IPv4 alone where IPv6
// fails; -1 with errno.
int ListenOn(int port) {
  sockaddr_in6 a6 = {};
  a6.sin6_family = AF_INET6;
  a6.sin6_addr = in6addr_any;
  a6.sin6_port = htons(static_cast<uint16_t>(port));
  const int fd = ListenAt(AF_INET6, reinterpret_cast<sockaddr*>(&a6), sizeof a6);
  if (fd >= 0) {
    return fd;
  }
  sockaddr_in a4 = {};
  a4.sin_family = AF_INET;
  a4.sin_addr.s_addr = htonl(INADDR_ANY);
  a4.sin_port = htons(static_cast<uint16_t>(port));
  return ListenAt(AF_INET, reinterpret_cast<sockaddr*>(&a4), sizeof a4);
}

// In the child: `pass` onto descriptors 3, 4, ... (LISTEN_FDS), `lifeline` right after them.
// Returns the lifeline's new number (-1 without one).
int PlaceDescriptors(const std::vector<int>& pass, int lifeline) {
  std::vector<int> moved;  // first out of the way of 3..N, which any of them may occupy
  moved.reserve(pass.size());
  for (int fd : pass) {
    moved.push_back(::fcntl(fd, F_DUPFD_CLOEXEC, 256));
  }
  const int moved_lifeline = lifeline >= 0 ? ::fcntl(lifeline, F_DUPFD_CLOEXEC, 256) : -1;
  const int first = 3;
  for (size_t i = 0; i < moved.size(); ++i) {
    (void)::dup2(moved[i], first + static_cast<int>(i));  // dup2 clears close-on-exec
  }
  const int lifeline_fd = moved_lifeline >= 0 ? first + static_cast<int>(moved.size()) : -1;
  if (lifeline_fd >= 0) {
    (void)::dup2(moved_lifeline, lifeline_fd);
  }
  return lifeline_fd;
}

// The environment of a child: this process's, with `env` (NAME=VALUE) replacing or adding.
// What Spawn sets per child (descriptors handed to it) is never inherited from ferry's own.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& env) {
  static constexpr const char* kPerChild[] = {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES",
                                              "FERRY_GUARD_LIFELINE"};
  std::vector<std::string> out;
  auto name_of = [](const std::string& kv) {
    return kv.substr(0, kv.find('='));
  };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const bool replaced = std::any_of(env.begin(), env.end(), [&](const std::string& mine) {
      return name_of(mine) == name_of(kv);
    });
    const bool per_child = std::any_of(std::begin(kPerChild), std::end(kPerChild),
                                       [&](const char* n) { return name_of(kv) == n; });
    if (!replaced && !per_child) {
      out.push_back(kv);
    }
  }
  out.insert(out.end(), env.begin(), env.end());
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);  // + the terminating nullptr
  for (std::string& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// `pass`: listening sockets for the child (LISTEN_FDS); `lifeline`: the read end of the
// lifeline pipe, or -1.
pid_t Spawn(const std::vector<std::string>& argv,
            const std::vector<std::string>& env,
            const std::vector<int>& pass,
            int lifeline) {
  std::vector<std::string> args = argv;
  std::vector<std::string> vars = ChildEnvironment(env);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child of a single-threaded parent: allocating here is safe.
    const int lifeline_fd = PlaceDescriptors(pass, lifeline);
    if (lifeline_fd >= 0) {
      vars.push_back("FERRY_GUARD_LIFELINE=" + std::to_string(lifeline_fd));
    }
    if (!pass.empty()) {
      vars.push_back("LISTEN_PID=" + std::to_string(::getpid()));
      vars.push_back("LISTEN_FDS=" + std::to_string(pass.size()));
    }
    std::vector<char*> arg_ptrs = Pointers(args);
    std::vector<char*> env_ptrs = Pointers(vars);
    ::execvpe(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
    std::fprintf(stderr, "ferry proxy: cannot run %s: %s\n", arg_ptrs[0], ErrnoText(errno).c_str());
    ::_exit(127);
  }
  return pid;
}

struct VerifySummary {
  size_t checked = 0;
  size_t removed = 0;
  size_t skipped = 0;  // left to the per-read CRC check when the time budget ran out
};

int64_t NewestMtimeNs(const cache::EntryPaths& paths) {
  int64_t newest = 0;
  for (const std::string& f : {paths.idx(), paths.data(), paths.frag(), paths.manifest()}) {
    struct stat st = {};
    if (::stat(f.c_str(), &st) == 0) {
      newest = std::max<int64_t>(newest, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
    }
  }
  return newest;
}

// Checks every entry of `cache_dir` written since `since_ns` (what the dead server may have
// been writing), until `deadline`: an entry with a bad page or index is removed, to be fetched
// again. Read-only otherwise, so that nothing in the cache becomes root's. Adds to `s`.
void VerifyRecent(const std::string& cache_dir,
                  const cache::MasterKey* key,
                  int64_t since_ns,
                  Clock::time_point deadline,
                  VerifySummary& s) {
  auto entries = cache::ScanEntries(cache_dir);
  if (!entries) {
    return;  // a disk that is gone: the proxy keeps it out of service
  }
  for (const cache::EntryListing& e : *entries) {
    if (NewestMtimeNs(e.paths) < since_ns) {
      continue;
    }
    if (Clock::now() > deadline) {
      ++s.skipped;
      continue;
    }
    ++s.checked;
    auto report = cache::VerifyEntry(e.paths, /*repair=*/false, /*lock_timeout_ms=*/200, key,
                                     replica::Hooks().get());
    if (!report || report->bad()) {
      (void)cache::RemoveEntryFiles(e.paths);
      ++s.removed;
    }
  }
}

struct State {
  uint64_t restarts = 0;
  uint64_t last_crash_unix = 0;
  int last_signal = 0;
  uint64_t entries_removed = 0;
  uint64_t peers_refused = 0;
  std::map<Addr, std::deque<uint64_t>> crashes_by_peer;  // crash times (ms) in the window
  std::deque<Clock::time_point> recent_restarts;
};

void WriteStatus(const std::string& cache_dir,
                 const State& st,
                 const GuardFile& guard,
                 pid_t xrootd) {
  const std::string path = cache_dir + "/proxy-supervisor.json";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << "{\"supervisor_pid\":" << ::getpid() << ",\"xrootd_pid\":" << xrootd
      << ",\"xrootd_restarts\":" << st.restarts << ",\"last_crash_unix\":" << st.last_crash_unix
      << ",\"last_crash_signal\":" << st.last_signal
      << ",\"entries_removed_after_crash\":" << st.entries_removed
      << ",\"peers_refused\":" << st.peers_refused
      << ",\"peers_refused_now\":" << guard.denied_now(NowMs())
      << ",\"connections_refused\":" << guard.refused() << "}\n";
  }
  (void)::rename(tmp.c_str(), path.c_str());
}

// Counts the crash against its peer; refuses the peer once it reached the limit.
void Attribute(const SupervisorOptions& o, const Addr& peer, State* st, GuardFile* guard) {
  const uint64_t now = NowMs();
  std::deque<uint64_t>& times = st->crashes_by_peer[peer];
  times.push_back(now);
  while (!times.empty() && times.front() + static_cast<uint64_t>(o.refuse_window_s) * 1000 < now) {
    times.pop_front();
  }
  if (o.refuse_after > 0 && times.size() >= static_cast<size_t>(o.refuse_after)) {
    guard->Deny(peer, now + static_cast<uint64_t>(o.refuse_for_s) * 1000);
    ++st->peers_refused;
    times.clear();
    std::fprintf(stderr, "ferry proxy: refusing %s for %d s: %d crashes came from it within %d s\n",
                 PeerText(peer.data()).c_str(), o.refuse_for_s, o.refuse_after, o.refuse_window_s);
  }
}

void OnCrash(const SupervisorOptions& o,
             int sig,
             pid_t pid,
             int64_t started_ns,
             State* st,
             GuardFile* guard) {
  ++st->restarts;
  st->last_signal = sig;
  st->last_crash_unix = NowMs() / 1000;
  Addr peer{};
  const bool known = guard->TakeCrashPeer(&peer);
  std::string recent;
  for (const std::string& p : guard->RecentPeers(8)) {
    recent += (recent.empty() ? "" : " ") + p;
  }
  // One second for every cache disk together; what is left is checked by each read's CRC.
  VerifySummary v;
  const auto deadline = Clock::now() + std::chrono::milliseconds(1000);
  VerifyRecent(o.cache_dir, o.master_key.get(), started_ns, deadline, v);
  for (const std::string& dir : o.data_dirs) {
    VerifyRecent(dir, o.master_key.get(), started_ns, deadline, v);
  }
  st->entries_removed += v.removed;
  std::fprintf(stderr,
               "ferry proxy: xrootd (pid %d) died of %s; request from %s; peers accepted last: "
               "%s; %zu entries written since its start verified (%zu bad, removed; %zu left to "
               "the per-read check); restart %llu\n",
               static_cast<int>(pid), SignalName(sig).c_str(),
               known ? PeerText(peer.data()).c_str() : "(unknown)",
               recent.empty() ? "(none)" : recent.c_str(), v.checked, v.removed, v.skipped,
               static_cast<unsigned long long>(st->restarts));
  if (known) {
    Attribute(o, peer, st, guard);
  }
}

bool Deliberate(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

// Five restarts within ten seconds: wait a second before the next, so a server that cannot
// start does not spin.
void Pace(State* st) {
  const auto now = Clock::now();
  st->recent_restarts.push_back(now);
  while (st->recent_restarts.front() < now - std::chrono::seconds(10)) {
    st->recent_restarts.pop_front();
  }
  if (st->recent_restarts.size() >= 5) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int StopAll(int status) {
  OnStop(SIGTERM);
  for (pid_t pid : {g_xrootd, g_cmsd}) {
    if (pid > 0) {
      (void)::waitpid(pid, nullptr, 0);
    }
  }
  return status;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  return 128 + WTERMSIG(status);
}

}  // namespace

int Supervise(const SupervisorOptions& o) {
  GuardFile guard;
  std::vector<std::string> env = o.xrootd_env;
  std::vector<std::string> cmsd_env = o.cmsd_env;
  if (!o.guard_map.empty() && guard.Open(o.guard_map, o.owner_uid, o.owner_gid)) {
    env.push_back("FERRY_GUARD_MAP=" + o.guard_map);
  }
  // The lifeline: only this process holds the write end, so it closes when ferry ends.
  int lifeline[2] = {-1, -1};
  if (::pipe2(lifeline, O_CLOEXEC) != 0) {
    lifeline[0] = -1;
  }
  std::vector<int> listening;
  for (int port : o.listen_ports) {
    const int fd = ListenOn(port);
    if (fd < 0) {
      std::fprintf(stderr, "ferry proxy: cannot listen on port %d: %s\n", port,
                   ErrnoText(errno).c_str());
      return 1;
    }
    listening.push_back(fd);
  }
  auto start_xrootd = [&] {
    return Spawn(o.xrootd_argv, env, listening, lifeline[0]);
  };
  auto start_cmsd = [&] {
    return Spawn(o.cmsd_argv, cmsd_env, {}, lifeline[0]);
  };
  // signal() fails only for an invalid signal number.
  (void)::signal(SIGTERM, OnStop);
  (void)::signal(SIGINT, OnStop);
  State st;
  int64_t started_ns = NowNs();
  g_xrootd = start_xrootd();
  if (!o.cmsd_argv.empty()) {
    g_cmsd = start_cmsd();
  }
  WriteStatus(o.cache_dir, st, guard, g_xrootd);
  auto last_status = Clock::now();
  for (;;) {
    int status = 0;
    // Polled, so that the status file also follows the guard's counters between crashes.
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR) {
      return StopAll(1);
    }
    if (pid <= 0) {
      if (Clock::now() - last_status > std::chrono::seconds(5)) {
        WriteStatus(o.cache_dir, st, guard, g_xrootd);
        last_status = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const bool is_xrootd = pid == g_xrootd;
    (is_xrootd ? g_xrootd : g_cmsd) = -1;
    if (g_stop_signal != 0) {
      return StopAll(ExitCode(status));
    }
    const std::string name = is_xrootd ? "xrootd" : "cmsd";
    if (WIFEXITED(status) || Deliberate(WTERMSIG(status))) {
      std::fprintf(stderr, "ferry proxy: %s (pid %d) %s %d: stopping\n", name.c_str(),
                   static_cast<int>(pid), WIFEXITED(status) ? "exited with" : "stopped by signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      return StopAll(ExitCode(status));
    }
    Pace(&st);
    if (!is_xrootd) {
      std::fprintf(stderr, "ferry proxy: cmsd (pid %d) died of %s; restarting it\n",
                   static_cast<int>(pid), SignalName(WTERMSIG(status)).c_str());
      g_cmsd = start_cmsd();
      continue;
    }
    OnCrash(o, WTERMSIG(status), pid, started_ns, &st, &guard);
    started_ns = NowNs();
    g_xrootd = start_xrootd();
    WriteStatus(o.cache_dir, st, guard, g_xrootd);
  }
}

}  // namespace ferry::cli
