// FerryFileSystem: the FileSystemPlugIn of the ferry cache. Everything is forwarded to an inner
// XrdCl::FileSystem(url, false); Rm, Mv and Truncate also drop the cached copy of the files
// they change. (Returning no file-system plug-in would work too, but XrdCl then logs an
// error for every FileSystem object of a configured URL.)
// Thread-safety: as XrdCl::FileSystem.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <XrdCl/XrdClFileSystem.hh>
#include <XrdCl/XrdClPlugInInterface.hh>

#include "plugin/xrdcl/context.h"

namespace ferry::plugin {

class FerryFileSystem final : public XrdCl::FileSystemPlugIn {
 public:
  FerryFileSystem(std::shared_ptr<Context> ctx, const std::string& url);
  ~FerryFileSystem() override;
  FerryFileSystem(const FerryFileSystem&) = delete;
  FerryFileSystem& operator=(const FerryFileSystem&) = delete;

  using XRootDStatus = XrdCl::XRootDStatus;
  using Handler = XrdCl::ResponseHandler;

  XRootDStatus Locate(const std::string& path,
                      XrdCl::OpenFlags::Flags flags,
                      Handler* handler,
                      uint16_t timeout) override;
  XRootDStatus DeepLocate(const std::string& path,
                          XrdCl::OpenFlags::Flags flags,
                          Handler* handler,
                          uint16_t timeout) override;
  XRootDStatus Mv(const std::string& source,
                  const std::string& dest,
                  Handler* handler,
                  uint16_t timeout) override;
  XRootDStatus Query(XrdCl::QueryCode::Code code,
                     const XrdCl::Buffer& arg,
                     Handler* handler,
                     uint16_t timeout) override;
  XRootDStatus Truncate(const std::string& path,
                        uint64_t size,
                        Handler* handler,
                        uint16_t timeout) override;
  XRootDStatus Rm(const std::string& path, Handler* handler, uint16_t timeout) override;
  XRootDStatus MkDir(const std::string& path,
                     XrdCl::MkDirFlags::Flags flags,
                     XrdCl::Access::Mode mode,
                     Handler* handler,
                     uint16_t timeout) override;
  XRootDStatus RmDir(const std::string& path, Handler* handler, uint16_t timeout) override;
  XRootDStatus ChMod(const std::string& path,
                     XrdCl::Access::Mode mode,
                     Handler* handler,
                     uint16_t timeout) override;
  XRootDStatus Ping(Handler* handler, uint16_t timeout) override;
  XRootDStatus Stat(const std::string& path, Handler* handler, uint16_t timeout) override;
  XRootDStatus StatVFS(const std::string& path, Handler* handler, uint16_t timeout) override;
  XRootDStatus Protocol(Handler* handler, uint16_t timeout) override;
  XRootDStatus DirList(const std::string& path,
                       XrdCl::DirListFlags::Flags flags,
                       Handler* handler,
                       uint16_t timeout) override;
  XRootDStatus SendInfo(const std::string& info, Handler* handler, uint16_t timeout) override;
  XRootDStatus Prepare(const std::vector<std::string>& files,
                       XrdCl::PrepareFlags::Flags flags,
                       uint8_t priority,
                       Handler* handler,
                       uint16_t timeout) override;
  XRootDStatus SetXAttr(const std::string& path,
                        const std::vector<XrdCl::xattr_t>& attrs,
                        Handler* handler,
                        uint16_t timeout) override;
  XRootDStatus GetXAttr(const std::string& path,
                        const std::vector<std::string>& attrs,
                        Handler* handler,
                        uint16_t timeout) override;
  XRootDStatus DelXAttr(const std::string& path,
                        const std::vector<std::string>& attrs,
                        Handler* handler,
                        uint16_t timeout) override;
  XRootDStatus ListXAttr(const std::string& path, Handler* handler, uint16_t timeout) override;
  bool SetProperty(const std::string& name, const std::string& value) override;
  bool GetProperty(const std::string& name, std::string& value) const override;

 private:
  // Drops the cached copy of `path` on this file system's endpoint.
  void Invalidate(const std::string& path);

  std::shared_ptr<Context> ctx_;
  std::string base_url_;  // scheme://[user@]host:port
  XrdCl::FileSystem inner_;
};

}  // namespace ferry::plugin
