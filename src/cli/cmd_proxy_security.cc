#include "cli/cmd_proxy_security.h"

#include <openssl/crypto.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include "base/strings.h"
#include "cache/key_ring.h"

namespace ferry::cli {
namespace {

// The protocols --auth accepts: XRootD 5.5.3's security plug-ins that Debian packages.
constexpr std::string_view kProtocols[] = {"sss", "unix", "gsi", "ztn"};

struct Protocol {
  std::string name;
  std::string arg;  // sss: the keytab; others: sec.protocol parameters as given ("" = none)
};

Result<std::string> ReadText(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) {
    return IoError(std::string("cannot read the ") + what + " " + path, errno);
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "sss:KEYTAB,unix,ztn:-expiry optional" -> its protocols, in order.
Result<std::vector<Protocol>> ParseAuth(const std::string& spec) {
  std::vector<Protocol> out;
  for (std::string_view item : Split(spec, ',')) {
    const size_t colon = item.find(':');
    Protocol p{std::string(item.substr(0, colon)),
               colon == std::string_view::npos ? "" : std::string(item.substr(colon + 1))};
    bool known = false;
    for (std::string_view name : kProtocols) {
      known = known || p.name == name;
    }
    if (!known) {
      return InvalidArgumentError("--auth '" + p.name + "': expected sss:KEYTAB, unix, gsi[:ARGS] "
                                  "or ztn[:ARGS]");
    }
    if (p.name == "sss" && p.arg.empty()) {
      return InvalidArgumentError("--auth sss needs its keytab: sss:KEYTAB");
    }
    out.push_back(std::move(p));
  }
  return out;
}

// The key names ("n:NAME" fields) of a keytab's lines.
std::set<std::string> KeyNames(const std::string& keytab) {
  std::set<std::string> names;
  std::istringstream lines(keytab);
  std::string word;
  while (lines >> word) {
    if (word.compare(0, 2, "n:") == 0) {
      names.insert(word.substr(2));
    }
  }
  return names;
}

// One keytab for both directions. XRootD 5.5.3's sss plug-in keeps a single keytab object per
// process (XrdSecProtocolsss::ktObject, shared by its server and client sides): the server
// decrypts a client's credentials with any key of it by key number, and an XrdCl channel of the
// same process encrypts its own with the key that comes first in it, which is the one on the
// file's last line (keys of new names are put in front while the file is read). So the
// clients' keys come first and the proxy's own key last; the key names must differ, or the
// proxy's key would merge with a client's.
Result<std::string> MergeKeytabs(const std::string& clients_path, const std::string& own_path) {
  std::string clients = FERRY_TRY(ReadText(clients_path, "keytab"));
  const std::string own = FERRY_TRY(ReadText(own_path, "keytab"));
  const std::set<std::string> own_names = KeyNames(own);
  if (own_names.size() != 1) {
    return InvalidArgumentError("--origin-credentials " + own_path
                                + ": expected a keytab of one key name (xrdsssadmin -k NAME)");
  }
  if (KeyNames(clients).count(*own_names.begin()) != 0) {
    return InvalidArgumentError("--origin-credentials: the key name '" + *own_names.begin()
                                + "' is also in " + clients_path + "; give the proxy's key a "
                                "name of its own");
  }
  if (!clients.empty() && clients.back() != '\n') {
    clients += '\n';
  }
  return clients + own + (own.empty() || own.back() == '\n' ? "" : "\n");
}

// The proxy's identity at the origin (--origin-credentials): ferry.origin_* lines and the
// file they name. `clients_keytab`: the keytab of --auth sss, "" when the server has no sss.
Status OriginLines(const Args& a,
                   const std::string& admin,
                   const std::string& clients_keytab,
                   SecurityPlan& plan) {
  const std::string cred = a.GetOr("--origin-credentials", "");
  for (const std::string_view kind : {"token", "x509"}) {
    const size_t n = kind.size() + 1;  // "token:" or "x509:"
    if (cred.size() > n && cred.compare(0, n - 1, kind) == 0 && cred[n - 1] == ':') {
      if (cred[n] != '/') {
        return InvalidArgumentError("--origin-credentials " + std::string(kind)
                                    + ": needs an absolute path (the file is renewed in place)");
      }
      // Not copied: whatever renews the token or the X.509 proxy rewrites this file, and the
      // origin channels read it each time they authenticate (ztn over TLS, or gsi).
      plan.config += "ferry.origin_" + std::string(kind) + " " + cred.substr(n) + "\n";
      if (const auto ca = a.Get("--origin-ca-dir")) {
        plan.config += "ferry.origin_ca_dir " + *ca + "\n";
      }
      return OkStatus();
    }
  }
  if (cred.compare(0, 4, "sss:") != 0) {
    return cred.empty() ? OkStatus()
                        : InvalidArgumentError("--origin-credentials '" + cred
                                               + "': expected sss:KEYTAB, token:/ABSOLUTE/FILE "
                                                 "or x509:/ABSOLUTE/PROXYFILE");
  }
  const std::string own_keytab = cred.substr(4);
  if (!clients_keytab.empty()) {
    const std::string shared = admin + "/sss.keytab";
    plan.files.emplace_back(shared, FERRY_TRY(MergeKeytabs(clients_keytab, own_keytab)));
    plan.config += "sec.protocol sss -s " + shared + "\nferry.origin_sss server:" + shared + "\n";
    return OkStatus();
  }
  // A copy the account xrootd runs as can read (the admin directory is handed to it).
  plan.files.emplace_back(admin + "/origin-sss.keytab", FERRY_TRY(ReadText(own_keytab, "keytab")));
  plan.config += "ferry.origin_sss " + admin + "/origin-sss.keytab\n";
  return OkStatus();
}

// `--auth gsi` without parameters: the server's certificate and CAs of --cert, --key and
// --ca-dir; with --gridmap, a certificate's DN must map to a user name, which the authdb then
// sees (unmapped DNs are refused, not let in under their DN).
Result<std::string> GsiParameters(const Args& a) {
  const auto cert = a.Get("--cert");
  const auto key = a.Get("--key");
  const auto ca = a.Get("--ca-dir");
  if (!cert || !key || !ca) {
    return InvalidArgumentError(
        "--auth gsi needs --cert FILE, --key FILE and --ca-dir DIR (or "
        "gsi:PARAMETERS as sec.protocol takes them)");
  }
  std::string p = "-certdir:" + *ca + " -cert:" + *cert + " -key:" + *key;
  if (const auto gridmap = a.Get("--gridmap")) {
    FERRY_TRY(ReadText(*gridmap, "grid-mapfile"));
    p += " -gridmap:" + *gridmap + " -gmapopt:2";
  }
  return p;
}

// The xrootd lines of --auth and --origin-credentials, and the keytab file they need.
Result<SecurityPlan> AuthLines(const Args& a, const std::string& admin) {
  SecurityPlan plan;
  std::string clients_keytab;
  std::string protbind;  // after every sec.protocol line it names
  if (const auto auth = a.Get("--auth")) {
    plan.config += "# Clients authenticate (XRootD's security framework); nobody else gets in.\n";
    plan.config += "xrootd.seclib libXrdSec.so\n";
    protbind = "sec.protbind * only";
    for (const Protocol& p : FERRY_TRY(ParseAuth(*auth))) {
      if (p.name == "sss") {
        clients_keytab = p.arg;  // its sec.protocol line comes with the origin identity
      } else if (p.name == "gsi" && p.arg.empty()) {
        plan.config += "sec.protocol gsi " + FERRY_TRY(GsiParameters(a)) + "\n";
      } else {
        plan.config += "sec.protocol " + p.name + (p.arg.empty() ? "" : " " + p.arg) + "\n";
      }
      protbind += " " + p.name;
    }
  }
  const bool own_sss = a.GetOr("--origin-credentials", "").compare(0, 4, "sss:") == 0;
  if (!clients_keytab.empty() && !own_sss) {
    // XRootD 5.5.3's sss client in this process would use the server's keytab (see
    // MergeKeytabs): without a key of the proxy's own it would read the origin as the client
    // whose key comes last. A token identity keeps the origin channels off sss altogether.
    if (!a.Has("--origin-credentials")) {
      return InvalidArgumentError(
          "--auth sss needs --origin-credentials: in XRootD 5.5.3 the proxy's origin channels "
          "would use the server's sss keytab");
    }
    // A copy the account xrootd runs as can read (the admin directory is handed to it).
    plan.files.emplace_back(admin + "/sss.keytab", FERRY_TRY(ReadText(clients_keytab, "keytab")));
    plan.config += "sec.protocol sss -s " + admin + "/sss.keytab\n";
  }
  FERRY_TRY(OriginLines(a, admin, own_sss ? clients_keytab : "", plan));
  if (!protbind.empty()) {
    plan.config += protbind + "\n";
  }
  return plan;
}

// The xrootd lines of --authdb.
Result<std::string> AuthdbLines(const Args& a) {
  const auto authdb = a.Get("--authdb");
  if (!authdb) {
    if (a.Has("--scitokens")) {
      return InvalidArgumentError("--scitokens needs --authdb (what tokens do not grant)");
    }
    return std::string();
  }
  if (!a.Has("--auth") && !a.Has("--https")) {
    return InvalidArgumentError(
        "--authdb needs --auth (or --https): without authentication a "
        "client's identity is the login name it chose");
  }
  // XrdSecunix takes the user name the client sends: an authdb would grant alice's rights to
  // whoever says "alice".
  if (auto auth = a.Get("--auth"); auth && auth->find("unix") != std::string::npos) {
    return InvalidArgumentError(
        "--auth unix with --authdb: unix names are the client's own "
        "claim, which the authorisation database would trust");
  }
  FERRY_TRY(ReadText(*authdb, "authorisation database"));
  std::string tokens;
  if (const auto scitokens = a.Get("--scitokens")) {
    // Bearer tokens (SciTokens/WLCG) authorise by their scopes first; what they do not grant
    // falls through to the authdb. XrdHttp hands the Authorization header to the
    // authorisation library as the CGI key authz.
    FERRY_TRY(ReadText(*scitokens, "SciTokens configuration"));
    tokens = "ofs.authlib ++ libXrdAccSciTokens.so config=" + *scitokens
             + "\nhttp.header2cgi Authorization authz\n";
  }
  // XrdOfs asks the authorisation library on every open, stat and directory listing before its
  // storage plug-in (the cache) is called; denials are logged with the client's identity and
  // address; the file is re-read within a minute of a change.
  return "ofs.authorize\n" + tokens + "acc.authdb " + *authdb
         + "\nacc.authrefresh 60\nacc.audit deny\n";
}

// The server's certificate (xrd.tls) for HTTPS and for xroot logins that send tokens.
Result<std::string> TlsLines(const Args& a, bool ztn) {
  const auto cert = a.Get("--cert");
  const auto key = a.Get("--key");
  if (!cert || !key) {
    return InvalidArgumentError(std::string(ztn ? "--auth ztn" : "--https")
                                + " needs --cert FILE and --key FILE");
  }
  std::string c = "xrd.tls " + *cert + " " + *key + "\n";
  const auto ca = a.Get("--ca-dir");
  c += ca ? "xrd.tlsca certdir " + *ca + "\n" : "xrd.tlsca noverify\n";
  if (ztn) {
    // ztn sends a bearer token only over TLS: logins and requests of clients that can are
    // encrypted, data stays in the clear (the cache's speed; a token is not data).
    c += "xrootd.tls capable all -data\n";
  }
  return c;
}

// The xrootd lines of --https: XrdHttp on its own port in the same server.
Result<std::string> HttpsLines(const Args& a) {
  const auto port = a.Get("--https");
  if (!port) {
    return std::string();
  }
  auto number = ParseUint(*port);
  if (!number || *number == 0 || *number > 65535) {
    return InvalidArgumentError("--https '" + *port + "': expected 1..65535");
  }
  std::string c = "# HTTPS (XrdHttp): the same namespace and cache, authorised the same way.\n";
  c += "xrd.protocol XrdHttp:" + *port + " libXrdHttp.so\n";
  if (const auto gridmap = a.Get("--gridmap")) {
    // Client certificates name users only when they are verified: anyone can make a
    // certificate that says CN=alice.
    if (!a.Has("--ca-dir")) {
      return InvalidArgumentError(
          "--gridmap needs --ca-dir: unverified client certificates must not name users");
    }
    FERRY_TRY(ReadText(*gridmap, "grid-mapfile"));
    c += "http.gridmap " + *gridmap + "\n";
  }
  return c;
}

}  // namespace

// --encrypt-key FILE: the master key copied into the admin directory (mode 0600, handed to
// xrootd's account with the rest of it), as the keytabs are: the site's own file stays
// root's, and the cache, running as xrootd, reads its copy. keyring:NAME: read from the
// keyring of the user running `ferry proxy run` (xrootd's account could not find it there).
Result<std::string> EncryptionLines(const Args& args,
                                    const std::string& admin,
                                    SecurityPlan* plan) {
  const auto path = args.Get("--encrypt-key");
  if (!path) {
    return std::string();
  }
  std::string key;
  if (cache::IsKeyringSource(*path)) {
    cache::KeyBytes bytes =
        FERRY_TRY(cache::ReadKeyringKey(path->substr(cache::kKeyringPrefix.size())));
    key.assign(bytes.begin(), bytes.end());
    OPENSSL_cleanse(bytes.data(), bytes.size());
  } else {
    key = FERRY_TRY(ReadText(*path, "cache key file"));
  }
  if (key.size() != 32) {
    return InvalidArgumentError("--encrypt-key " + *path + ": a master key is 32 bytes, not "
                                + std::to_string(key.size()));
  }
  const std::string copy = admin + "/cache.key";
  plan->files.emplace_back(copy, std::move(key));
  return "ferry.cache_key_file " + copy + "\n";
}

Result<SecurityPlan> MakeSecurityPlan(const Args& args, const std::string& admin) {
  SecurityPlan plan = FERRY_TRY(AuthLines(args, admin));
  plan.config += FERRY_TRY(EncryptionLines(args, admin, &plan));
  plan.config += FERRY_TRY(AuthdbLines(args));
  plan.config += FERRY_TRY(HttpsLines(args));
  const bool ztn = args.GetOr("--auth", "").find("ztn") != std::string::npos;
  if (ztn || args.Has("--https")) {
    plan.config += FERRY_TRY(TlsLines(args, ztn));
  }
  return plan;
}

}  // namespace ferry::cli
