// The TTree record: serialises a finished flat tree's metadata (TTree v20 with TBranch v13 and
// one typed leaf per branch) as the payload of the tree's key.
//
//   TTree v20 { TNamed, TAttLine, TAttFill, TAttMarker, fEntries .. fEstimate,
//               fClusterRangeEnd/fClusterSize (marker byte + array), fIOFeatures,
//               fBranches (TObjArray of TBranch), fLeaves (TObjArray of references to the
//               leaves already streamed inside the branches), null fAliases, empty
//               fIndexValues/fIndex, null fTreeIndex/fFriends/fUserInfo/fBranchRef }
//   TBranch v13 { TNamed, TAttFill, fCompress .. fZipBytes, empty fBranches, fLeaves with the
//                 leaf, empty fBaskets, fBasketBytes/fBasketEntry/fBasketSeek[fMaxBaskets] }
//   TLeafX v1 { TLeaf v2 { TNamed, fLen, fLenType, fOffset, fIsRange, fIsUnsigned,
//                          fLeafCount (reference to the counter's leaf, or null) },
//               fMinimum, fMaximum }
//
// Counter branches must precede the branches they count, so fLeafCount is always a reference
// to a leaf already in the buffer (tags are key positions + 2; see stream_buffer.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rootio/tree_model.h"

namespace ferry::rootwrite {

struct LeafRecord {
  std::string name;
  std::string title;  // "Jet_pt[nJet]", "ai4[3]", "x"
  rootio::LeafType type = rootio::LeafType::kUnknown;
  int32_t len = 1;            // fLen (for strings: longest string + 1)
  bool is_range = false;      // set on counter leaves, as ROOT does
  int32_t count_branch = -1;  // index of the counter branch, -1 if none
  int64_t minimum = 0;        // fMinimum/fMaximum for integer, bool and string leaves
  int64_t maximum = 0;
};

struct BranchRecord {
  std::string name;
  std::string title;
  int32_t compress = 0;
  int32_t basket_size = 0;
  int32_t entry_offset_len = 0;
  int64_t entries = 0;
  int64_t tot_bytes = 0;
  int64_t zip_bytes = 0;
  // One slot per written basket plus the next one (fBasketEntry of the slot after the last
  // basket is fEntries); padded to fMaxBaskets with zeros when serialised.
  std::vector<int32_t> basket_bytes;
  std::vector<int64_t> basket_entry;
  std::vector<int64_t> basket_seek;
  LeafRecord leaf;
};

struct TreeRecord {
  std::string name;
  std::string title;
  int64_t entries = 0;
  int64_t tot_bytes = 0;
  int64_t zip_bytes = 0;
  int64_t saved_bytes = 0;
  int64_t flushed_bytes = 0;
  int64_t auto_save = -300000000;
  int64_t auto_flush = -30000000;
  std::vector<int64_t> cluster_range_end;
  std::vector<int64_t> cluster_size;
  std::vector<BranchRecord> branches;
};

// ROOT's leaf class for a type: TLeafO/B/S/I/L/F/D/C ("" for kUnknown).
std::string LeafClassName(rootio::LeafType type);
// ROOT's type letter in branch titles ("x/F"): O B b S s I i L l F D C.
char LeafTypeCode(rootio::LeafType type);

// The payload of the TTree key, for a key of key_len bytes.
std::vector<uint8_t> SerializeTree(const TreeRecord& tree, uint32_t key_len);

}  // namespace ferry::rootwrite
