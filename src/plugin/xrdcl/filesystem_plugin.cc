#include "plugin/xrdcl/filesystem_plugin.h"

#include <XrdCl/XrdClURL.hh>

namespace ferry::plugin {

FerryFileSystem::FerryFileSystem(std::shared_ptr<Context> ctx, const std::string& url)
    : ctx_(std::move(ctx)), inner_(XrdCl::URL(url), /*enablePlugIns=*/false) {
  XrdCl::URL u(url);
  base_url_ = u.GetProtocol() + "://" + u.GetHostId();
}

FerryFileSystem::~FerryFileSystem() = default;

void FerryFileSystem::Invalidate(const std::string& path) {
  if (ctx_->cache) {
    (void)ctx_->cache->Invalidate(base_url_ + "/" + path);
  }
}

using XrdCl::XRootDStatus;

XRootDStatus FerryFileSystem::Locate(const std::string& path,
                                     XrdCl::OpenFlags::Flags flags,
                                     Handler* handler,
                                     uint16_t timeout) {
  return inner_.Locate(path, flags, handler, timeout);
}
XRootDStatus FerryFileSystem::DeepLocate(const std::string& path,
                                         XrdCl::OpenFlags::Flags flags,
                                         Handler* handler,
                                         uint16_t timeout) {
  return inner_.DeepLocate(path, flags, handler, timeout);
}
XRootDStatus FerryFileSystem::Mv(const std::string& source,
                                 const std::string& dest,
                                 Handler* handler,
                                 uint16_t timeout) {
  Invalidate(source);
  Invalidate(dest);
  return inner_.Mv(source, dest, handler, timeout);
}
XRootDStatus FerryFileSystem::Query(XrdCl::QueryCode::Code code,
                                    const XrdCl::Buffer& arg,
                                    Handler* handler,
                                    uint16_t timeout) {
  return inner_.Query(code, arg, handler, timeout);
}
XRootDStatus FerryFileSystem::Truncate(const std::string& path,
                                       uint64_t size,
                                       Handler* handler,
                                       uint16_t timeout) {
  Invalidate(path);
  return inner_.Truncate(path, size, handler, timeout);
}
XRootDStatus FerryFileSystem::Rm(const std::string& path, Handler* handler, uint16_t timeout) {
  Invalidate(path);
  return inner_.Rm(path, handler, timeout);
}
XRootDStatus FerryFileSystem::MkDir(const std::string& path,
                                    XrdCl::MkDirFlags::Flags flags,
                                    XrdCl::Access::Mode mode,
                                    Handler* handler,
                                    uint16_t timeout) {
  return inner_.MkDir(path, flags, mode, handler, timeout);
}
XRootDStatus FerryFileSystem::RmDir(const std::string& path, Handler* handler, uint16_t timeout) {
  return inner_.RmDir(path, handler, timeout);
}
XRootDStatus FerryFileSystem::ChMod(const std::string& path,
                                    XrdCl::Access::Mode mode,
                                    Handler* handler,
                                    uint16_t timeout) {
  return inner_.ChMod(path, mode, handler, timeout);
}
XRootDStatus FerryFileSystem::Ping(Handler* handler, uint16_t timeout) {
  return inner_.Ping(handler, timeout);
}
XRootDStatus FerryFileSystem::Stat(const std::string& path, Handler* handler, uint16_t timeout) {
  return inner_.Stat(path, handler, timeout);
}
XRootDStatus FerryFileSystem::StatVFS(const std::string& path, Handler* handler, uint16_t timeout) {
  return inner_.StatVFS(path, handler, timeout);
}
XRootDStatus FerryFileSystem::Protocol(Handler* handler, uint16_t timeout) {
  return inner_.Protocol(handler, timeout);
}
XRootDStatus FerryFileSystem::DirList(const std::string& path,
                                      XrdCl::DirListFlags::Flags flags,
                                      Handler* handler,
                                      uint16_t timeout) {
  return inner_.DirList(path, flags, handler, timeout);
}
XRootDStatus FerryFileSystem::SendInfo(const std::string& info,
                                       Handler* handler,
                                       uint16_t timeout) {
  return inner_.SendInfo(info, handler, timeout);
}
XRootDStatus FerryFileSystem::Prepare(const std::vector<std::string>& files,
                                      XrdCl::PrepareFlags::Flags flags,
                                      uint8_t priority,
                                      Handler* handler,
                                      uint16_t timeout) {
  return inner_.Prepare(files, flags, priority, handler, timeout);
}
XRootDStatus FerryFileSystem::SetXAttr(const std::string& path,
                                       const std::vector<XrdCl::xattr_t>& attrs,
                                       Handler* handler,
                                       uint16_t timeout) {
  return inner_.SetXAttr(path, attrs, handler, timeout);
}
XRootDStatus FerryFileSystem::GetXAttr(const std::string& path,
                                       const std::vector<std::string>& attrs,
                                       Handler* handler,
                                       uint16_t timeout) {
  return inner_.GetXAttr(path, attrs, handler, timeout);
}
XRootDStatus FerryFileSystem::DelXAttr(const std::string& path,
                                       const std::vector<std::string>& attrs,
                                       Handler* handler,
                                       uint16_t timeout) {
  return inner_.DelXAttr(path, attrs, handler, timeout);
}
XRootDStatus FerryFileSystem::ListXAttr(const std::string& path,
                                        Handler* handler,
                                        uint16_t timeout) {
  return inner_.ListXAttr(path, handler, timeout);
}
bool FerryFileSystem::SetProperty(const std::string& name, const std::string& value) {
  return inner_.SetProperty(name, value);
}
bool FerryFileSystem::GetProperty(const std::string& name, std::string& value) const {
  return inner_.GetProperty(name, value);
}

}  // namespace ferry::plugin
