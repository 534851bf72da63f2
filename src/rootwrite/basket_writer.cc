#include "rootwrite/basket_writer.h"

#include <algorithm>
#include <cstring>

#include "base/byte_swap.h"
#include "base/endian.h"

namespace ferry::rootwrite {
namespace {

constexpr int32_t kDefaultEntryOffsetLen = 1000;
constexpr uint16_t kBasketFieldsSize = 2 + 4 + 4 + 4 + 4 + 1;

}  // namespace

BranchBuffer::BranchBuffer(std::string name,
                           std::string_view tree_name,
                           rootio::LeafType type,
                           uint32_t fixed_values,
                           bool variable,
                           int32_t basket_size)
    : name_(std::move(name)),
      tree_name_(tree_name),
      type_(type),
      value_size_(rootio::LeafTypeSize(type)),
      fixed_values_(fixed_values),
      variable_(variable),
      basket_size_(basket_size),
      entry_offset_len_(variable ? kDefaultEntryOffsetLen : 0) {
  key_len_ = static_cast<uint16_t>(KeyHeaderLength(true, "TBasket", name_, tree_name_)
                                   + kBasketFieldsSize);
  data_.reserve(static_cast<size_t>(std::max(basket_size_, 64)));
}

int64_t BranchBuffer::TakeBytesSinceMark() {
  int64_t d = tot_bytes_ - mark_bytes_;
  mark_bytes_ = tot_bytes_;
  return d;
}

void BranchBuffer::AppendValues(const uint8_t* native, size_t count) {
  if (variable_) {
    offsets_.push_back(static_cast<int32_t>(data_.size()));
  }
  AppendByteSwapped(native, count, value_size_, &data_);
  ++nev_;
  ++entries_;
}

void BranchBuffer::AppendFixed(const uint8_t* native, size_t n_entries) {
  AppendByteSwapped(native, n_entries * fixed_values_, value_size_, &data_);
  nev_ += static_cast<int32_t>(n_entries);
  entries_ += static_cast<int64_t>(n_entries);
}

void BranchBuffer::AppendJagged(const uint8_t* native, const uint64_t* offsets, size_t n_entries) {
  const size_t base = data_.size();
  const size_t at = offsets_.size();
  offsets_.resize(at + n_entries);
  int32_t* out = offsets_.data() + at;
  for (size_t i = 0; i < n_entries; ++i) {
    out[i] = static_cast<int32_t>(base + (offsets[i] - offsets[0]) * value_size_);
  }
  AppendByteSwapped(native, offsets[n_entries] - offsets[0], value_size_, &data_);
  nev_ += static_cast<int32_t>(n_entries);
  entries_ += static_cast<int64_t>(n_entries);
}

void BranchBuffer::AppendString(std::string_view s) {
  offsets_.push_back(static_cast<int32_t>(data_.size()));
  if (s.size() < 255) {
    data_.push_back(static_cast<uint8_t>(s.size()));
  } else {
    data_.push_back(255);
    size_t at = data_.size();
    data_.resize(at + 4);
    StoreBE(data_.data() + at, static_cast<uint32_t>(s.size()));
  }
  const auto* chars = reinterpret_cast<const uint8_t*>(s.data());
  data_.insert(data_.end(), chars, chars + s.size());
  max_string_ = std::max(max_string_, s.size());
  ++nev_;
  ++entries_;
}

Result<BasketFields> BranchBuffer::FinishPayload() {
  const size_t data_bytes = data_.size();
  if (data_bytes + key_len_ + 4 * (offsets_.size() + 2) > 0x7FFFFFF0u) {
    return UnsupportedError("basket of branch " + name_ + " holds " + std::to_string(data_bytes)
                            + " bytes, more than a ROOT basket can");
  }
  BasketFields f;
  f.nev = nev_;
  f.first_entry = first_entry_;
  f.last = static_cast<int32_t>(key_len_ + data_bytes);
  f.nev_buf_size = static_cast<int32_t>(fixed_values_ * value_size_);
  if (variable_) {
    // The offset table follows the data: count, fNevBuf offsets from the key start, a 0 slot.
    size_t at = data_.size();
    data_.resize(at + 4 * (offsets_.size() + 2));
    uint8_t* p = data_.data() + at;
    StoreBE(p, static_cast<int32_t>(offsets_.size() + 1));
    for (size_t i = 0; i < offsets_.size(); ++i) {
      StoreBE(p + 4 * (i + 1), offsets_[i] + static_cast<int32_t>(key_len_));
    }
    StoreBE(p + 4 * (offsets_.size() + 1), int32_t{0});
    f.nev_buf_size = std::max(entry_offset_len_, kDefaultEntryOffsetLen);
    while (f.nev_buf_size <= nev_) {
      f.nev_buf_size *= 2;
    }
  }
  f.buffer_size = std::max(basket_size_, static_cast<int32_t>(key_len_ + data_.size()));
  return f;
}

void BranchBuffer::ResetBasket(const BasketFields& f, size_t payload_bytes) {
  tot_bytes_ += static_cast<int64_t>(key_len_ + payload_bytes);
  if (variable_ && entry_offset_len_ > 10 && 4 * nev_ < entry_offset_len_) {
    entry_offset_len_ = nev_ < 3 ? 10 : 4 * nev_;  // ROOT shrinks the hint to what baskets hold
  }
  first_entry_ = f.first_entry + f.nev;
  nev_ = 0;
  data_.clear();
  offsets_.clear();
}

Status BranchBuffer::WriteRecord(FileWriter& file,
                                 const codec::Setting& setting,
                                 BasketScratch& scratch,
                                 std::span<const uint8_t> payload,
                                 const BasketFields& f) {
  scratch.compressed.clear();
  auto packed = codec::CompressPayload(setting, payload, &scratch.compressed);
  if (!packed.has_value()) {
    return std::move(packed).error().AddContext("branch " + name_ + " > basket "
                                                + std::to_string(basket_seek_.size()));
  }
  std::span<const uint8_t> stored =
      *packed ? std::span<const uint8_t>(scratch.compressed) : payload;
  const uint64_t seek = file.end();
  KeyHeader k;
  k.class_name = "TBasket";
  k.name = name_;
  k.title = tree_name_;
  k.nbytes = static_cast<int32_t>(key_len_ + stored.size());
  k.objlen = static_cast<int32_t>(payload.size());
  k.datime = file.datime();
  k.cycle = 0;
  k.seek_key = seek;
  k.seek_pdir = kBegin;
  k.wide = true;
  StreamBuffer& head = scratch.head;
  head.Clear();
  WriteKeyHeader(head, k, key_len_);
  head.I16(3);  // TBasket version
  head.I32(f.buffer_size);
  head.I32(f.nev_buf_size);
  head.I32(f.nev);
  head.I32(f.last);  // fLast
  head.U8(0);        // flag
  auto written = file.Append(head.bytes(), stored);
  if (!written.has_value()) {
    return std::move(written).error().AddContext("branch " + name_ + " > basket "
                                                 + std::to_string(basket_seek_.size()));
  }
  basket_bytes_.push_back(k.nbytes);
  basket_entry_.push_back(f.first_entry);
  basket_seek_.push_back(static_cast<int64_t>(seek));
  zip_bytes_ += k.nbytes;
  return OkStatus();
}

Status BranchBuffer::WriteBasket(FileWriter& file,
                                 const codec::Setting& setting,
                                 BasketScratch& scratch) {
  if (nev_ == 0) {
    return OkStatus();
  }
  const BasketFields f = FERRY_TRY(FinishPayload());
  FERRY_TRY(WriteRecord(file, setting, scratch, data_, f));
  ResetBasket(f, data_.size());
  return OkStatus();
}

Status BranchBuffer::SealBasket(SealedBasket* out) {
  out->fields = FERRY_TRY(FinishPayload());
  out->branch = this;
  out->payload.clear();
  std::swap(out->payload, data_);
  ResetBasket(out->fields, out->payload.size());
  data_.reserve(static_cast<size_t>(std::max(basket_size_, 64)));
  return OkStatus();
}

Status BranchBuffer::WriteSealed(FileWriter& file,
                                 const codec::Setting& setting,
                                 BasketScratch& scratch,
                                 const SealedBasket& basket) {
  return WriteRecord(file, setting, scratch, basket.payload, basket.fields);
}

BranchRecord BranchBuffer::Record(int32_t compress) const {
  BranchRecord r;
  r.name = name_;
  r.compress = compress;
  r.basket_size = basket_size_;
  r.entry_offset_len = entry_offset_len_;
  r.entries = entries_;
  r.tot_bytes = tot_bytes_;
  r.zip_bytes = zip_bytes_;
  r.basket_bytes = basket_bytes_;
  r.basket_entry = basket_entry_;
  r.basket_seek = basket_seek_;
  r.basket_bytes.push_back(0);
  r.basket_entry.push_back(entries_);
  r.basket_seek.push_back(0);
  return r;
}

}  // namespace ferry::rootwrite
