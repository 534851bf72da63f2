#include "plugin/proxy/proxy_sfs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <XrdOuc/XrdOucErrInfo.hh>

#include "base/log.h"
#include "plugin/proxy/file_state.h"
#include "plugin/proxy/service.h"
#include "plugin/proxy/zero_copy.h"

#include <XrdSec/XrdSecEntity.hh>

namespace ferry::proxy {
namespace {

bool ReadOnly(XrdSfsFileOpenMode mode) {
  return (mode & (SFS_O_WRONLY | SFS_O_RDWR | SFS_O_CREAT | SFS_O_TRUNC)) == 0;
}

// XRootD 5.5.3's sss plug-in answers credentials shorter than its own header with success
// (XrdSecProtocolsss::Authenticate returns Fatal(), which returns 0): the client is logged in
// under protocol sss with no name, having sent a few bytes instead of a key. Such a client did
// not authenticate; it gets nothing, not even what the authdb opens to everyone.
bool KeylessSss(const XrdSecEntity* client) {
  return client != nullptr && std::strcmp(client->prot, "sss") == 0
         && (client->name == nullptr || client->name[0] == '\0');
}

// Logged once per refused request with the client's trace identifier (login name, process,
// and the peer's address), at warn: XrdXrootd's own lines for it do not say why.
int RefuseKeyless(XrdOucErrInfo& e, const char* path) {
  e.setErrInfo(EACCES, "not authenticated");
  const char* who = e.getErrUser();
  FERRY_WARN("proxy", "refused %s to %s: an sss login without a key",
             path != nullptr ? path : "a request", who != nullptr ? who : "?");
  return SFS_ERROR;
}

// The login name of a trace identifier "user.pid:fd@host".
std::string LoginOf(const char* tident) {
  std::string t = tident != nullptr ? tident : "";
  const size_t end = t.find_first_of(".:@");
  return end == std::string::npos ? t : t.substr(0, end);
}

// The self-redirect target: root://ferryc<N>@HOST:PORT///PATH?CGI. XrdCl (5.5) follows a
// redirect to a new channel only when the target's location (protocol, host, port and path,
// without the user) differs from where the request was sent; it was sent either with the
// client's own path ("root://h:p//f", or "root://h:p/f") or, after a cluster redirector, with
// none ("root://h:p/"). A path with three slashes differs from all of them, and XrdXrootd
// squashes it back to /f.
std::string SelfTarget(ProxyService& service, const char* path, const char* opaque) {
  const ProxyConfig& c = service.config();
  std::string url = "root://" + service.NextSyntheticUser() + "@" + c.self_host() + ":"
                    + std::to_string(c.self_port()) + "//";
  url += path[0] == '/' ? path : "/" + std::string(path);
  if (opaque != nullptr && opaque[0] != '\0') {
    url += '?';
    url += opaque;
  }
  return url;
}

class RedirectingFile final : public XrdSfsFile {
 public:
  RedirectingFile(XrdSfsFile* inner, const char* tident, ProxyService& service)
      : XrdSfsFile(*inner), inner_(inner), login_(LoginOf(tident)), service_(service) {}
  ~RedirectingFile() override { delete inner_; }
  RedirectingFile(const RedirectingFile&) = delete;
  RedirectingFile& operator=(const RedirectingFile&) = delete;

  int open(const char* path,
           XrdSfsFileOpenMode mode,
           mode_t create_mode,
           const XrdSecEntity* client,
           const char* opaque) override {
    if (KeylessSss(client)) {
      return RefuseKeyless(error, path);
    }
    if (service_.config().redirects() && ReadOnly(mode) && FollowsUrlRedirects()
        && !ProxyService::IsSyntheticUser(login_)) {
      const std::string target = SelfTarget(service_, path, opaque);
      // Port -1: XrdCl takes the message as the whole target URL.
      error.setErrInfo(-1, target.c_str());
      service_.OnRedirect();
      FERRY_DEBUG("proxy", "open %s by %s: redirected to %s", path, login_.c_str(), target.c_str());
      return SFS_REDIRECT;
    }
    const int rc = inner_->open(path, mode, create_mode, client, opaque);
    FERRY_DEBUG("proxy", "open %s by %s: %d (%s:%d)", path, login_.c_str(), rc, error.getErrText(),
                error.getErrInfo());
    return rc;
  }

  // The self-redirect is a whole URL (root://ferryc<N>@...): only for clients that declared
  // they follow URL redirects (XrdCl does). XrdHttp's requests come through XrdXrootd's bridge,
  // which declares nothing, so an HTTP client is served here and never sees a root:// URL.
  bool FollowsUrlRedirects() { return (error.getUCap() & XrdOucEI::uUrlOK) != 0; }

  int checkpoint(cpAct act, struct iov* range, int n) override {
    return inner_->checkpoint(act, range, n);
  }
  int close() override {
    zero_copy_.reset();
    return inner_->close();
  }
  // XrdXrootd asks for a descriptor once per open (zero_copy.h): the ProxyFile's token becomes
  // SFS_SFIO_FDVAL, and this file's SendData serves reads from the cache's data file.
  int fctl(const int cmd, const char* args, XrdOucErrInfo& e) override {
    const int rc = inner_->fctl(cmd, args, e);
    if (cmd == SFS_FCTL_GETFD && rc == SFS_OK && IsZeroCopyToken(e.getErrInfo())) {
      zero_copy_ = FindZeroCopy(e.getErrInfo());
      e.setErrCode(zero_copy_ ? static_cast<int>(SFS_SFIO_FDVAL) : -1);
    }
    return rc;
  }
  int fctl(const int cmd, int alen, const char* args, const XrdSecEntity* client) override {
    return inner_->fctl(cmd, alen, args, client);
  }
  const char* FName() override { return inner_->FName(); }
  int getMmap(void** addr, off_t& size) override { return inner_->getMmap(addr, size); }
  XrdSfsXferSize pgRead(XrdSfsFileOffset offset,
                        char* buffer,
                        XrdSfsXferSize rdlen,
                        uint32_t* csvec,
                        uint64_t opts) override {
    return inner_->pgRead(offset, buffer, rdlen, csvec, opts);
  }
  int pgRead(XrdSfsAio* aio, uint64_t opts) override { return inner_->pgRead(aio, opts); }
  XrdSfsXferSize pgWrite(XrdSfsFileOffset offset,
                         char* buffer,
                         XrdSfsXferSize wrlen,
                         uint32_t* csvec,
                         uint64_t opts) override {
    return inner_->pgWrite(offset, buffer, wrlen, csvec, opts);
  }
  int pgWrite(XrdSfsAio* aio, uint64_t opts) override { return inner_->pgWrite(aio, opts); }
  XrdSfsXferSize read(XrdSfsFileOffset offset, XrdSfsXferSize size) override {
    return inner_->read(offset, size);
  }
  XrdSfsXferSize read(XrdSfsFileOffset offset, char* buffer, XrdSfsXferSize size) override {
    return inner_->read(offset, buffer, size);
  }
  int read(XrdSfsAio* aio) override { return inner_->read(aio); }
  XrdSfsXferSize readv(XrdOucIOVec* vec, int n) override { return inner_->readv(vec, n); }
  int SendData(XrdSfsDio* dio, XrdSfsFileOffset offset, XrdSfsXferSize size) override {
    return zero_copy_ ? SendZeroCopy(*zero_copy_, dio, offset, size)
                      : inner_->SendData(dio, offset, size);
  }
  XrdSfsXferSize write(XrdSfsFileOffset offset, const char* buffer, XrdSfsXferSize size) override {
    return inner_->write(offset, buffer, size);
  }
  int write(XrdSfsAio* aio) override { return inner_->write(aio); }
  XrdSfsXferSize writev(XrdOucIOVec* vec, int n) override { return inner_->writev(vec, n); }
  int stat(struct stat* buf) override { return inner_->stat(buf); }
  int sync() override { return inner_->sync(); }
  int sync(XrdSfsAio* aio) override { return inner_->sync(aio); }
  int truncate(XrdSfsFileOffset size) override { return inner_->truncate(size); }
  int getCXinfo(char type[4], int& size) override { return inner_->getCXinfo(type, size); }
  void setXio(XrdSfsXio* xio) override { inner_->setXio(xio); }

 private:
  XrdSfsFile* inner_;
  std::string login_;
  ProxyService& service_;
  // The open ProxyFile's state when it serves zero-copy (set by fctl GETFD, reset at close).
  std::shared_ptr<FileState> zero_copy_;
};

// A directory listing: refused to keyless sss logins, else XrdOfs's (which authorises it).
class GuardedDir final : public XrdSfsDirectory {
 public:
  explicit GuardedDir(XrdSfsDirectory* inner) : XrdSfsDirectory(*inner), inner_(inner) {}
  ~GuardedDir() override { delete inner_; }
  GuardedDir(const GuardedDir&) = delete;
  GuardedDir& operator=(const GuardedDir&) = delete;

  int open(const char* path, const XrdSecEntity* client, const char* opaque) override {
    return KeylessSss(client) ? RefuseKeyless(error, path) : inner_->open(path, client, opaque);
  }
  const char* nextEntry() override { return inner_->nextEntry(); }
  int close() override { return inner_->close(); }
  const char* FName() override { return inner_->FName(); }
  int autoStat(struct stat* buf) override { return inner_->autoStat(buf); }

 private:
  XrdSfsDirectory* inner_;
};

class ProxySfs final : public XrdSfsFileSystem {
 public:
  ProxySfs(XrdSfsFileSystem* native, ProxyService& service) : native_(native), service_(service) {
    FeatureSet = native->Features();
  }

  XrdSfsDirectory* newDir(char* user, int mon) override {
    XrdSfsDirectory* d = native_->newDir(user, mon);
    return d != nullptr ? new GuardedDir(d) : nullptr;
  }
  XrdSfsDirectory* newDir(XrdOucErrInfo& e) override {
    XrdSfsDirectory* d = native_->newDir(e);
    return d != nullptr ? new GuardedDir(d) : nullptr;
  }
  XrdSfsFile* newFile(char* user, int mon) override {
    XrdSfsFile* f = native_->newFile(user, mon);
    return f != nullptr ? new RedirectingFile(f, user, service_) : nullptr;
  }
  XrdSfsFile* newFile(XrdOucErrInfo& e) override {
    XrdSfsFile* f = native_->newFile(e);
    return f != nullptr ? new RedirectingFile(f, e.getErrUser(), service_) : nullptr;
  }

  int chksum(csFunc func,
             const char* csname,
             const char* path,
             XrdOucErrInfo& e,
             const XrdSecEntity* client,
             const char* opaque) override {
    return KeylessSss(client) ? RefuseKeyless(e, path)
                              : native_->chksum(func, csname, path, e, client, opaque);
  }
  int chmod(const char* path,
            XrdSfsMode mode,
            XrdOucErrInfo& e,
            const XrdSecEntity* client,
            const char* opaque) override {
    return native_->chmod(path, mode, e, client, opaque);
  }
  void Connect(const XrdSecEntity* client) override { native_->Connect(client); }
  void Disc(const XrdSecEntity* client) override { native_->Disc(client); }
  void EnvInfo(XrdOucEnv* env) override { native_->EnvInfo(env); }
  int exists(const char* path,
             XrdSfsFileExistence& how,
             XrdOucErrInfo& e,
             const XrdSecEntity* client,
             const char* opaque) override {
    return KeylessSss(client) ? RefuseKeyless(e, path)
                              : native_->exists(path, how, e, client, opaque);
  }
  int FAttr(XrdSfsFACtl* req, XrdOucErrInfo& e, const XrdSecEntity* client) override {
    return native_->FAttr(req, e, client);
  }
  int FSctl(const int cmd,
            XrdSfsFSctl& args,
            XrdOucErrInfo& e,
            const XrdSecEntity* client) override {
    // Arg1 is not terminated: not logged.
    return KeylessSss(client) ? RefuseKeyless(e, nullptr) : native_->FSctl(cmd, args, e, client);
  }
  int fsctl(const int cmd,
            const char* args,
            XrdOucErrInfo& e,
            const XrdSecEntity* client) override {
    return KeylessSss(client) ? RefuseKeyless(e, args) : native_->fsctl(cmd, args, e, client);
  }
  int getChkPSize() override { return native_->getChkPSize(); }
  int getStats(char* buff, int blen) override { return native_->getStats(buff, blen); }
  const char* getVersion() override { return native_->getVersion(); }
  int gpFile(gpfFunc& act,
             XrdSfsGPFile& gpreq,
             XrdOucErrInfo& e,
             const XrdSecEntity* client) override {
    return native_->gpFile(act, gpreq, e, client);
  }
  int mkdir(const char* path,
            XrdSfsMode mode,
            XrdOucErrInfo& e,
            const XrdSecEntity* client,
            const char* opaque) override {
    return native_->mkdir(path, mode, e, client, opaque);
  }
  int prepare(XrdSfsPrep& pargs, XrdOucErrInfo& e, const XrdSecEntity* client) override {
    return native_->prepare(pargs, e, client);
  }
  int rem(const char* path,
          XrdOucErrInfo& e,
          const XrdSecEntity* client,
          const char* opaque) override {
    return native_->rem(path, e, client, opaque);
  }
  int remdir(const char* path,
             XrdOucErrInfo& e,
             const XrdSecEntity* client,
             const char* opaque) override {
    return native_->remdir(path, e, client, opaque);
  }
  int rename(const char* from,
             const char* to,
             XrdOucErrInfo& e,
             const XrdSecEntity* client,
             const char* opaque_from,
             const char* opaque_to) override {
    return native_->rename(from, to, e, client, opaque_from, opaque_to);
  }
  int stat(const char* path,
           struct stat* buf,
           XrdOucErrInfo& e,
           const XrdSecEntity* client,
           const char* opaque) override {
    return KeylessSss(client) ? RefuseKeyless(e, path)
                              : native_->stat(path, buf, e, client, opaque);
  }
  int stat(const char* path,
           mode_t& mode,
           XrdOucErrInfo& e,
           const XrdSecEntity* client,
           const char* opaque) override {
    return KeylessSss(client) ? RefuseKeyless(e, path)
                              : native_->stat(path, mode, e, client, opaque);
  }
  int truncate(const char* path,
               XrdSfsFileOffset size,
               XrdOucErrInfo& e,
               const XrdSecEntity* client,
               const char* opaque) override {
    return native_->truncate(path, size, e, client, opaque);
  }

 private:
  XrdSfsFileSystem* native_;
  ProxyService& service_;
};

}  // namespace

XrdSfsFileSystem* MakeProxySfs(XrdSfsFileSystem* native, ProxyService& service) {
  return new ProxySfs(native, service);
}

}  // namespace ferry::proxy
