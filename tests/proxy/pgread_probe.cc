// pgread_probe URL OFFSET LENGTH OUT: one kXR_pgread through XrdCl (no client plug-ins), the
// page checksums of the answer checked against the data, the data written to OUT. Prints
// {"bytes":N,"pages":N,"crc_ok":true|false,"repaired":N,...} and exits 0, or 1 with the XRootD
// error. `repaired`: pages XrdCl read again because their checksum did not match (it does so by
// itself, one request per page; a server that answers a page read's chunks out of order makes
// XrdCl 5.5 pair pages with the wrong checksums). Used by tests/proxy/test_proxy.py: Python's
// XRootD bindings have no page read.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include <XrdCl/XrdClFile.hh>
#include <XrdCl/XrdClXRootDResponses.hh>

#include "base/crc32c.h"

namespace {

class Wait final : public XrdCl::ResponseHandler {
 public:
  void HandleResponse(XrdCl::XRootDStatus* st, XrdCl::AnyObject* resp) override {
    status.reset(st);
    response.reset(resp);
    sem.Post();
  }
  XrdSysSemaphore sem{0};
  std::unique_ptr<XrdCl::XRootDStatus> status;
  std::unique_ptr<XrdCl::AnyObject> response;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: pgread_probe URL OFFSET LENGTH OUT\n");
    return 2;
  }
  const uint64_t offset = std::strtoull(argv[2], nullptr, 10);
  const auto length = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
  XrdCl::File file(false);
  XrdCl::XRootDStatus st = file.Open(argv[1], XrdCl::OpenFlags::Read);
  if (!st.IsOK()) {
    std::fprintf(stderr, "open: %s\n", st.ToString().c_str());
    return 1;
  }
  std::vector<char> buf(length);
  Wait w;
  st = file.PgRead(offset, length, buf.data(), &w);
  if (st.IsOK()) {
    w.sem.Wait();
    st = *w.status;
  }
  if (!st.IsOK()) {
    std::fprintf(stderr, "pgread: %s\n", st.ToString().c_str());
    return 1;
  }
  XrdCl::PageInfo* info = nullptr;
  w.response->Get(info);
  const uint64_t n = info->GetLength();
  const std::vector<uint32_t>& crcs = info->GetCksums();
  // The answer's checksums: one per 4 KiB page segment aligned to file offsets.
  bool crc_ok = true;
  // The segments whose checksum does not match, for the test's message.
  long first_bad = -1;
  size_t bad = 0;
  size_t k = 0;
  for (uint64_t pos = offset; pos < offset + n; ++k) {
    const uint64_t stop = std::min<uint64_t>(offset + n, (pos / 4096 + 1) * 4096);
    if (k >= crcs.size()
        || crcs[k] != ferry::crc32c::Value(buf.data() + (pos - offset), stop - pos)) {
      crc_ok = false;
      first_bad = first_bad < 0 ? static_cast<long>(k) : first_bad;
      ++bad;
    }
    pos = stop;
  }
  crc_ok = crc_ok && k == crcs.size();
  std::ofstream(argv[4], std::ios::binary).write(buf.data(), static_cast<std::streamsize>(n));
  std::printf(
      "{\"bytes\":%llu,\"pages\":%zu,\"crc_ok\":%s,\"repaired\":%zu,\"bad\":%zu,"
      "\"first_bad\":%ld}\n",
      static_cast<unsigned long long>(n), crcs.size(), crc_ok ? "true" : "false",
      static_cast<size_t>(info->GetNbRepair()), bad, first_bad);
  XrdCl::XRootDStatus closed = file.Close();
  return closed.IsOK() ? 0 : 1;
}
