// Zero-copy warm serving: XrdXrootd sends a kXR_read from the cache's data file with sendfile
// when every byte of it is held there and was verified by this process; anything else takes
// the normal, verifying read path (ProxyFile::Read).
//
// How XrdXrootd gets there (5.5.3): when a file is opened it asks the head of the file-system
// stack for a descriptor (fctl SFS_FCTL_GETFD); an answer of SFS_SFIO_FDVAL makes it call the
// file's SendData(dio, offset, size) for every kXR_read of at least as_minsfsz bytes (8 KiB) on a
// link without TLS, and when SendData returns SFS_OK without sending, it reads as usual. Vector
// reads (kXR_readv) and page reads (kXR_pgread) never take this path in 5.5.3.
//
// ProxySfs (the head) cannot see the ProxyFile under XrdOfs, so the ProxyFile answers XrdOfs's
// GETFD (XrdOssDF::getFD) with a token: a negative number that no descriptor is, so that
// XrdXrootd would not use it should it ever see it unwrapped. ProxySfs's file looks the token
// up (FindZeroCopy), answers SFS_SFIO_FDVAL instead, and serves SendData with SendZeroCopy.
// A ProxyFile hands out a token only when its entry held at least half of the file at open: a
// colder file keeps XrdXrootd's asynchronous reads, which declined SendData calls would turn
// into synchronous reads of whole requests (in a copy through a cold proxy these outran the
// write-behind queue: dropped writes, bytes fetched twice).
//
// Which bytes are sent: cache::CachedFile::ZeroCopyFd — every page the read touches is in the
// data file at its own offset (full pages; at the edges also fragments kept there) and its
// bytes were read back and CRC-checked by this process since the page last changed
// (cache/verified_pages.h). Those bytes are not checked again when sent.
// What a sent read is told to: the counters (hits, the file's access record), the copy rule
// (CopyThrough::NoteServed) and, unless the handle is a copy, read-ahead
// (CachedFile::FollowZeroCopy), as a read through ProxyFile::Read would have been.
// Thread-safety: all functions may be called concurrently.
#pragma once

#include <memory>

#include <XrdSfs/XrdSfsInterface.hh>

class XrdSfsDio;

namespace ferry::proxy {

struct FileState;

// A token for `state` (registered until ReleaseZeroCopy): negative, never -1 nor
// SFS_SFIO_FDVAL.
int RegisterZeroCopy(const std::shared_ptr<FileState>& state);
void ReleaseZeroCopy(int token);
// True for a value RegisterZeroCopy can return.
bool IsZeroCopyToken(int value);
// The file state of a live token, or null.
std::shared_ptr<FileState> FindZeroCopy(int token);

// XrdSfsFile::SendData for a file whose state is `s`: sends [offset, offset + size) from the
// data file when ZeroCopyFd allows it (SFS_OK), declines otherwise (SFS_OK without sending, so
// XrdXrootd reads); SFS_ERROR when sending failed (the link is gone).
int SendZeroCopy(FileState& s, XrdSfsDio* dio, XrdSfsFileOffset offset, XrdSfsXferSize size);

}  // namespace ferry::proxy
