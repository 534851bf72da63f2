#include "rootwrite/file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <utility>

#include "rootwrite/streamer_infos.h"

namespace ferry::rootwrite {
namespace {

constexpr uint64_t kFreeSegmentStep = 1000000000;  // ROOT grows the last free segment by 1e9
constexpr size_t kDirectoryRecordSize = 60;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

size_t TStringSize(std::string_view s) {
  return (s.size() < 255 ? 1 : 5) + s.size();
}

}  // namespace

FileWriter::FileWriter(std::string path, Fd fd, FileOptions options)
    : path_(std::move(path)), fd_(std::move(fd)), options_(std::move(options)) {
  size_t slash = path_.rfind('/');
  file_name_ = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  datime_ = options_.datime != 0 ? options_.datime : PackDatime(std::time(nullptr));
  uint64_t seed = options_.uuid_seed;
  if (seed == 0) {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  for (size_t i = 0; i < uuid_.size(); i += 8) {
    uint64_t v = SplitMix64(seed);
    for (size_t j = 0; j < 8; ++j) {
      uuid_[i + j] = static_cast<uint8_t>(v >> (8 * j));
    }
  }
  if (options_.write_buffer_bytes < 4096) {
    options_.write_buffer_bytes = 4096;
  }
}

FileWriter::~FileWriter() = default;

Result<std::unique_ptr<FileWriter>> FileWriter::Create(const std::string& path,
                                                       const FileOptions& options) {
  Fd fd = FERRY_TRY_CTX(Fd::Open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), "file " + path);
  std::unique_ptr<FileWriter> w(new FileWriter(path, std::move(fd), options));
  FERRY_TRY_CTX(w->Start(), "file " + path);
  return w;
}

Status FileWriter::Start() {
  // Reserve the header area; Close writes the real header over it.
  std::vector<uint8_t> head(kBegin, 0);
  FERRY_TRY(Append(head));
  // The top directory: TFile key, name and title, TDirectory record (patched at Close).
  RecordSlot slot = NextRecord("TFile", file_name_, options_.title);
  nbytes_name_ =
      static_cast<int32_t>(slot.key_len + TStringSize(file_name_) + TStringSize(options_.title));
  StreamBuffer payload;
  payload.TString(file_name_);
  payload.TString(options_.title);
  WriteDirectoryRecord(payload, options_.force_big);
  RecordInfo info =
      FERRY_TRY(WriteRecord(slot, "TFile", file_name_, options_.title, payload.bytes(),
                            codec::Setting{codec::Algorithm::kNone, 0}));
  (void)info;
  return OkStatus();
}

Status FileWriter::CheckUsable() const {
  if (failure_) {
    return Error(*failure_).AddContext("file " + path_ + " failed earlier");
  }
  if (closed_) {
    return InvalidArgumentError("file " + path_ + " is already closed");
  }
  return OkStatus();
}

Error FileWriter::Failed(Error error) {
  error.AddContext("file " + path_);
  failure_ = std::make_unique<Error>(error);
  return error;
}

Status FileWriter::FlushPending() {
  if (pending_.empty()) {
    return OkStatus();
  }
  Status st = PwriteFull(fd_.get(), pending_.data(), pending_.size(), pending_at_);
  if (!st.has_value()) {
    return Failed(std::move(st).error());
  }
  pending_at_ += pending_.size();
  pending_.clear();
  return OkStatus();
}

Result<uint64_t> FileWriter::Append(std::span<const uint8_t> head, std::span<const uint8_t> body) {
  FERRY_TRY(CheckUsable());
  const uint64_t at = end_;
  const size_t n = head.size() + body.size();
  if (pending_.size() + n > options_.write_buffer_bytes) {
    FERRY_TRY(FlushPending());
  }
  if (n > options_.write_buffer_bytes) {
    // Large record: write it directly, behind the (now empty) staging buffer.
    for (auto part : {head, body}) {
      if (part.empty()) {
        continue;
      }
      Status st = PwriteFull(fd_.get(), part.data(), part.size(), pending_at_);
      if (!st.has_value()) {
        return Failed(std::move(st).error());
      }
      pending_at_ += part.size();
    }
  } else {
    if (pending_.capacity() < options_.write_buffer_bytes) {
      pending_.reserve(options_.write_buffer_bytes);
    }
    pending_.insert(pending_.end(), head.begin(), head.end());
    pending_.insert(pending_.end(), body.begin(), body.end());
  }
  end_ += n;
  return at;
}

RecordSlot FileWriter::NextRecord(std::string_view class_name,
                                  std::string_view name,
                                  std::string_view title) const {
  RecordSlot s;
  s.seek = end_;
  s.wide = WideAt(end_);
  s.key_len = KeyHeaderLength(s.wide, class_name, name, title);
  return s;
}

Status FileWriter::CheckSlot(const RecordSlot& slot) const {
  if (slot.seek != end_) {
    return InvalidArgumentError("record slot at " + std::to_string(slot.seek)
                                + " is stale (file end is " + std::to_string(end_) + ")");
  }
  return OkStatus();
}

Result<RecordInfo> FileWriter::RecordAt(const RecordSlot& slot,
                                        std::string_view name,
                                        size_t objlen,
                                        size_t stored_bytes,
                                        bool compressed) {
  if (stored_bytes + slot.key_len > 0x7FFFFFFFu) {
    return UnsupportedError("record " + std::string(name) + " of " + std::to_string(stored_bytes)
                            + " bytes exceeds 2 GiB");
  }
  RecordInfo info;
  info.seek = slot.seek;
  info.key_len = slot.key_len;
  info.wide = slot.wide;
  info.objlen = static_cast<int32_t>(objlen);
  info.nbytes = static_cast<int32_t>(slot.key_len + stored_bytes);
  info.compressed = compressed;
  return info;
}

std::vector<uint8_t> FileWriter::RecordHead(const RecordSlot& slot,
                                            std::string_view class_name,
                                            std::string_view name,
                                            std::string_view title,
                                            const RecordInfo& info,
                                            int16_t cycle) const {
  KeyHeader k;
  k.class_name = class_name;
  k.name = name;
  k.title = title;
  k.nbytes = info.nbytes;
  k.objlen = info.objlen;
  k.datime = datime_;
  k.cycle = cycle;
  k.seek_key = slot.seek;
  k.seek_pdir = class_name == "TFile" && slot.seek == kBegin ? 0 : kBegin;
  k.wide = slot.wide;
  StreamBuffer head;
  WriteKeyHeader(head, k, slot.key_len);
  return head.Take();
}

Result<RecordInfo> FileWriter::WriteRecord(const RecordSlot& slot,
                                           std::string_view class_name,
                                           std::string_view name,
                                           std::string_view title,
                                           std::span<const uint8_t> payload,
                                           const codec::Setting& setting,
                                           int16_t cycle) {
  FERRY_TRY(CheckUsable());
  FERRY_TRY(CheckSlot(slot));
  ByteVector compressed;
  bool packed = FERRY_TRY_CTX(codec::CompressPayload(setting, payload, &compressed),
                              "compressing " + std::string(class_name) + " " + std::string(name));
  std::span<const uint8_t> stored = packed ? std::span<const uint8_t>(compressed) : payload;
  RecordInfo info = FERRY_TRY(RecordAt(slot, name, payload.size(), stored.size(), packed));
  FERRY_TRY(Append(RecordHead(slot, class_name, name, title, info, cycle), stored));
  return info;
}

Result<RecordInfo> FileWriter::WriteRawRecord(const RecordSlot& slot,
                                              std::string_view class_name,
                                              std::string_view name,
                                              std::string_view title,
                                              std::span<const std::span<const uint8_t>> parts,
                                              int16_t cycle) {
  FERRY_TRY(CheckUsable());
  FERRY_TRY(CheckSlot(slot));
  size_t total = 0;
  for (std::span<const uint8_t> part : parts) {
    total += part.size();
  }
  RecordInfo info = FERRY_TRY(RecordAt(slot, name, total, total, false));
  FERRY_TRY(Append(RecordHead(slot, class_name, name, title, info, cycle)));
  for (std::span<const uint8_t> part : parts) {
    FERRY_TRY(Append(part));
  }
  return info;
}

void FileWriter::AddToDirectory(std::string_view class_name,
                                std::string_view name,
                                std::string_view title,
                                const RecordInfo& record,
                                int16_t cycle) {
  directory_.push_back(
      {std::string(class_name), std::string(name), std::string(title), record, cycle});
}

void FileWriter::UseClasses(std::span<const std::string> classes) {
  for (const std::string& c : classes) {
    if (std::find(classes_.begin(), classes_.end(), c) == classes_.end()) {
      classes_.push_back(c);
    }
  }
}

void FileWriter::WriteDirectoryRecord(StreamBuffer& out, bool big) const {
  bool wide = big || seek_keys_ > kStartBigFile;
  size_t start = out.size();
  out.I16(wide ? 1005 : 5);
  out.U32(datime_);  // created
  out.U32(datime_);  // modified
  out.I32(nbytes_keys_);
  out.I32(nbytes_name_);
  out.Seek(kBegin, wide);  // fSeekDir
  out.Seek(0, wide);       // fSeekParent
  out.Seek(seek_keys_, wide);
  out.U16(1);  // UUID version
  out.Bytes(uuid_);
  out.Zeros(kDirectoryRecordSize - (out.size() - start));
}

std::vector<uint8_t> FileWriter::HeaderBytes(bool big) const {
  StreamBuffer h;
  h.Bytes({reinterpret_cast<const uint8_t*>("root"), 4});
  h.I32(big ? kRootVersion + 1000000 : kRootVersion);
  h.I32(static_cast<int32_t>(kBegin));
  h.Seek(end_, big);
  h.Seek(seek_free_, big);
  h.I32(nbytes_free_);
  h.I32(1);  // nfree
  h.I32(nbytes_name_);
  h.U8(big ? 8 : 4);  // fUnits
  h.I32(options_.compression.RootSetting());
  h.Seek(seek_info_, big);
  h.I32(nbytes_info_);
  h.U16(1);  // UUID version
  h.Bytes(uuid_);
  std::vector<uint8_t> out = h.Take();
  out.resize(kBegin, 0);
  return out;
}

Status FileWriter::Close() {
  FERRY_TRY(CheckUsable());
  const codec::Setting raw{codec::Algorithm::kNone, 0};

  // Keys list: a TFile key, the key count, then a copy of every key header.
  RecordSlot keys_slot = NextRecord("TFile", file_name_, options_.title);
  StreamBuffer keys;
  keys.I32(static_cast<int32_t>(directory_.size()));
  for (const DirEntry& e : directory_) {
    KeyHeader k;
    k.class_name = e.class_name;
    k.name = e.name;
    k.title = e.title;
    k.nbytes = e.record.nbytes;
    k.objlen = e.record.objlen;
    k.datime = datime_;
    k.cycle = e.cycle;
    k.seek_key = e.record.seek;
    k.seek_pdir = kBegin;
    k.wide = e.record.wide;
    WriteKeyHeader(keys, k, e.record.key_len);
  }
  RecordInfo keys_info =
      FERRY_TRY(WriteRecord(keys_slot, "TFile", file_name_, options_.title, keys.bytes(), raw));
  seek_keys_ = keys_info.seek;
  nbytes_keys_ = keys_info.nbytes;

  // StreamerInfo.
  RecordSlot info_slot = NextRecord("TList", "StreamerInfo", "Doubly linked list");
  std::vector<uint8_t> infos =
      FERRY_TRY_CTX(BuildStreamerInfoList(classes_, info_slot.key_len), "file " + path_);
  RecordInfo si = FERRY_TRY(WriteRecord(info_slot, "TList", "StreamerInfo", "Doubly linked list",
                                        infos, options_.compression));
  seek_info_ = si.seek;
  nbytes_info_ = si.nbytes;

  // Free segments: one segment from the end of this record to ROOT's growing limit.
  RecordSlot free_slot = NextRecord("TFile", file_name_, "");
  uint64_t free_first = free_slot.seek + free_slot.key_len + 10;
  uint64_t free_last = kStartBigFile;
  while (free_last <= free_first + 8) {
    free_last += kFreeSegmentStep;
  }
  bool wide_free = options_.force_big || free_last > kStartBigFile;
  if (wide_free) {
    free_first += 8;
  }
  StreamBuffer free_seg;
  free_seg.I16(wide_free ? 1001 : 1);
  free_seg.Seek(free_first, wide_free);
  free_seg.Seek(free_last, wide_free);
  RecordInfo fr = FERRY_TRY(WriteRecord(free_slot, "TFile", file_name_, "", free_seg.bytes(), raw));
  seek_free_ = fr.seek;
  nbytes_free_ = fr.nbytes;
  if (end_ != free_first) {
    return Failed(CorruptionError("free segment starts at " + std::to_string(free_first)
                                  + ", file ends at " + std::to_string(end_)));
  }

  FERRY_TRY(FlushPending());
  const bool big = options_.force_big || end_ > kStartBigFile;
  std::vector<uint8_t> header = HeaderBytes(big);
  StreamBuffer dir;
  WriteDirectoryRecord(dir, big);
  for (auto [bytes, at] : {std::pair{std::span<const uint8_t>(header), uint64_t{0}},
                           std::pair{std::span<const uint8_t>(dir.bytes()),
                                     uint64_t{kBegin} + static_cast<uint64_t>(nbytes_name_)}}) {
    Status st = PwriteFull(fd_.get(), bytes.data(), bytes.size(), at);
    if (!st.has_value()) {
      return Failed(std::move(st).error());
    }
  }
  if (options_.fsync_on_close && ::fsync(fd_.get()) != 0) {
    return Failed(IoError("fsync failed", errno));
  }
  Status st = fd_.Close();
  if (!st.has_value()) {
    return Failed(std::move(st).error());
  }
  closed_ = true;
  return OkStatus();
}

}  // namespace ferry::rootwrite
