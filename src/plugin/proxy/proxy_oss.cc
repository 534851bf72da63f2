#include "plugin/proxy/proxy_oss.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <XProtocol/XProtocol.hh>
#include <XrdCl/XrdClFileSystem.hh>
#include <XrdCl/XrdClXRootDResponses.hh>

#include "cache/entry_store.h"
#include "cache/url.h"
#include "plugin/proxy/oss_errno.h"
#include "plugin/proxy/proxy_file.h"
#include "plugin/proxy/service.h"

namespace ferry::proxy {
namespace {

// errno for a failed XrdCl request.
int ErrnoOf(const XrdCl::XRootDStatus& st) {
  if (st.code == XrdCl::errErrorResponse) {
    switch (st.errNo) {
      case kXR_NotFound:
        return ENOENT;
      case kXR_NotAuthorized:
        return EACCES;
      case kXR_isDirectory:
        return EISDIR;
      case kXR_NotFile:
        return ENOTDIR;
      default:
        return EIO;
    }
  }
  return st.code == XrdCl::errOperationExpired ? kOriginTimedOutErrno : EIO;  // oss_errno.h
}

void FillStat(struct stat* buf, uint64_t size, int64_t mtime, bool dir) {
  std::memset(buf, 0, sizeof(*buf));
  buf->st_size = static_cast<off_t>(size);
  buf->st_mtime = static_cast<time_t>(mtime);
  buf->st_ctime = buf->st_mtime;
  buf->st_atime = buf->st_mtime;
  buf->st_mode = dir ? (S_IFDIR | 0755) : (S_IFREG | 0644);
  buf->st_nlink = 1;
  buf->st_blksize = 4096;
  buf->st_blocks = static_cast<blkcnt_t>((size + 511) / 512);
}

// A directory of the origin, listed once at Opendir.
class ProxyDir final : public XrdOssDF {
 public:
  ProxyDir(ProxyService& service, const char* trace_id)
      : XrdOssDF(trace_id, DF_isDir), service_(service) {}

  int Opendir(const char* path, XrdOucEnv& /*env*/) override {
    const ProxyConfig& c = service_.config();
    XrdCl::FileSystem fs(XrdCl::URL(c.OriginRoot(path)), /*enablePlugIns=*/false);
    XrdCl::DirectoryList* list = nullptr;
    XrdCl::XRootDStatus st = fs.DirList(path, XrdCl::DirListFlags::None, list, c.timeout_s);
    std::unique_ptr<XrdCl::DirectoryList> owned(list);
    if (!st.IsOK() || list == nullptr) {
      return -ErrnoOf(st);
    }
    for (auto it = list->Begin(); it != list->End(); ++it) {
      names_.push_back((*it)->GetName());
    }
    return XrdOssOK;
  }
  int Readdir(char* buff, int blen) override {
    if (next_ >= names_.size()) {
      *buff = '\0';  // the end of the listing
      return XrdOssOK;
    }
    const std::string& name = names_[next_++];
    if (static_cast<int>(name.size()) >= blen) {
      return -ENAMETOOLONG;
    }
    std::memcpy(buff, name.c_str(), name.size() + 1);
    return XrdOssOK;
  }
  int Close(long long* /*retsz*/) override { return XrdOssOK; }

 private:
  ProxyService& service_;
  std::vector<std::string> names_;
  size_t next_ = 0;
};

}  // namespace

XrdOssDF* ProxyOss::newDir(const char* tident) {
  return new ProxyDir(service_, tident);
}

XrdOssDF* ProxyOss::newFile(const char* tident) {
  return new ProxyFile(service_, tident);
}

int ProxyOss::Stat(const char* path, struct stat* buff, int /*opts*/, XrdOucEnv* /*envP*/) {
  const ProxyConfig& c = service_.config();
  const std::string url = c.OriginUrl(path);
  // A cached file that was validated recently: its size and mtime are in the index (on the
  // first disk in service that has it, as an open finds it).
  if (auto normalized = cache::NormalizeUrl(url, c.cache.url_params)) {
    const std::string key = cache::EntryKey(*normalized);
    for (const std::string& dir : service_.disks().DirsInService()) {
      auto index = cache::LoadIndex(cache::PathsFor(dir, key).idx());
      if (!index) {
        continue;
      }
      const cache::IndexInfo& info = index->info();
      if (info.url == *normalized
          && std::time(nullptr) - info.validated_unix < c.cache.revalidate_s) {
        FillStat(buff, info.origin_size, info.origin_mtime, /*dir=*/false);
        return XrdOssOK;
      }
      break;
    }
  }
  XrdCl::FileSystem fs(XrdCl::URL(c.OriginRoot(path)), /*enablePlugIns=*/false);
  XrdCl::StatInfo* info = nullptr;
  XrdCl::XRootDStatus st = fs.Stat(path, info, c.timeout_s);
  std::unique_ptr<XrdCl::StatInfo> owned(info);
  if (!st.IsOK() || info == nullptr) {
    return -ErrnoOf(st);
  }
  FillStat(buff, info->GetSize(), static_cast<int64_t>(info->GetModTime()),
           info->TestFlags(XrdCl::StatInfo::IsDir));
  return XrdOssOK;
}

}  // namespace ferry::proxy
