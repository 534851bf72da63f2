// In-memory model of a flat TTree's metadata: branches, leaves, basket locations, clusters.
// Built by ParseTree from the TTree record; plain data, safe to copy and share read-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rootio/leaf_type.h"

namespace ferry::rootio {

struct Leaf {
  std::string name;
  std::string title;
  std::string class_name;  // TLeafF, TLeafI, ...
  LeafType type = LeafType::kUnknown;
  int32_t len = 1;       // fixed elements per entry (per count unit for jagged leaves)
  int32_t len_type = 0;  // bytes per element as stored by ROOT
  bool is_unsigned = false;
  int32_t count_leaf = -1;    // index in TreeInfo::leaves of the counter leaf; -1 if none
  int32_t branch = -1;        // owning branch index
  uint32_t entry_offset = 0;  // byte offset of this leaf inside a fixed-size entry (leaf lists)

  bool jagged() const { return count_leaf >= 0; }
};

// Where one basket of a branch lives.
struct BasketRef {
  int64_t first_entry = 0;
  int64_t num_entries = 0;
  uint64_t seek = 0;      // record offset in the file; 0 for an embedded basket
  uint32_t bytes = 0;     // record size on disk (key + stored payload)
  int32_t embedded = -1;  // index into Branch::embedded when stored inside the TTree record
};

// A basket streamed inside the TTree record (never flushed to its own key).
struct EmbeddedBasket {
  std::vector<uint8_t> data;      // entry data (fLast - fKeylen bytes)
  std::vector<uint32_t> offsets;  // entry start offsets into data + final end; empty if none
  int32_t num_entries = 0;
};

struct Branch {
  std::string name;
  std::string title;
  std::string class_name;  // TBranch, TBranchElement, ...
  int32_t compress = 0;
  int32_t basket_size = 0;
  int32_t entry_offset_len = 0;
  int64_t entries = 0;
  int64_t tot_bytes = 0;
  int64_t zip_bytes = 0;
  int32_t parent = -1;
  std::vector<int32_t> children;
  std::vector<int32_t> leaves;  // indices into TreeInfo::leaves
  std::vector<BasketRef> baskets;
  std::vector<EmbeddedBasket> embedded;
  bool supported = true;
  std::string unsupported_reason;
  // Bytes per entry when every leaf has a fixed size; 0 otherwise.
  uint32_t fixed_entry_size = 0;
  // Where this branch's fields sit in the TTree record's payload, so that baskets can be
  // relocated by overwriting them in place (replica/relocate.h); 0 when absent. Slot i of
  // the tables is baskets[i] for i < write_basket.
  uint32_t zip_bytes_pos = 0;     // fZipBytes (Long64_t)
  uint32_t basket_bytes_pos = 0;  // fBasketBytes[0] (Int_t array)
  uint32_t basket_seek_pos = 0;   // fBasketSeek[0] (Long64_t array)
  int32_t write_basket = 0;       // fWriteBasket: baskets written to their own records
};

struct TreeInfo {
  std::string name;
  std::string title;
  std::string path;  // directory path + name, e.g. "one/two/tree"
  int16_t class_version = 0;
  int64_t entries = 0;
  int64_t auto_flush = 0;
  std::vector<int64_t> cluster_range_end;  // last entry (inclusive) of each cluster range
  std::vector<int64_t> cluster_size;
  std::vector<Branch> branches;       // all branches, depth first
  std::vector<int32_t> top_branches;  // indices of the tree's direct branches
  std::vector<Leaf> leaves;           // all leaves
  uint32_t zip_bytes_pos = 0;         // the TTree's fZipBytes in the record's payload

  // Index of a branch by name (searches all branches), or -1.
  int32_t FindBranch(std::string_view branch_name) const;
  // Index of a leaf by name, or by the name of its single-leaf branch; -1 if absent.
  int32_t FindLeaf(std::string_view leaf_name) const;
  // The tree's clusters (entry ranges that ROOT flushes together), following fAutoFlush and
  // the cluster ranges; a tree without cluster information is one cluster.
  std::vector<EntryRange> Clusters() const;
};

}  // namespace ferry::rootio
