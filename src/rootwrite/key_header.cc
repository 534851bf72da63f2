#include "rootwrite/key_header.h"

namespace ferry::rootwrite {
namespace {

size_t TStringLength(std::string_view s) {
  return (s.size() < 255 ? 1 : 5) + s.size();
}

}  // namespace

uint16_t KeyHeaderLength(bool wide,
                         std::string_view class_name,
                         std::string_view name,
                         std::string_view title) {
  size_t n =
      18 + (wide ? 16 : 8) + TStringLength(class_name) + TStringLength(name) + TStringLength(title);
  return static_cast<uint16_t>(n);
}

void WriteKeyHeader(StreamBuffer& out, const KeyHeader& key, uint16_t key_len) {
  out.I32(key.nbytes);
  out.I16(key.wide ? 1004 : 4);
  out.I32(key.objlen);
  out.U32(key.datime);
  out.I16(static_cast<int16_t>(key_len));
  out.I16(key.cycle);
  out.Seek(key.seek_key, key.wide);
  out.Seek(key.seek_pdir, key.wide);
  out.TString(key.class_name);
  out.TString(key.name);
  out.TString(key.title);
}

uint32_t PackDatime(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  int year = tm.tm_year + 1900;
  if (year < 1995) {
    year = 1995;
  }
  return (static_cast<uint32_t>(year - 1995) << 26) | (static_cast<uint32_t>(tm.tm_mon + 1) << 22)
         | (static_cast<uint32_t>(tm.tm_mday) << 17) | (static_cast<uint32_t>(tm.tm_hour) << 12)
         | (static_cast<uint32_t>(tm.tm_min) << 6) | static_cast<uint32_t>(tm.tm_sec);
}

}  // namespace ferry::rootwrite
