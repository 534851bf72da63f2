// TKey headers as ROOT writes them.
//
//   0 fNbytes (record size on disk)  4 fVersion (4, or 1004 with 64-bit seeks)  6 fObjlen
//   10 fDatime  14 fKeylen  16 fCycle  18 fSeekKey, fSeekPdir (4 or 8 bytes each)
//   then class name, name and title as TStrings.
//
// A TBasket key carries its basket fields after the title, still inside fKeylen, so
// WriteKeyHeader takes the full fKeylen rather than computing it. ROOT writes every TBasket key
// in the wide form (version 1004) and other keys wide only past 2,000,000,000 bytes.
#pragma once

#include <cstdint>
#include <ctime>
#include <string_view>

#include "rootwrite/stream_buffer.h"

namespace ferry::rootwrite {

// ROOT switches to 64-bit seeks past this offset (TFile::kStartBigFile).
constexpr uint64_t kStartBigFile = 2000000000;

struct KeyHeader {
  std::string_view class_name;
  std::string_view name;
  std::string_view title;
  int32_t nbytes = 0;  // key header + stored payload
  int32_t objlen = 0;  // payload size after decompression
  uint32_t datime = 0;
  int16_t cycle = 1;
  uint64_t seek_key = 0;
  uint64_t seek_pdir = 0;
  bool wide = false;
};

// Bytes of the header proper (without basket fields).
uint16_t KeyHeaderLength(bool wide,
                         std::string_view class_name,
                         std::string_view name,
                         std::string_view title);

// Appends the header with the given fKeylen (>= KeyHeaderLength).
void WriteKeyHeader(StreamBuffer& out, const KeyHeader& key, uint16_t key_len);

// ROOT's packed TDatime: (year-1995)<<26 | month<<22 | day<<17 | hour<<12 | minute<<6 | second,
// in local time as ROOT does.
uint32_t PackDatime(std::time_t t);

}  // namespace ferry::rootwrite
