#include "rootio/file_header.h"

#include <cstring>
#include <string>

#include "rootio/cursor.h"

namespace ferry::rootio {

Result<FileHeader> ParseFileHeader(std::span<const uint8_t> bytes, uint64_t file_size) {
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "root", 4) != 0) {
    return CorruptionError("not a ROOT file (magic 'root' missing)");
  }
  Cursor c(bytes, 4);
  FileHeader h;
  int32_t v = c.I32();
  h.big = v >= 1000000;
  h.version = h.big ? v - 1000000 : v;
  h.begin = c.I32();
  h.end = c.Seek64(h.big);
  h.seek_free = c.Seek64(h.big);
  h.nbytes_free = c.I32();
  h.nfree = c.I32();
  h.nbytes_name = c.I32();
  h.units = c.U8();
  h.compress = c.I32();
  h.seek_info = c.Seek64(h.big);
  h.nbytes_info = c.I32();
  if (!c.ok()) {
    return CorruptionError("file header truncated");
  }
  if (h.begin < 32 || static_cast<uint64_t>(h.begin) >= file_size) {
    return CorruptionError("file header: fBEGIN " + std::to_string(h.begin)
                           + " is outside the file");
  }
  if (h.nbytes_name <= 0 || h.nbytes_name > 65536) {
    return CorruptionError("file header: bad fNbytesName " + std::to_string(h.nbytes_name));
  }
  if (h.units != 4 && h.units != 8) {
    return CorruptionError("file header: fUnits is " + std::to_string(h.units) + ", not 4 or 8");
  }
  return h;
}

Result<DirectoryRecord> ParseDirectoryRecord(std::span<const uint8_t> bytes) {
  Cursor c(bytes);
  DirectoryRecord d;
  d.version = c.I16();
  bool wide = d.version > 1000;
  c.Skip(8);  // creation and modification TDatime
  d.nbytes_keys = c.I32();
  d.nbytes_name = c.I32();
  d.seek_dir = c.Seek64(wide);
  d.seek_parent = c.Seek64(wide);
  d.seek_keys = c.Seek64(wide);
  if (!c.ok()) {
    return CorruptionError("TDirectory record truncated");
  }
  if (d.nbytes_keys < 0) {
    return CorruptionError("TDirectory record: negative fNbytesKeys");
  }
  return d;
}

}  // namespace ferry::rootio
