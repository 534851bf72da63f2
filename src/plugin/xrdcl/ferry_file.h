// FerryFile: the XrdCl FilePlugIn of the ferry cache (one per XrdCl::File the application
// opens for a configured URL).
//
// - Read, PgRead and VectorRead are served by the cache engine (cache::CachedFile). Requests
//   the cache holds completely are answered inline; others run on the plug-in's worker threads
//   (they may wait for the origin). PgRead answers carry the CRC32C of every 4 KiB page segment
//   (aligned to file offsets), as XRootD's kXR_pgread does.
// - Every other FilePlugIn method of the XRootD 5.5.3 headers is forwarded to the inner
//   XrdCl::File(false), which is opened lazily: a pass over cached bytes never contacts the
//   origin (Stat is answered from the cache's size and mtime unless forced).
// - A write-mode open, or any write/truncate, makes the handle a pass-through and drops the
//   cached copy of the file.
// - If the cache cannot answer (fault, or the origin failed inside the cache), the request is
//   forwarded to the origin as it is, so the application gets the origin's own answer.
//
// Lifetime: the mutable state lives in a shared FileState that in-flight tasks keep alive, so
// XrdCl may delete the FerryFile while a task still runs (the task then only answers its
// handler). Thread-safety: XrdCl may call any method from any thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <XrdCl/XrdClPlugInInterface.hh>

#include "plugin/xrdcl/context.h"

namespace ferry::plugin {

struct FileState;

class FerryFile final : public XrdCl::FilePlugIn {
 public:
  explicit FerryFile(std::shared_ptr<Context> ctx);
  ~FerryFile() override;
  FerryFile(const FerryFile&) = delete;
  FerryFile& operator=(const FerryFile&) = delete;

  XrdCl::XRootDStatus Open(const std::string& url,
                           XrdCl::OpenFlags::Flags flags,
                           XrdCl::Access::Mode mode,
                           XrdCl::ResponseHandler* handler,
                           uint16_t timeout) override;
  XrdCl::XRootDStatus Close(XrdCl::ResponseHandler* handler, uint16_t timeout) override;
  XrdCl::XRootDStatus Stat(bool force, XrdCl::ResponseHandler* handler, uint16_t timeout) override;
  XrdCl::XRootDStatus Read(uint64_t offset,
                           uint32_t size,
                           void* buffer,
                           XrdCl::ResponseHandler* handler,
                           uint16_t timeout) override;
  XrdCl::XRootDStatus Read(uint64_t offset,
                           uint32_t size,
                           XrdCl::Optional<uint64_t> fdoff,
                           int fd,
                           XrdCl::ResponseHandler* handler,
                           uint16_t timeout) override;
  XrdCl::XRootDStatus PgRead(uint64_t offset,
                             uint32_t size,
                             void* buffer,
                             XrdCl::ResponseHandler* handler,
                             uint16_t timeout) override;
  XrdCl::XRootDStatus Write(uint64_t offset,
                            uint32_t size,
                            const void* buffer,
                            XrdCl::ResponseHandler* handler,
                            uint16_t timeout) override;
  XrdCl::XRootDStatus Write(uint64_t offset,
                            XrdCl::Buffer&& buffer,
                            XrdCl::ResponseHandler* handler,
                            uint16_t timeout) override;
  XrdCl::XRootDStatus Write(uint64_t offset,
                            uint32_t size,
                            XrdCl::Optional<uint64_t> fdoff,
                            int fd,
                            XrdCl::ResponseHandler* handler,
                            uint16_t timeout) override;
  XrdCl::XRootDStatus PgWrite(uint64_t offset,
                              uint32_t nbpgs,
                              const void* buffer,
                              std::vector<uint32_t>& cksums,
                              XrdCl::ResponseHandler* handler,
                              uint16_t timeout) override;
  XrdCl::XRootDStatus Sync(XrdCl::ResponseHandler* handler, uint16_t timeout) override;
  XrdCl::XRootDStatus Truncate(uint64_t size,
                               XrdCl::ResponseHandler* handler,
                               uint16_t timeout) override;
  XrdCl::XRootDStatus VectorRead(const XrdCl::ChunkList& chunks,
                                 void* buffer,
                                 XrdCl::ResponseHandler* handler,
                                 uint16_t timeout) override;
  XrdCl::XRootDStatus VectorWrite(const XrdCl::ChunkList& chunks,
                                  XrdCl::ResponseHandler* handler,
                                  uint16_t timeout) override;
  XrdCl::XRootDStatus WriteV(uint64_t offset,
                             const struct iovec* iov,
                             int iovcnt,
                             XrdCl::ResponseHandler* handler,
                             uint16_t timeout) override;
  XrdCl::XRootDStatus Fcntl(const XrdCl::Buffer& arg,
                            XrdCl::ResponseHandler* handler,
                            uint16_t timeout) override;
  XrdCl::XRootDStatus Visa(XrdCl::ResponseHandler* handler, uint16_t timeout) override;
  bool IsOpen() const override;
  bool SetProperty(const std::string& name, const std::string& value) override;
  bool GetProperty(const std::string& name, std::string& value) const override;

 private:
  std::shared_ptr<Context> ctx_;
  std::shared_ptr<FileState> state_;
  std::vector<std::pair<std::string, std::string>> pending_properties_;
};

// CRC32C of each 4 KiB page segment of [offset, offset + size), pages aligned to file offsets
// (what XRootD's page reads carry).
std::vector<uint32_t> PageChecksums(uint64_t offset, const uint8_t* data, size_t size);

}  // namespace ferry::plugin
