#include "testing/xrootd_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

namespace ferry::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::string FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A port on 127.0.0.1 that was free a moment ago (the caller retries if someone takes it).
uint16_t PickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return 0;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0
      && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

bool Accepts(const std::string& host, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// Owns the strings behind an argv/envp array for execve (built before fork: the child only
// calls async-signal-safe functions).
struct CStrings {
  std::vector<std::string> items;
  std::vector<char*> Pointers() {
    std::vector<char*> out;
    out.reserve(items.size() + 1);
    for (std::string& s : items) {
      out.push_back(s.data());
    }
    out.push_back(nullptr);
    return out;
  }
};

}  // namespace

std::string BindShimPath() {
  if (const char* env = std::getenv("FERRY_TB_BINDSHIM"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef FERRY_TB_BINDSHIM
  return FERRY_TB_BINDSHIM;
#else
  return "";
#endif
}

std::string TestbedScriptsDir() {
#ifdef FERRY_TB_SCRIPTS_DIR
  return FERRY_TB_SCRIPTS_DIR;
#else
  return "scripts/testbed";
#endif
}

XrootdStart XrootdOrigin::Start(const std::string& data_dir, const XrootdOriginOptions& options) {
  XrootdStart result;
  const std::string xrootd = FindInPath("xrootd");
  const std::string timeout = FindInPath("timeout");
  if (xrootd.empty()) {
    result.unavailable = true;
    result.message = "xrootd is not installed (scripts/install-deps.sh)";
    return result;
  }
  if (timeout.empty()) {
    result.message = "coreutils timeout not found";
    return result;
  }
  const std::string ip_path = FindInPath("ip");
  if (!options.netns.empty() && (ip_path.empty() || options.netns_address.empty())) {
    result.message = "netns needs the ip tool and netns_address";
    return result;
  }
  const std::string shim = BindShimPath();
  if (shim.empty() || ::access(shim.c_str(), R_OK) != 0) {
    result.message = "bind shim library not found (" + shim + "); build target ferry_tb_bindshim";
    return result;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(data_dir, ec)) {
    result.message = "data directory " + data_dir + " does not exist";
    return result;
  }
  const bool as_root = ::geteuid() == 0;
  const passwd* account = as_root ? ::getpwnam("xrootd") : nullptr;
  if (as_root && account == nullptr) {
    result.message = "running as root but the xrootd account does not exist (xrootd-server)";
    return result;
  }
  // A TempDir is 0700; the server's account must be able to list and read it. Only add the
  // missing r/x bits for group and others; a directory that already has them (the read-only
  // shared data) is left untouched.
  struct stat st {};
  if (::stat(data_dir.c_str(), &st) == 0 && (st.st_mode & 0055) != 0055) {
    ::chmod(data_dir.c_str(), (st.st_mode & 07777) | 0055);
  }

  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/ferry-xrootd-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    result.message = std::string("mkdtemp: ") + std::strerror(errno);
    return result;
  }
  std::unique_ptr<XrootdOrigin> origin(new XrootdOrigin());
  origin->state_dir_ = buf.data();
  if (!options.netns.empty()) {
    origin->host_ = options.netns_address;
  }
  const std::string state = origin->state_dir_;
  const std::string var = state + "/var";
  std::filesystem::create_directories(var + "/admin", ec);
  ::chmod(state.c_str(), 0755);
  if (account != nullptr) {
    for (const std::string& d : {var, var + "/admin"}) {
      if (::chown(d.c_str(), account->pw_uid, account->pw_gid) != 0) {
        result.message = "chown " + d + ": " + std::strerror(errno);
        return result;
      }
    }
  }

  std::string last_failure;
  std::string earlier;  // one line per earlier failed attempt
  for (int attempt = 0; attempt < 4; ++attempt) {
    // A port free on the host; inside a fresh namespace every port is free.
    const uint16_t port = PickFreePort();
    if (port == 0) {
      last_failure = "no free port on 127.0.0.1";
      continue;
    }
    const std::string cfg = state + "/xrootd.cfg";
    {
      std::ofstream out(cfg, std::ios::trunc);
      out << "# ferry test origin (tests/testing/xrootd_server.cc)\n"
          << "xrd.port " << port << "\n"
          << "all.export / r/o\n"
          << "oss.localroot " << std::filesystem::absolute(data_dir).string() << "\n"
          << "all.adminpath " << var << "/admin\n"
          << "all.pidpath " << var << "\n"
          << "xrootd.trace emsg login\n"
          << options.extra_config << "\n";
    }
    CStrings argv;
    if (!options.netns.empty()) {
      argv.items = {ip_path, "netns", "exec", options.netns};
    }
    argv.items.insert(
        argv.items.end(),
        {timeout, "--kill-after=5", std::to_string(options.max_lifetime.count()) + "s", xrootd});
    if (as_root) {
      argv.items.insert(argv.items.end(), {"-R", "xrootd"});
    }
    argv.items.insert(argv.items.end(),
                      {"-c", cfg, "-l", var + "/xrootd.log", "-s", var + "/xrootd.pid"});
    CStrings envp;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      if (kv.rfind("LD_PRELOAD=", 0) != 0 && kv.rfind("FERRY_TB_BIND_ADDR=", 0) != 0) {
        envp.items.push_back(std::move(kv));
      }
    }
    envp.items.push_back("LD_PRELOAD=" + shim);
    envp.items.push_back("FERRY_TB_BIND_ADDR=" + origin->host_);
    std::vector<char*> argv_p = argv.Pointers();
    std::vector<char*> envp_p = envp.Pointers();
    const std::string out_path = state + "/stdout.log";

    pid_t pid = ::fork();
    if (pid < 0) {
      result.message = std::string("fork: ") + std::strerror(errno);
      return result;
    }
    if (pid == 0) {
      int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int in = ::open("/dev/null", O_RDONLY);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      if (in >= 0) {
        ::dup2(in, 0);
      }
      ::execve(argv_p[0], argv_p.data(), envp_p.data());
      ::_exit(127);
    }
    origin->pid_ = pid;
    origin->port_ = port;

    const auto deadline = Clock::now() + options.start_timeout;
    bool up = false;
    while (Clock::now() < deadline) {
      if (!origin->Running()) {
        break;
      }
      if (Accepts(origin->host_, port)) {
        up = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (up) {
      result.origin = std::move(origin);
      return result;
    }
    const bool died = !origin->Running();
    const std::string log = ReadFile(out_path) + ReadFile(var + "/xrootd.log");
    origin->Stop();
    if (!last_failure.empty()) {
      earlier += last_failure.substr(0, last_failure.find('\n')) + "\n";
    }
    const std::string how =
        died ? "the server ended: " + origin->exit_status_
             : "still running after " + std::to_string(options.start_timeout.count()) + " s";
    last_failure = "xrootd did not accept connections on " + origin->host_ + ":"
                   + std::to_string(port) + " (attempt " + std::to_string(attempt + 1) + ", " + how
                   + "); log:\n" + log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    // A server that ended early (a port taken between PickFreePort and its bind, or a
    // transient failure on a loaded machine) is worth another port and another start; one
    // that ran the whole timeout without accepting will not do better next time.
    if (!died) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * (attempt + 1)));
  }
  result.message = earlier + last_failure;
  return result;
}

XrootdOrigin::~XrootdOrigin() {
  Stop();
  std::error_code ec;
  if (!state_dir_.empty()) {
    std::filesystem::remove_all(state_dir_, ec);
  }
}

std::string XrootdOrigin::BaseUrl() const {
  return "root://" + host_ + ":" + std::to_string(port_) + "/";
}

std::string XrootdOrigin::Url(const std::string& relative_path) const {
  std::string rel = relative_path;
  while (!rel.empty() && rel.front() == '/') {
    rel.erase(0, 1);
  }
  return BaseUrl() + "/" + rel;
}

std::string XrootdOrigin::log_path() const {
  return state_dir_ + "/var/xrootd.log";
}

std::string XrootdOrigin::LogTail(size_t max_bytes) const {
  std::string log = ReadFile(log_path());
  return log.size() > max_bytes ? log.substr(log.size() - max_bytes) : log;
}

bool XrootdOrigin::Running() {
  if (pid_ <= 0) {
    return false;
  }
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = WIFEXITED(status)     ? "exit " + std::to_string(WEXITSTATUS(status))
                   : WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                         : "status " + std::to_string(status);
    pid_ = -1;
    return false;
  }
  if (r < 0 && errno == ECHILD) {
    exit_status_ = "reaped elsewhere (waitpid: no such child)";
    pid_ = -1;
    return false;
  }
  return true;
}

void XrootdOrigin::Stop() {
  if (!Running()) {
    return;
  }
  // pid_ is `timeout`, which forwards SIGTERM to xrootd and SIGKILLs it 5 s later if needed.
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && Running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (Running()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

}  // namespace ferry::testing

namespace ferry::testing {

int RunTestbedScript(const std::string& script,
                     const std::vector<std::string>& args,
                     const std::string& state_dir,
                     std::string* out,
                     int timeout_s,
                     const std::vector<std::string>& extra_env) {
  const std::string timeout = FindInPath("timeout");
  const std::string bash = FindInPath("bash");
  if (timeout.empty() || bash.empty()) {
    return -1;
  }
  CStrings argv;
  argv.items = {timeout, "--kill-after=5", std::to_string(timeout_s) + "s", bash,
                TestbedScriptsDir() + "/" + script};
  argv.items.insert(argv.items.end(), args.begin(), args.end());
  CStrings envp;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (kv.rfind("FERRY_TB_DIR=", 0) != 0 && kv.rfind("FERRY_TB_BINDSHIM=", 0) != 0) {
      envp.items.push_back(std::move(kv));
    }
  }
  envp.items.push_back("FERRY_TB_DIR=" + state_dir);
  envp.items.push_back("FERRY_TB_BINDSHIM=" + BindShimPath());
  envp.items.insert(envp.items.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argv_p = argv.Pointers();
  std::vector<char*> envp_p = envp.Pointers();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return -1;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return -1;
  }
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::execve(argv_p[0], argv_p.data(), envp_p.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char chunk[4096];
  // Ends at EOF: the scripts start daemons with stdout redirected, and `timeout` bounds the
  // script itself.
  for (;;) {
    ssize_t n = ::read(pipe_fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  if (out != nullptr) {
    *out = std::move(text);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TestbedWanStart TestbedWan::Up(const std::string& rtt, const std::string& rate) {
  TestbedWanStart result;
  if (::geteuid() != 0) {
    result.unavailable = true;
    result.message = "the WAN test bed needs root";
    return result;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/ferry-wan-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    result.message = std::string("mkdtemp: ") + std::strerror(errno);
    return result;
  }
  std::unique_ptr<TestbedWan> wan(new TestbedWan());
  wan->state_dir_ = buf.data();
  wan->name_ = "ftb-g" + std::to_string(::getpid() % 1000000);
  std::string out;
  const int rc = RunTestbedScript(
      "wan.sh", {"up", "--name", wan->name_, "--rtt", rtt, "--rate", rate}, wan->state_dir_, &out);
  if (rc != 0) {
    result.unavailable = rc == 77;
    result.message = "wan.sh up exited " + std::to_string(rc) + ": " + out;
    wan->name_.clear();  // wan.sh undid what it had made
    return result;
  }
  const size_t nl = out.find_last_of('\n');
  wan->address_ = nl == std::string::npos ? out : out.substr(nl + 1);
  result.wan = std::move(wan);
  return result;
}

std::string TestbedWan::Check(int seconds) const {
  std::string out;
  RunTestbedScript("wan.sh", {"check", "--name", name_}, state_dir_, &out, 120,
                   {"FERRY_TB_CHECK_SECONDS=" + std::to_string(seconds)});
  return out;
}

TestbedWan::~TestbedWan() {
  if (!name_.empty()) {
    RunTestbedScript("wan.sh", {"down", "--name", name_}, state_dir_, nullptr);
  }
  std::error_code ec;
  if (!state_dir_.empty()) {
    std::filesystem::remove_all(state_dir_, ec);
  }
}

}  // namespace ferry::testing
