#include "io/byte_source.h"

namespace ferry::io {

Status CheckRange(const std::string& name, uint64_t source_size, uint64_t offset, uint64_t size) {
  if (offset > source_size || size > source_size - offset) {
    return Error(ErrorCode::kShortRead, "range [" + std::to_string(offset) + ", +"
                                            + std::to_string(size) + ") is past the end of " + name
                                            + " (" + std::to_string(source_size) + " bytes)");
  }
  return OkStatus();
}

Status ByteSource::ReadAt(uint64_t offset, std::span<uint8_t> dest) {
  read_calls_.fetch_add(1, std::memory_order_relaxed);
  chunks_.fetch_add(1, std::memory_order_relaxed);
  FERRY_TRY(CheckRange(name(), size(), offset, dest.size()));
  if (dest.empty()) {
    return OkStatus();
  }
  FERRY_TRY(DoReadAt(offset, dest));
  bytes_.fetch_add(dest.size(), std::memory_order_relaxed);
  return OkStatus();
}

Status ByteSource::ReadV(std::span<ReadRequest> requests) {
  vector_calls_.fetch_add(1, std::memory_order_relaxed);
  chunks_.fetch_add(requests.size(), std::memory_order_relaxed);
  // Out-of-range requests fail individually; the rest go to the implementation together.
  size_t valid = 0;
  for (ReadRequest& r : requests) {
    r.status = CheckRange(name(), size(), r.offset, r.dest.size());
    if (r.status.has_value()) {
      ++valid;
    }
  }
  if (valid == requests.size()) {
    DoReadV(requests);
  } else {
    for (ReadRequest& r : requests) {
      if (r.status.has_value() && !r.dest.empty()) {
        r.status = DoReadAt(r.offset, r.dest);
      }
    }
  }
  uint64_t got = 0;
  Status first;
  for (ReadRequest& r : requests) {
    if (r.status.has_value()) {
      got += r.dest.size();
    } else if (first.has_value()) {
      first = r.status;
    }
  }
  bytes_.fetch_add(got, std::memory_order_relaxed);
  return first;
}

void ByteSource::DoReadV(std::span<ReadRequest> requests) {
  for (ReadRequest& r : requests) {
    if (!r.dest.empty()) {
      r.status = DoReadAt(r.offset, r.dest);
    }
  }
}

std::optional<std::span<const uint8_t>> ByteSource::View(uint64_t /*offset*/,
                                                         size_t /*size*/) const {
  return std::nullopt;
}

IoStats ByteSource::stats() const {
  IoStats s;
  s.read_calls = read_calls_.load(std::memory_order_relaxed);
  s.vector_calls = vector_calls_.load(std::memory_order_relaxed);
  s.chunks = chunks_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  return s;
}

void ByteSource::ResetStats() {
  read_calls_ = 0;
  vector_calls_ = 0;
  chunks_ = 0;
  bytes_ = 0;
}

}  // namespace ferry::io
