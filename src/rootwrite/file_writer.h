// FileWriter: writes a ROOT file record by record, appending at the end, and completes it on
// Close with the keys list, the StreamerInfo record, the free-segments record, the final file
// header and the top TDirectory record.
//
// Layout produced (ROOT's order for a file written in one go):
//   0    file header (small form; big form with 64-bit seeks once the file passes
//        2,000,000,000 bytes, or always with FileOptions::force_big)
//   100  TFile key + name + title + TDirectory record (60 bytes, rewritten at Close)
//   ...  data records (baskets, trees) in the order they are written
//   keys list, StreamerInfo, free segments [fEND, 2e9 + k * 1e9]
//
// Records are staged in a write buffer of FileOptions::write_buffer_bytes and written with
// pwrite, so memory stays bounded whatever the file size. Any I/O error (kIo, kNoSpace for a
// full disk) is returned with the file path and offset as context and makes the writer failed:
// every later call returns an error and the file is left incomplete.
//
// Not thread-safe. The destructor closes the descriptor without completing the file.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootwrite/key_header.h"

namespace ferry::rootwrite {

// ROOT release recorded in the header (6.22/08, whose class versions the StreamerInfo uses).
constexpr int32_t kRootVersion = 62208;
constexpr uint32_t kBegin = 100;

struct FileOptions {
  // fCompress of the file; the StreamerInfo and TTree records are compressed with it.
  codec::Setting compression{codec::Algorithm::kZlib, 1};
  // Big header, big TDirectory record and wide keys from the start (tests of the big form
  // without writing 2 GB).
  bool force_big = false;
  // Packed TDatime stamped on every record; 0 = the time of Create.
  uint32_t datime = 0;
  // Seed of the file UUID; 0 = random. With a fixed datime and seed the output is
  // byte-for-byte reproducible.
  uint64_t uuid_seed = 0;
  std::string title;
  size_t write_buffer_bytes = 1u << 20;
  bool fsync_on_close = false;
};

// Where a record went.
struct RecordInfo {
  uint64_t seek = 0;
  int32_t nbytes = 0;
  int32_t objlen = 0;
  uint16_t key_len = 0;
  bool wide = false;
  bool compressed = false;
};

// The place of the next record: its offset and key length (payloads with object tags must be
// serialised knowing fKeylen).
struct RecordSlot {
  uint64_t seek = 0;
  uint16_t key_len = 0;
  bool wide = false;
};

class FileWriter {
 public:
  static Result<std::unique_ptr<FileWriter>> Create(const std::string& path,
                                                    const FileOptions& options);
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  ~FileWriter();

  const std::string& path() const { return path_; }
  const FileOptions& options() const { return options_; }
  uint32_t datime() const { return datime_; }
  // Offset of the next record (the current fEND).
  uint64_t end() const { return end_; }
  // Whether a key at offset must use 64-bit seeks.
  bool WideAt(uint64_t offset) const { return options_.force_big || offset > kStartBigFile; }
  bool closed() const { return closed_; }

  // Appends a complete record the caller built (its key header must name end() as fSeekKey).
  // Returns the offset it was written at.
  Result<uint64_t> Append(std::span<const uint8_t> head, std::span<const uint8_t> body = {});

  // The slot of the next keyed record of this class, name and title.
  RecordSlot NextRecord(std::string_view class_name,
                        std::string_view name,
                        std::string_view title) const;
  // Writes a keyed object record at slot (which must be NextRecord of the same strings, with
  // nothing appended since): the key header and the payload, compressed with setting when that
  // makes it smaller, raw otherwise.
  Result<RecordInfo> WriteRecord(const RecordSlot& slot,
                                 std::string_view class_name,
                                 std::string_view name,
                                 std::string_view title,
                                 std::span<const uint8_t> payload,
                                 const codec::Setting& setting,
                                 int16_t cycle = 1);

  // Writes an uncompressed keyed record at slot whose payload is parts one after the other,
  // without gathering them into one buffer (an RNTuple cluster's pages, column by column).
  Result<RecordInfo> WriteRawRecord(const RecordSlot& slot,
                                    std::string_view class_name,
                                    std::string_view name,
                                    std::string_view title,
                                    std::span<const std::span<const uint8_t>> parts,
                                    int16_t cycle = 1);

  // Lists a record in the top directory's keys list.
  void AddToDirectory(std::string_view class_name,
                      std::string_view name,
                      std::string_view title,
                      const RecordInfo& record,
                      int16_t cycle = 1);
  // Classes whose StreamerInfo the file must carry (see streamer_infos.h), in order.
  void UseClasses(std::span<const std::string> classes);

  // Completes the file. The writer is unusable afterwards.
  Status Close();

 private:
  struct DirEntry {
    std::string class_name;
    std::string name;
    std::string title;
    RecordInfo record;
    int16_t cycle;
  };

  FileWriter(std::string path, Fd fd, FileOptions options);
  Status Start();
  Status FlushPending();
  Error Failed(Error error);
  Status CheckUsable() const;
  // InvalidArgument for a slot that is no longer the file's end.
  Status CheckSlot(const RecordSlot& slot) const;
  // The record a slot will hold; Unsupported when it would pass 2 GiB.
  static Result<RecordInfo> RecordAt(const RecordSlot& slot,
                                     std::string_view name,
                                     size_t objlen,
                                     size_t stored_bytes,
                                     bool compressed);
  std::vector<uint8_t> RecordHead(const RecordSlot& slot,
                                  std::string_view class_name,
                                  std::string_view name,
                                  std::string_view title,
                                  const RecordInfo& info,
                                  int16_t cycle) const;
  void WriteDirectoryRecord(StreamBuffer& out, bool big) const;
  std::vector<uint8_t> HeaderBytes(bool big) const;

  std::string path_;
  std::string file_name_;  // the name recorded in the TFile key: the path's last component
  Fd fd_;
  FileOptions options_;
  uint32_t datime_ = 0;
  std::array<uint8_t, 16> uuid_{};

  uint64_t end_ = 0;
  uint64_t pending_at_ = 0;  // file offset of pending_[0]
  std::vector<uint8_t> pending_;

  int32_t nbytes_name_ = 0;
  uint64_t seek_keys_ = 0;
  int32_t nbytes_keys_ = 0;
  uint64_t seek_info_ = 0;
  int32_t nbytes_info_ = 0;
  uint64_t seek_free_ = 0;
  int32_t nbytes_free_ = 0;

  std::vector<DirEntry> directory_;
  std::vector<std::string> classes_;
  bool closed_ = false;
  std::unique_ptr<Error> failure_;
};

}  // namespace ferry::rootwrite
