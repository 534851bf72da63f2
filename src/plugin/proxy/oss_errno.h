// The errno the proxy's storage plug-in returns for "the origin did not answer in time".
//
// Not ETIMEDOUT: XrdOfs::Emsg (5.5.3, and master) turns ETIMEDOUT from the storage layer into
// a client delay of ofs.osslimit's OSSDelay (30) and EBUSY into 5, and returns that number
// where an error was expected. At open that makes the client wait and retry (kXR_wait); at a
// read, XrdOfsFile::read returns it as the count of bytes read, so the client is handed 30
// bytes of whatever the buffer held, and the next read starts 30 bytes later (seen with an
// origin stopped by SIGSTOP: the read advanced by 30 bytes every ferry.timeout). ETIME ("timer
// expired") is mapped by nothing: the client gets an error whose text says the time ran out.
#pragma once

#include <cerrno>

namespace ferry::proxy {

inline constexpr int kOriginTimedOutErrno = ETIME;

}  // namespace ferry::proxy
