// BranchBuffer: the write side of one branch. Entries are appended (native values in,
// big-endian bytes kept) into the branch's current basket; a full basket is written as a TBasket
// record and the buffer reused, so a branch holds at most one basket in memory.
//
// Basket record (as ROOT writes it): a wide TKey (version 1004, cycle 0, class "TBasket", name =
// branch, title = tree) whose fKeylen also covers the basket fields
//   version 3, fBufferSize, fNevBufSize (entry size, or the offset-table capacity for variable
//   entries), fNevBuf, fLast (= fKeylen + data bytes), flag 0;
// payload = entry data, then for jagged and string branches the entry-offset table: count
// fNevBuf + 1, the fNevBuf entry offsets counted from the key start, and a final 0 slot.
// The payload is compressed with the branch's setting in blocks of at most 16 MiB and stored
// raw when compression does not make it smaller.
//
// Not thread-safe, except where SealBasket and WriteSealed say.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootio/tree_model.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/tree_record.h"

namespace ferry::rootwrite {

// Scratch buffers shared by the branches of a tree (compression output, key header).
struct BasketScratch {
  ByteVector compressed;
  StreamBuffer head;
};

class BranchBuffer;

// The TBasket fields of one basket, fixed when it is sealed.
struct BasketFields {
  int32_t buffer_size = 0;   // fBufferSize
  int32_t nev_buf_size = 0;  // fNevBufSize
  int32_t nev = 0;           // fNevBuf
  int32_t last = 0;          // fLast
  int64_t first_entry = 0;   // the tree entry of its first entry
};

// A basket taken out of its branch (SealBasket), to be compressed and written later
// (WriteSealed), possibly on another thread.
struct SealedBasket {
  BranchBuffer* branch = nullptr;
  ByteVector payload;  // entry data and offset table, uncompressed
  BasketFields fields;
};

class BranchBuffer {
 public:
  // variable: jagged or string entries (an offset table is written).
  BranchBuffer(std::string name,
               std::string_view tree_name,
               rootio::LeafType type,
               uint32_t fixed_values,
               bool variable,
               int32_t basket_size);

  const std::string& name() const { return name_; }
  rootio::LeafType type() const { return type_; }
  bool variable() const { return variable_; }
  size_t value_size() const { return value_size_; }
  int64_t entries() const { return entries_; }
  int32_t basket_size() const { return basket_size_; }
  void set_basket_size(int32_t n) { basket_size_ = n; }
  // Entries and bytes waiting in the current basket.
  int32_t pending_entries() const { return nev_; }
  size_t pending_bytes() const { return data_.size() + (variable_ ? 4 * offsets_.size() + 8 : 0); }
  int64_t tot_bytes() const { return tot_bytes_; }
  int64_t zip_bytes() const { return zip_bytes_; }
  // Uncompressed bytes (key + payload) appended since the last call.
  int64_t TakeBytesSinceMark();
  size_t baskets_written() const { return basket_seek_.size(); }

  // Appends one entry of count native values (count = fixed length for fixed-size branches).
  void AppendValues(const uint8_t* native, size_t count);
  // Appends n fixed-size entries of the branch's fixed number of values each.
  void AppendFixed(const uint8_t* native, size_t n_entries);
  // Appends n variable-size entries: entry i holds values [offsets[i], offsets[i+1]) counted
  // from native (offsets[0] is the first value of native).
  void AppendJagged(const uint8_t* native, const uint64_t* offsets, size_t n_entries);
  // Appends one string entry.
  void AppendString(std::string_view s);
  // Largest integer value and string length seen (for fMaximum of counters and TLeafC).
  void NoteCounterValue(int64_t v) {
    if (v > max_value_) {
      max_value_ = v;
    }
  }
  bool full() const { return pending_bytes() >= static_cast<size_t>(basket_size_); }

  // Writes the current basket (if it holds entries) as a record at the file's end.
  Status WriteBasket(FileWriter& file, const codec::Setting& setting, BasketScratch& scratch);

  // The two halves of WriteBasket, for a writer that compresses on another thread:
  // SealBasket moves the current basket, which must hold entries (pending_entries() > 0), into
  // *out (the branch keeps out's old payload buffer as its next basket, so buffers are
  // recycled, not allocated) and starts a new basket; WriteSealed compresses and writes it. Baskets
  // of a branch must be written in the order they were sealed. WriteSealed touches only the
  // written-basket lists (basket seeks, sizes, zip_bytes), so one other thread may run it while
  // this one appends entries and seals; Record() and zip_bytes() wait until it has finished.
  Status SealBasket(SealedBasket* out);
  Status WriteSealed(FileWriter& file,
                     const codec::Setting& setting,
                     BasketScratch& scratch,
                     const SealedBasket& basket);

  // The branch's part of the TTree record; leaf fields other than type/len left to the caller.
  BranchRecord Record(int32_t compress) const;
  int64_t max_value() const { return max_value_; }
  size_t max_string() const { return max_string_; }

 private:
  std::string name_;
  std::string tree_name_;
  rootio::LeafType type_;
  size_t value_size_;
  uint32_t fixed_values_;
  bool variable_;
  int32_t basket_size_;
  uint16_t key_len_;  // key header + basket fields

  // Appends the offset table (variable branches) to data_ and fixes the basket fields.
  Result<BasketFields> FinishPayload();
  // Counts the sealed basket and empties the current one.
  void ResetBasket(const BasketFields& f, size_t payload_bytes);
  Status WriteRecord(FileWriter& file,
                     const codec::Setting& setting,
                     BasketScratch& scratch,
                     std::span<const uint8_t> payload,
                     const BasketFields& f);

  // Current basket.
  ByteVector data_;               // big-endian entry data
  std::vector<int32_t> offsets_;  // entry start offsets into data_ (variable branches)
  int32_t nev_ = 0;
  int64_t first_entry_ = 0;

  // Written baskets.
  std::vector<int32_t> basket_bytes_;
  std::vector<int64_t> basket_entry_;
  std::vector<int64_t> basket_seek_;
  int64_t entries_ = 0;
  int64_t tot_bytes_ = 0;
  int64_t zip_bytes_ = 0;
  int64_t mark_bytes_ = 0;
  int32_t entry_offset_len_;
  int64_t max_value_ = 0;
  size_t max_string_ = 0;
};

}  // namespace ferry::rootwrite
