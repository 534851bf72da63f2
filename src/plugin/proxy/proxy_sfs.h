// ProxySfs: the head of the proxy's file-system stack (`xrootd.fslib <lib> default`): XrdOfs
// below does everything, except that a read-only open from a client that is not logged in under
// a synthetic name is answered with a redirect to this same proxy as "ferryc<N>@HOST:PORT"
// (ferry.self). XrdCl keeps one channel (TCP connection, one server link) per host, port and
// user name, so the reopened file gets a link of its own.
//
// Why: XrdXrootd serves the requests of one link one after another, and kXR_readv always runs
// synchronously in the link's thread (5.5.3, XrdXrootdProtocol::do_ReadV). Through a cache a
// cold vector read waits for the origin (a WAN round trip), so a client whose threads read
// several files over its one connection would get one vector read per round trip in all. With
// a link per open, vector reads of different files are served concurrently; plain reads and
// page reads of one file are concurrent anyway (asynchronous I/O, see ProxyFile).
// The cost is one extra round trip per open on the client's side of the proxy, and up to
// ferry.redirect_users idle connections per client process.
//
// It also refuses every request of a client logged in under sss without a name (XRootD 5.5.3
// lets a few bytes of credentials pass as an sss login; see proxy_sfs.cc), and never redirects
// a client that does not follow URL redirects (XrdHttp's bridge): an HTTP client is served here.
// Everything else is forwarded unchanged; wrapped files share XrdOfs's error object.
// Thread-safety: as XrdOfs's.
#pragma once

#include <XrdSfs/XrdSfsInterface.hh>

namespace ferry::proxy {

class ProxyService;

// Wraps `native` (XrdOfs), whether or not opens are redirected (the service decides).
XrdSfsFileSystem* MakeProxySfs(XrdSfsFileSystem* native, ProxyService& service);

}  // namespace ferry::proxy
