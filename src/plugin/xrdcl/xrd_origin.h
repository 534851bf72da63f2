// XrdOrigin: cache::Origin over XrdCl, for the plug-in.
//
// Channel 0 is the plug-in's inner XrdCl::File(false) (no plug-ins: it would load us again),
// opened lazily with the application's flags the first time anything needs the origin, so a
// fully cached pass never contacts it. Channels 1..N-1 are extra XrdCl::Files on separate
// connections (XrdCl shares one connection per host:port and user, so the URL of channel k
// carries the user name "ferryk"; only when the URL names no user). They open in the
// background the first time the cache has concurrent requests (PrepareChannels) and are used
// once ready; a reader with one request at a time never needs them.
//
// Read(): each OriginRead becomes one XrdCl VectorRead (or Read for one range) on its channel;
// all are issued at once, then awaited (XrdCl answers every request within its timeout).
// Errors map to ferry codes: timeouts -> kTimeout, socket/connection errors and server-side
// I/O errors -> kIo (both retried by the cache), "not found" -> kNotFound, refusals ->
// kPermission, other server errors -> kRemote.
//
// Recovery: when a request fails because the connection or the file handle is gone (the origin
// restarted), channel 0 is reopened (a new XrdCl::File) before the next read, so the cache's
// retries complete once the origin is back.
// Reuse (the site proxy keeps closed handles idle for the next open of the same URL):
// reusable() is false once any open, stat or read of the handle failed; MarkReused() makes
// the next Stat() ask the origin again by path instead of answering from the open's stat
// (which may be older than the cache's revalidation window), and a file that changed since
// the handle opened makes the handle reopen channel 0, drop its extra channels and stop being
// reusable. The client plug-in uses none of this.
//
// Lifetime: always held by a shared_ptr; asynchronous opens and closes of the extra channels
// keep it alive until they complete (the last reference is then dropped off XrdCl's thread).
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <XrdCl/XrdClFile.hh>

#include "base/mutex.h"
#include "cache/origin.h"
#include "plugin/xrdcl/worker_pool.h"

namespace ferry::plugin {

// ferry Error for an XRootD status (see above).
Error ToError(const XrdCl::XRootDStatus& st, const std::string& what);

class XrdOrigin final : public cache::Origin, public std::enable_shared_from_this<XrdOrigin> {
 public:
  // `pool` runs deferred releases; `exiting` (set at process exit) makes them leak instead.
  XrdOrigin(std::string url,
            XrdCl::OpenFlags::Flags flags,
            XrdCl::Access::Mode mode,
            uint16_t timeout,
            size_t channels,
            WorkerPool* pool,
            const std::atomic<bool>* exiting);
  ~XrdOrigin() override;
  XrdOrigin(const XrdOrigin&) = delete;
  XrdOrigin& operator=(const XrdOrigin&) = delete;

  // Opens channel 0 when needed (blocking); returns the status of that open (cached).
  XrdCl::XRootDStatus EnsureOpen();
  bool is_open() const { return open_.load(std::memory_order_acquire); }
  // The file of channel 0 (a fresh one after a reopen; earlier ones stay alive for requests
  // still using them).
  XrdCl::File& inner() { return *main_.load(std::memory_order_acquire); }
  const std::string& url() const { return url_; }

  Result<cache::OriginInfo> Stat() override;
  void Read(std::span<cache::OriginRead> reads) override;
  size_t channels() const override { return files_.size(); }
  bool channel_ready(size_t channel) const override;
  void PrepareChannels() override;

  // Closes the extra channels asynchronously (also those still opening, once they open).
  void CloseExtraChannels();
  // Closes channel 0 asynchronously; the answer is dropped (a read-only handle of the cache:
  // nothing the origin says at close changes what was read).
  void CloseInBackground();

  // False once an open, stat or read of this handle failed, or its file changed at the origin
  // (see MarkReused): such a handle is closed, never kept for another open.
  bool reusable() const {
    return is_open() && !failed_.load(std::memory_order_acquire)
           && !broken_.load(std::memory_order_acquire);
  }
  // The handle is handed to a new open: its next Stat() stats the path at the origin.
  void MarkReused() { restat_.store(true, std::memory_order_release); }
  // Counts every open of channel 0 sent to the origin in `*counter` (set before first use).
  void CountOpensIn(std::atomic<uint64_t>* counter) { opens_counter_ = counter; }

  // A request on `channel` failed in a way that leaves its XrdCl::File unusable (connection
  // lost, file handle gone): channel 0 is reopened before the next read, others are dropped.
  void MarkBroken(size_t channel);
  // A request failed (any error): the handle is not kept for another open.
  void MarkFailed() { failed_.store(true, std::memory_order_release); }

  // Called by the channel open handler.
  void OnChannelOpened(size_t k, bool ok);
  void OnChannelClosed(size_t k);

 private:
  enum class ChannelState { kIdle, kOpening, kOpen, kClosing, kDone };
  struct Channel {
    XrdCl::File file{false};
    std::atomic<bool> ready{false};
    ChannelState state = ChannelState::kIdle;  // guarded by channels_mu_
  };
  void OpenExtraChannels();
  void CloseChannelLocked(size_t k) FERRY_REQUIRES(channels_mu_);
  // Sends the close of `file` (channel k) with a handler that ends in OnChannelClosed(k);
  // false when XrdCl refused the request.
  bool SendClose(XrdCl::File& file, size_t k);
  // Reopens channel 0 after MarkBroken(0); the status of that open.
  XrdCl::XRootDStatus Reopen();
  // Stat() of a reused handle: the path's stat at the origin now (see MarkReused).
  Result<cache::OriginInfo> Restat();
  void CountOpen() {
    if (opens_counter_ != nullptr) {
      opens_counter_->fetch_add(1, std::memory_order_relaxed);
    }
  }

  const std::string url_;
  const XrdCl::OpenFlags::Flags flags_;
  const XrdCl::Access::Mode mode_;
  const uint16_t timeout_;
  std::vector<std::unique_ptr<Channel>> files_;
  Mutex open_mu_;
  bool open_tried_ FERRY_GUARDED_BY(open_mu_) = false;
  XrdCl::XRootDStatus open_status_ FERRY_GUARDED_BY(open_mu_);
  std::atomic<bool> open_{false};
  std::atomic<XrdCl::File*> main_{nullptr};
  std::atomic<bool> broken_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> restat_{false};
  std::atomic<uint64_t>* opens_counter_ = nullptr;
  std::vector<std::unique_ptr<XrdCl::File>> reopened_ FERRY_GUARDED_BY(open_mu_);
  // Guards every Channel's `state` too (a member of another struct, which the analysis cannot
  // name): OpenExtraChannels, OnChannelOpened/Closed and CloseChannelLocked hold it.
  Mutex channels_mu_;
  bool closing_ FERRY_GUARDED_BY(channels_mu_) = false;
  bool extra_started_ FERRY_GUARDED_BY(channels_mu_) = false;
  WorkerPool* pool_;
  const std::atomic<bool>* exiting_;

 public:
  // Drops a reference on a worker, so that an object owning XrdCl::Files is never destroyed
  // inside a callback of one of them; at process exit the reference is leaked instead.
  static void ReleaseLater(std::shared_ptr<XrdOrigin> origin);
};

// URL of extra channel k: "root://host..." -> "root://ferryk@host..." (unchanged when the URL
// already names a user, or k == 0).
std::string ChannelUrl(const std::string& url, size_t k);

}  // namespace ferry::plugin
