// ferry proxy doctor: what would stop `ferry proxy run` with the same options, each finding
// with its fix (doctor_report.h). It takes exactly the options of `run`, so that a site admin
// checks the command line their systemd unit runs (replace `run` by `doctor`, or add it as
// ExecStartPre) rather than a second description of the proxy that could drift from it.
//
// Checks: the options as `run` reads them, the xrootd and server library it would run, the
// proxy library, the certificate and key (readable, a pair, days to expiry, the host name in its
// SAN), the sss keytabs (a key in each, not expired, modes), the authorisation database (every
// line parsed, an identity that can read nothing), a login at the origin with the proxy's own
// credentials (xrdfs), the ports, and the cache disk (mode, space, inodes).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/self_exe.h"
#include "base/strings.h"
#include "cache/conf_file.h"
#include "cache/config.h"
#include "cli/args.h"
#include "cli/cmd_proxy_security.h"
#include "cli/commands.h"
#include "cli/doctor_report.h"
#include "cli/proxy_metrics.h"
#include "cli/proxy_xrootd_build.h"

namespace ferry::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') {
    return "localhost";
  }
  return buf;
}

// ---- certificate and key ----

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};

void CheckCertificate(DoctorReport& report, const Args& a) {
  const auto cert_path = a.Get("--cert");
  const auto key_path = a.Get("--key");
  if (!cert_path && !key_path) {
    report.Add("cert", CheckStatus::kSkip, "no --cert (needed by --https, ztn and gsi only)");
    return;
  }
  if (!cert_path || !key_path) {
    report.Add("cert", CheckStatus::kFail, "--cert and --key go together",
               "give both --cert FILE and --key FILE");
    return;
  }
  std::unique_ptr<BIO, BioFree> cert_bio(BIO_new_file(cert_path->c_str(), "r"));
  if (!cert_bio) {
    report.Add("cert", CheckStatus::kFail,
               "cannot read the certificate " + *cert_path + ": " + ErrnoText(errno),
               "check the path and that root can read it");
    return;
  }
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    report.Add("cert", CheckStatus::kFail, *cert_path + " holds no PEM certificate",
               "give the server certificate in PEM (-----BEGIN CERTIFICATE-----)");
    return;
  }
  std::unique_ptr<BIO, BioFree> key_bio(BIO_new_file(key_path->c_str(), "r"));
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    report.Add("cert", CheckStatus::kFail,
               "cannot read a private key from " + *key_path
                   + " (missing, unreadable, encrypted or not PEM)",
               "give the unencrypted PEM key: openssl pkey -in KEY -out KEY.pem");
    return;
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    report.Add("cert", CheckStatus::kFail,
               *key_path + " is not the key of " + *cert_path + ": TLS handshakes fail",
               "give the key the certificate was issued for");
    return;
  }
  int days = 0;
  int seconds = 0;
  (void)ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notAfter(cert.get()));
  int days_since_start = 0;
  (void)ASN1_TIME_diff(&days_since_start, &seconds, X509_get0_notBefore(cert.get()), nullptr);
  const std::string host = a.GetOr("--host", HostName());
  // A proxy reached by its address (--host 127.0.0.1) is covered by an IP SAN, as clients check.
  const bool host_ok = X509_check_host(cert.get(), host.data(), host.size(), 0, nullptr) == 1
                       || X509_check_ip_asc(cert.get(), host.c_str(), 0) == 1;
  Check* c = nullptr;
  const std::string renew =
      "renew it with your CA, then restart the proxy (systemctl restart ferry-proxy@INSTANCE)";
  if (days < 0 || (days == 0 && seconds < 0)) {
    c = &report.Add("cert", CheckStatus::kFail,
                    *cert_path + " expired " + std::to_string(-days)
                        + " days ago: clients refuse the TLS handshake",
                    renew);
  } else if (days_since_start < 0 || seconds < 0) {
    c = &report.Add("cert", CheckStatus::kFail, *cert_path + " is not valid yet",
                    "check the clock (timedatectl) or the certificate");
  } else if (!host_ok) {
    c = &report.Add("cert", CheckStatus::kFail,
                    *cert_path + " does not name " + host
                        + " in its subject alternative names: clients that verify refuse it",
                    "a certificate for " + host + ", or --host NAME-IT-COVERS");
  } else if (days < 14) {
    c = &report.Add("cert", CheckStatus::kWarn,
                    *cert_path + " expires in " + std::to_string(days) + " days", renew);
  } else {
    c = &report.Add("cert", CheckStatus::kOk,
                    *cert_path + ": key matches, covers " + host + ", " + std::to_string(days)
                        + " days to expiry");
  }
  c->Value("days_to_expiry", days).Text("host", host).Value("host_covered", host_ok ? 1 : 0);
  struct stat st = {};
  if (::stat(key_path->c_str(), &st) == 0 && (st.st_mode & 0077) != 0) {
    report.Add("key", CheckStatus::kWarn,
               *key_path + " can be read by others (mode " + OctalMode(st.st_mode) + ")",
               "chmod 600 " + *key_path);
  }
}

// ---- sss keytabs ----

// One keytab: every line a key with a name (n:) and its bits (k:), none expired (e:).
void CheckKeytab(DoctorReport& report, const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    report.Add("keytab", CheckStatus::kFail, what + " " + path + ": " + ErrnoText(errno),
               "check the path; make one with xrdsssadmin -k NAME add " + path);
    return;
  }
  std::string line;
  int keys = 0;
  std::string problem;
  std::set<std::string> names;
  for (int n = 1; n <= 10000 && std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::istringstream words(line);
    std::string word;
    std::string name;
    bool has_key = false;
    int64_t expires = 0;
    while (words >> word) {
      if (word.compare(0, 2, "n:") == 0) {
        name = word.substr(2);
      } else if (word.compare(0, 2, "k:") == 0) {
        has_key = word.size() > 2;
      } else if (word.compare(0, 2, "e:") == 0) {
        expires = std::atoll(word.c_str() + 2);
      }
    }
    if (name.empty() || !has_key) {
      problem = problem.empty() ? "line " + std::to_string(n) + " is not an sss key (no n:NAME or "
                                      "k:KEY): is this the keytab?"
                                : problem;
      continue;
    }
    if (expires > 0 && expires < std::time(nullptr)) {
      if (problem.empty()) {
        problem.append("key ").append(name).append(" expired");
      }
    }
    names.insert(name);
    ++keys;
  }
  struct stat st = {};
  const bool open_mode = ::stat(path.c_str(), &st) == 0 && (st.st_mode & 0077) != 0;
  if (!problem.empty() || keys == 0) {
    report.Add("keytab", CheckStatus::kFail,
               what + " " + path + ": " + (problem.empty() ? "no key in it" : problem),
               "make one: xrdsssadmin -k NAME -u USER -g GROUP add " + path);
  } else if (open_mode) {
    report.Add("keytab", CheckStatus::kWarn,
               what + " " + path + " can be read by others (mode " + OctalMode(st.st_mode)
                   + "): anyone who reads it can log in as its keys",
               "chmod 600 " + path);
  } else {
    std::string list;
    for (const std::string& n : names) {
      list += (list.empty() ? "" : ",") + n;
    }
    report.Add("keytab", CheckStatus::kOk,
               what + " " + path + ": " + std::to_string(keys) + " key(s) (" + list + "), mode "
                   + OctalMode(st.st_mode));
  }
}

// The copies `run` wrote into the admin directory: xrootd refuses a keytab others can read, and
// cannot read one its account does not own.
void CheckAdminKeytabs(DoctorReport& report, const std::string& admin, const std::string& user) {
  struct passwd pw = {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  const bool root = ::geteuid() == 0;
  if (root
      && (::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0
          || found == nullptr)) {
    report.Add("account", CheckStatus::kFail, "no account '" + user + "' for xrootd to run as",
               "useradd --system " + user + "   (or --user NAME)");
    return;
  }
  for (const char* name : {"sss.keytab", "origin-sss.keytab"}) {
    const std::string path = admin + "/" + name;
    struct stat st = {};
    if (::stat(path.c_str(), &st) != 0) {
      continue;
    }
    if ((st.st_mode & 0077) != 0 || (root && st.st_uid != found->pw_uid)) {
      std::string fix = "chmod 600 " + path;
      if (root) {
        fix.append("; chown ").append(user).append(" ").append(path);
      }
      report.Add("keytab", CheckStatus::kFail,
                 path + " (written by a previous run) has mode " + OctalMode(st.st_mode)
                     + " and owner uid " + std::to_string(st.st_uid)
                     + ": xrootd wants it 0600 and its own",
                 fix);
    }
  }
}

// ---- authorisation database ----

bool ValidPrivileges(const std::string& p) {
  if (p.empty()) {
    return false;
  }
  for (const char ch : p) {
    if (std::string_view("adeiklnrwx-").find(ch) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Whether privileges grant reading: 'a' or 'r' before any '-'.
bool GrantsRead(const std::string& p) {
  const std::string granted = p.substr(0, p.find('-'));
  return granted.find('a') != std::string::npos || granted.find('r') != std::string::npos;
}

void CheckAuthdb(DoctorReport& report, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    report.Add("authdb", CheckStatus::kFail,
               "cannot read the authorisation database " + path + ": " + ErrnoText(errno),
               "check --authdb");
    return;
  }
  std::vector<std::string> errors;
  std::map<std::string, bool> reads;  // "u alice" -> may read something
  std::string line;
  std::string record;
  int first_line = 0;
  int records = 0;
  for (int n = 1; n <= 100000 && std::getline(in, line); ++n) {
    const size_t hash = line.find('#');
    line = line.substr(0, hash);
    const bool more = !line.empty() && line.back() == '\\';
    if (more) {
      line.pop_back();
    }
    if (record.empty()) {
      first_line = n;
    }
    record += " " + line;
    if (more) {
      continue;
    }
    std::istringstream words(record);
    record.clear();
    std::vector<std::string> w;
    for (std::string word; words >> word;) {
      w.push_back(word);
    }
    if (w.empty()) {
      continue;
    }
    ++records;
    const std::string where = "line " + std::to_string(first_line) + ": ";
    if (w[0].size() != 1 || std::string_view("ghnortux=").find(w[0][0]) == std::string::npos) {
      errors.push_back(where + "'" + w[0] + "' is not an identity type (u g h n o r t x =)");
      continue;
    }
    if (w.size() < 2) {
      errors.push_back(where + "an identity type without an identity");
      continue;
    }
    if (w[0] == "=" || w[0] == "x") {
      continue;  // compound identities and their references: not checked further
    }
    if ((w.size() - 2) % 2 != 0) {
      errors.push_back(where + "'" + w.back() + "' has no privileges after it (PATH PRIVS pairs)");
      continue;
    }
    const std::string who = w[0] + " " + w[1];
    bool any_read = false;
    for (size_t i = 2; i + 1 < w.size(); i += 2) {
      if (w[i][0] != '/') {
        errors.push_back(where + "path '" + w[i] + "' does not start with /");
      }
      if (!ValidPrivileges(w[i + 1])) {
        errors.push_back(where + "privileges '" + w[i + 1] + "' (letters a d e i k l n r w x -)");
      }
      any_read = any_read || GrantsRead(w[i + 1]);
    }
    reads[who] = reads[who] || any_read;
  }
  std::vector<std::string> readless;
  for (const auto& [who, any] : reads) {
    if (!any) {
      readless.push_back(who);
    }
  }
  if (!errors.empty()) {
    std::string text;
    for (size_t i = 0; i < errors.size() && i < 5; ++i) {
      text += (i == 0 ? "" : "; ") + errors[i];
    }
    report.Add("authdb", CheckStatus::kFail,
               path + ": " + std::to_string(errors.size()) + " error(s): " + text
                   + " (xrootd refuses the whole file)",
               "fix those lines: IDTYPE ID PATH PRIVS [PATH PRIVS]..., e.g. u alice /data lr");
  } else if (!readless.empty()) {
    std::string list;
    for (const std::string& who : readless) {
      list += (list.empty() ? "" : ", ") + who;
    }
    report.Add("authdb", CheckStatus::kWarn, path + ": these identities can read nothing: " + list,
               "give them r (or lr) on the paths they read, or remove their lines");
  } else {
    report.Add("authdb", CheckStatus::kOk,
               path + ": " + std::to_string(records) + " records, every identity can read");
  }
}

// ---- the origin ----

// Runs argv with `env` added, output captured (at most 64 KiB), killed after `timeout_s`.
// Returns the exit status (-1: did not run or was killed) and the output.
std::pair<int, std::string> RunCaptured(const std::vector<std::string>& argv,
                                        const std::vector<std::string>& env,
                                        int timeout_s) {
  int fds[2];
  if (::pipe(fds) != 0) {
    return {-1, "cannot make a pipe"};
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {-1, "cannot fork"};
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    for (const std::string& kv : env) {
      const size_t eq = kv.find('=');
      // NOLINTNEXTLINE(concurrency-mt-unsafe): the child of a fork, one thread
      (void)::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& arg : argv) {
      args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  const ChildOutput child = CollectChild(pid, fds[0], timeout_s * 1000, 65536);
  if (!child.finished) {
    return {-1, child.out + " (no answer within " + std::to_string(timeout_s) + " s)"};
  }
  return {WIFEXITED(child.status) ? WEXITSTATUS(child.status) : -1, child.out};
}

std::string OneLine(std::string text) {
  for (char& ch : text) {
    ch = ch == '\n' || ch == '\r' ? ' ' : ch;
  }
  while (!text.empty() && text.back() == ' ') {
    text.pop_back();
  }
  return text.size() > 300 ? text.substr(0, 300) + "..." : text;
}

// A login at each origin (every --origin, routes too) as the proxy logs in (its
// --origin-credentials), with `xrdfs stat /`.
void CheckOriginLogin(DoctorReport& report,
                      const Args& a,
                      const std::string& check,
                      const std::string& origin) {
  const std::string cred = a.GetOr("--origin-credentials", "");
  std::vector<std::string> env = {"XRD_CONNECTIONRETRY=1", "XRD_CONNECTIONWINDOW=5",
                                  "XRD_REQUESTTIMEOUT=10", "XRD_STREAMTIMEOUT=10"};
  std::string as = "without credentials";
  if (cred.compare(0, 4, "sss:") == 0) {
    env.insert(env.end(), {"XrdSecPROTOCOL=sss", "XrdSecSSSKT=" + cred.substr(4)});
    as = "with the sss key in " + cred.substr(4);
  } else if (cred.compare(0, 6, "token:") == 0) {
    env.insert(env.end(), {"XrdSecPROTOCOL=ztn", "BEARER_TOKEN_FILE=" + cred.substr(6)});
    as = "with the token in " + cred.substr(6);
  } else if (cred.compare(0, 5, "x509:") == 0) {
    env.insert(env.end(), {"XrdSecPROTOCOL=gsi", "X509_USER_PROXY=" + cred.substr(5)});
    as = "with the X.509 proxy " + cred.substr(5);
  }
  if (const auto ca = a.Get("--origin-ca-dir")) {
    env.push_back("X509_CERT_DIR=" + *ca);
  }
  const Clock::time_point start = Clock::now();
  const auto [rc, out] = RunCaptured({"xrdfs", origin, "stat", "/"}, env, 30);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  const std::string said = OneLine(out);
  if (rc == 127) {
    report.Add(check, CheckStatus::kSkip, "xrdfs is not installed: cannot log in to " + origin,
               "apt-get install xrootd-client");
    return;
  }
  std::string lower = said;
  for (char& ch : lower) {
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  Check* c = nullptr;
  if (rc == 0 || lower.find("server responded with an error") != std::string::npos) {
    c = &report.Add(
        check, CheckStatus::kOk,
        "logged in to " + origin + " " + as + " (" + std::to_string(static_cast<int>(ms)) + " ms)");
  } else if (lower.find("auth") != std::string::npos) {
    c = &report.Add(check, CheckStatus::kFail,
                    origin + " refused the proxy's login " + as + ": " + said,
                    "give --origin-credentials an identity the origin accepts (sss: the "
                    "origin's keytab must hold the same key: xrdsssadmin list KEYTAB on both)");
  } else {
    c = &report.Add(check, CheckStatus::kFail, "cannot reach " + origin + ": " + said,
                    "check that the origin runs and the host and port: xrdfs " + origin
                        + " query config version");
  }
  c->Value("login_ms", ms);
}

void CheckOrigin(DoctorReport& report, const Args& a) {
  for (const std::string& given : a.All("--origin")) {
    const size_t eq = given.find('=');
    // The default origin's check keeps its name ("origin"); a route's names its prefix.
    const std::string check = eq == std::string::npos ? "origin" : "origin " + given.substr(0, eq);
    CheckOriginLogin(report, a, check, eq == std::string::npos ? given : given.substr(eq + 1));
  }
}

// ---- ports and the cache disk ----

void CheckPort(DoctorReport& report, const std::string& what, const std::string& value) {
  auto port = ParseUint(value);
  if (!port || *port == 0 || *port > 65535) {
    report.Add("ports", CheckStatus::kFail, what + " '" + value + "': expected 1..65535",
               "a port number");
    return;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    report.Add("ports", CheckStatus::kSkip, "cannot make a socket: " + ErrnoText(errno));
    return;
  }
  const int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::close(fd);
  if (rc == 0) {
    report.Add("ports", CheckStatus::kOk, what + " " + value + " is free");
  } else if (err == EADDRINUSE) {
    report.Add("ports", CheckStatus::kFail,
               what + " " + value
                   + " is in use (a proxy that already runs, or another server): xrootd would "
                     "not start",
               "ss -ltnp 'sport = :" + value + "' shows who has it; stop it or choose another");
  } else {
    report.Add("ports", CheckStatus::kWarn,
               what + " " + value + ": " + ErrnoText(err)
                   + (err == EACCES ? " (ports below 1024 need root: run it as root)" : ""));
  }
}

// One cache directory (`check` names it in the report: "dir", then "dir 2", "dir 3").
void CheckCacheDisk(DoctorReport& report,
                    const Args& a,
                    const std::string& dir,
                    const std::string& check) {
  cache::Config config;
  if (auto v = a.Get("--max-size")) {
    auto bytes = ParseSize(*v);
    if (!bytes) {
      report.Add(check, CheckStatus::kFail, "--max-size '" + *v + "' is not a size", "e.g. 500G");
      return;
    }
    config.max_bytes = *bytes;
  }
  for (const std::string& kv : a.All("--set")) {
    if (kv.compare(0, 9, "min_free=") == 0) {
      config.min_free_bytes = ParseSize(kv.substr(9)).value_or(config.min_free_bytes);
    }
  }
  struct stat st = {};
  std::string existing = dir;
  if (::stat(dir.c_str(), &st) != 0) {
    for (int depth = 0; depth < 256 && ::stat(existing.c_str(), &st) != 0; ++depth) {
      const size_t slash = existing.rfind('/');
      existing = slash == 0 || slash == std::string::npos ? "/" : existing.substr(0, slash);
    }
    report.Add(check, CheckStatus::kOk, dir + " does not exist yet: run creates it (0700)");
  } else if (!S_ISDIR(st.st_mode)) {
    report.Add(check, CheckStatus::kFail, dir + " is not a directory", "--dir DIRECTORY");
    return;
  } else if ((st.st_mode & 0007) != 0) {
    report.Add(check, CheckStatus::kWarn,
               dir + " can be read by every user (mode " + OctalMode(st.st_mode)
                   + "): they read the cached files without the authdb",
               "chmod 700 " + dir);
  } else {
    report.Add(check, CheckStatus::kOk,
               dir + ": mode " + OctalMode(st.st_mode) + ", owner uid " + std::to_string(st.st_uid)
                   + (::geteuid() == 0 ? " (run hands it to the xrootd account)" : ""));
  }
  CheckDiskSpace(report, existing, config.max_bytes, config.min_free_bytes, "--set ");
}

// Several --dir: each its own disk (two on one file system share its space and its I/O), and,
// when the proxy runs, the disks its status file says are out of service.
void CheckCacheDisks(DoctorReport& report, const Args& a) {
  const std::vector<std::string>& dirs = a.All("--dir");
  std::map<dev_t, std::string> devices;
  for (size_t i = 0; i < dirs.size(); ++i) {
    const std::string check = i == 0 ? "dir" : "dir " + std::to_string(i + 1);
    CheckCacheDisk(report, a, dirs[i], check);
    struct stat st = {};
    if (::stat(dirs[i].c_str(), &st) != 0) {
      continue;
    }
    if (auto [it, fresh] = devices.emplace(st.st_dev, dirs[i]); !fresh) {
      report.Add(check, CheckStatus::kWarn,
                 dirs[i] + " is on the same file system as " + it->second
                     + ": they share its space and I/O, and fail together",
                 "one --dir per disk");
    }
  }
  std::ifstream in(dirs.front() + "/proxy-status.json");
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& [disk, fields] : ArrayObjects(text.str(), "disks", "dir")) {
    auto up = fields.find("up");
    if (up != fields.end() && up->second == 0) {
      report.Add("disks", CheckStatus::kFail,
                 "the running proxy took cache disk " + disk
                     + " out of service (proxy-status.json \"disks\" says why)",
                 "check the disk (dmesg, mount); the proxy probes it again every "
                 "ferry.disk_retry_s and takes it back when it works");
    }
  }
}

void CheckServer(DoctorReport& report, const Args& a) {
  const std::string version = InstalledXrootdVersion();
  if (version.empty()) {
    report.Add("xrootd", CheckStatus::kFail, "no xrootd on the PATH",
               "apt-get install xrootd-server xrootd-server-plugins");
    return;
  }
  const XrootdBuild build = FindXrootdBuild(a.GetOr("--xrootd-lib", "auto"));
  Check& c = build.known_affected()
                 ? report.Add("xrootd", CheckStatus::kWarn, build.Describe(),
                              "install ferry's package (it carries the patched libXrdServer) or "
                              "build it: scripts/xrootd/build-patched-server.sh")
                 : report.Add("xrootd", CheckStatus::kOk, build.Describe());
  c.Text("version", build.version).Value("patched", build.patched() ? 1 : 0);
  const std::string lib = a.GetOr("--lib", "");
  const std::string found = lib.empty() ? FindLibrary("libXrdFerryProxy-5.so") : lib;
  // xrootd's loader adds "-5" to a name without it.
  std::string versioned = found;
  if (!lib.empty() && lib.ends_with(".so") && !lib.ends_with("-5.so")) {
    versioned = lib.substr(0, lib.size() - 3) + "-5.so";
  }
  if (found.empty() || (!cache::PathExists(found) && !cache::PathExists(versioned))) {
    report.Add(
        "library", CheckStatus::kFail,
        "the proxy library " + (found.empty() ? "libXrdFerryProxy-5.so" : found) + " is not there",
        "install ferry's package, or --lib PATH");
  } else {
    report.Add("library", CheckStatus::kOk, "proxy library " + versioned);
  }
}

int Doctor(const Args& a) {
  DoctorReport report("ferry proxy doctor");
  const auto origin = a.Get("--origin");
  const auto port = a.Get("--port");
  const auto dir = a.Get("--dir");
  if (!origin || !port || !dir) {
    return UsageError("proxy doctor takes the options of proxy run: --origin, --port and --dir",
                      a.spec());
  }
  const std::string admin = a.GetOr("--admin", "/var/tmp/ferry-proxy-" + *port);
  if (auto plan = MakeSecurityPlan(a, admin); !plan) {
    report.Add("options", CheckStatus::kFail, plan.error().message(),
               "change the options as the message says");
  } else {
    report.Add("options", CheckStatus::kOk, "the options make a configuration");
  }
  CheckServer(report, a);
  CheckCertificate(report, a);
  if (const std::string auth = a.GetOr("--auth", ""); auth.find("sss:") != std::string::npos) {
    const size_t at = auth.find("sss:") + 4;
    CheckKeytab(report, "clients' keytab", auth.substr(at, auth.find(',', at) - at));
  }
  if (const std::string cred = a.GetOr("--origin-credentials", ""); cred.starts_with("sss:")) {
    CheckKeytab(report, "origin keytab", cred.substr(4));
  }
  CheckAdminKeytabs(report, admin, a.GetOr("--user", "xrootd"));
  if (const auto authdb = a.Get("--authdb")) {
    CheckAuthdb(report, *authdb);
  }
  CheckOrigin(report, a);
  CheckPort(report, "port", *port);
  if (const auto https = a.Get("--https")) {
    CheckPort(report, "HTTPS port", *https);
  }
  CheckCacheDisks(report, a);
  return report.Print(a.Has("--json"));
}

std::vector<OptionSpec> DoctorOptions() {
  std::vector<OptionSpec> options(kProxyRunOptions.begin(), kProxyRunOptions.end());
  options.push_back({"--json", "", "print one JSON document (docs/doctor.md)"});
  return options;
}

// Built at start-up from `run`'s table (another file's constant), so that the two never differ.
const std::vector<OptionSpec> kDoctorOptions = DoctorOptions();

}  // namespace

const CommandSpec kProxyDoctorCommand{
    .path = "proxy doctor",
    .summary =
        "check what `ferry proxy run` with the same options needs: certificate and key, "
        "keytabs, authdb, a login at the origin, ports, the cache disk, the xrootd it runs",
    .synopsis = "--origin HOST:PORT --port P --dir DIR",
    .options = kDoctorOptions,
    .notes =
        "Takes the options of `ferry proxy run` (those it does not check are accepted), so that\n"
        "the command line a systemd unit runs can be checked as it is.\n"
        "One line per check: OK, WARN, FAIL or SKIP, and under a problem the command that\n"
        "fixes it. Exit status: 0 when nothing failed, 1 when something would stop the proxy or\n"
        "its clients, 2 on a usage error. --json: docs/doctor.md.",
    .run = Doctor,
};

}  // namespace ferry::cli
