#include "plugin/proxy/zero_copy.h"

#include <atomic>
#include <climits>
#include <unordered_map>

#include <XrdOuc/XrdOucSFVec.hh>

#include "base/mutex.h"
#include "fetch/range.h"
#include "plugin/proxy/file_state.h"
#include "plugin/proxy/service.h"

#include <XrdSfs/XrdSfsDio.hh>

namespace ferry::proxy {
namespace {

// Tokens are -2, -3, ... down to -kTokenRange, then around again; a token is live only while
// its file is open, so reuse after 2^30 opens meets no live one of the same number.
constexpr int kTokenRange = 1 << 30;

struct Registry {
  Mutex mu;
  std::unordered_map<int, std::weak_ptr<FileState>> files FERRY_GUARDED_BY(mu);
};

Registry& Files() {
  static auto* r = new Registry;  // never destroyed: xrootd has no orderly shutdown
  return *r;
}

std::atomic<uint32_t> next_token{0};

}  // namespace

int RegisterZeroCopy(const std::shared_ptr<FileState>& state) {
  const uint32_t n = next_token.fetch_add(1, std::memory_order_relaxed) % (kTokenRange - 1);
  const int token = -2 - static_cast<int>(n);
  Registry& r = Files();
  MutexLock lock(r.mu);
  r.files[token] = state;
  return token;
}

void ReleaseZeroCopy(int token) {
  Registry& r = Files();
  MutexLock lock(r.mu);
  r.files.erase(token);
}

bool IsZeroCopyToken(int value) {
  return value <= -2 && value > -2 - kTokenRange;
}

std::shared_ptr<FileState> FindZeroCopy(int token) {
  Registry& r = Files();
  MutexLock lock(r.mu);
  auto it = r.files.find(token);
  return it == r.files.end() ? nullptr : it->second.lock();
}

int SendZeroCopy(FileState& s, XrdSfsDio* dio, XrdSfsFileOffset offset, XrdSfsXferSize size) {
  cache::CachedFile* file = s.cached.get();
  const int fd = file != nullptr && offset >= 0 && size > 0
                     ? file->ZeroCopyFd(static_cast<uint64_t>(offset), static_cast<uint64_t>(size))
                     : -1;
  if (fd < 0) {
    s.service.OnZeroCopyDeclined();
    return SFS_OK;  // nothing sent: XrdXrootd reads through ProxyFile::Read
  }
  // The first element is XrdXrootd's (the response header).
  XrdOucSFVec vec[2] = {};
  vec[1].offset = offset;
  vec[1].sendsz = size;
  vec[1].fdnum = fd;
  const int rc = dio->SendFile(vec, 2);
  if (rc < 0) {
    return SFS_ERROR;  // the link failed: XrdXrootd closes it
  }
  const auto bytes = static_cast<uint64_t>(size);
  file->CountZeroCopy(bytes);
  // What ProxyFile::Read would have told the copy rule and read-ahead: a copy's progress, and
  // the reads read-ahead goes on from into what the file does not hold yet. Not for a copy
  // recognised: its reads through the cache are untracked, so as not to cache past the
  // fraction (copy_through.h).
  const fetch::Range sent{static_cast<uint64_t>(offset), bytes};
  if (!s.copy || !s.copy->NoteServed(sent)) {
    file->FollowZeroCopy(sent.offset, sent.length);
  }
  s.reads.fetch_add(1, std::memory_order_relaxed);
  s.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
  s.service.OnZeroCopy(bytes);
  return SFS_OK;
}

}  // namespace ferry::proxy
