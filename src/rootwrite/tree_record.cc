#include "rootwrite/tree_record.h"

#include <algorithm>

#include "rootwrite/stream_buffer.h"

namespace ferry::rootwrite {
namespace {

using rootio::LeafType;

constexpr uint32_t kIOFeaturesChecksum = 0x1aa12f10;
constexpr uint32_t kBitsTreeBranchList = 0x03004000;

// ROOT::TIOFeatures: a class-version-0 object, so its checksum follows the version.
void WriteIOFeatures(StreamBuffer& out) {
  size_t at = out.BeginObject(0);
  out.U32(kIOFeaturesChecksum);
  out.U8(0);  // fIOBits
  out.EndObject(at);
}

void WriteEmptyObjArray(StreamBuffer& out) {
  size_t at = out.BeginObject(3);
  out.TObject(kBitsObject);
  out.TString("");
  out.I32(0);
  out.I32(0);
  out.EndObject(at);
}

void WriteMinMax(StreamBuffer& out, const LeafRecord& leaf) {
  for (int64_t v : {leaf.minimum, leaf.maximum}) {
    switch (leaf.type) {
      case LeafType::kBool:
      case LeafType::kInt8:
      case LeafType::kUInt8:
        out.U8(static_cast<uint8_t>(v));
        break;
      case LeafType::kInt16:
      case LeafType::kUInt16:
        out.I16(static_cast<int16_t>(v));
        break;
      case LeafType::kInt32:
      case LeafType::kUInt32:
      case LeafType::kString:
        out.I32(static_cast<int32_t>(v));
        break;
      case LeafType::kInt64:
      case LeafType::kUInt64:
        out.I64(v);
        break;
      case LeafType::kFloat32:
        out.F32(static_cast<float>(v));
        break;
      case LeafType::kFloat64:
        out.F64(static_cast<double>(v));
        break;
      case LeafType::kUnknown:
        break;
    }
  }
}

// Writes the leaf; returns the tag later references use.
uint32_t WriteLeaf(StreamBuffer& out, const LeafRecord& leaf, const std::vector<uint32_t>& tags) {
  size_t ptr = out.BeginPointer(LeafClassName(leaf.type));
  uint32_t tag = out.TagAt(ptr);
  size_t typed = out.BeginObject(1);
  size_t base = out.BeginObject(2);
  out.TNamed(leaf.name, leaf.title, kBitsObject);
  out.I32(leaf.len);
  out.I32(leaf.type == LeafType::kString ? 1
                                         : static_cast<int32_t>(rootio::LeafTypeSize(leaf.type)));
  out.I32(0);  // fOffset
  out.Bool(leaf.is_range);
  bool is_unsigned = leaf.type == LeafType::kUInt8 || leaf.type == LeafType::kUInt16
                     || leaf.type == LeafType::kUInt32 || leaf.type == LeafType::kUInt64;
  out.Bool(is_unsigned);
  if (leaf.count_branch >= 0) {
    out.Reference(tags[static_cast<size_t>(leaf.count_branch)]);
  } else {
    out.NullPointer();
  }
  out.EndObject(base);
  WriteMinMax(out, leaf);
  out.EndObject(typed);
  out.EndObject(ptr);
  return tag;
}

uint32_t WriteBranch(StreamBuffer& out, const BranchRecord& b, const std::vector<uint32_t>& tags) {
  size_t ptr = out.BeginPointer("TBranch");
  size_t obj = out.BeginObject(13);
  out.TNamed(b.name, b.title, kBitsBranch);
  size_t fill = out.BeginObject(2);  // TAttFill
  out.I16(0);
  out.I16(1001);
  out.EndObject(fill);
  const auto written = static_cast<int32_t>(b.basket_seek.size()) - 1;
  // fMaxBaskets: room for the written baskets and the next one, in steps of 10 as ROOT grows it.
  const int32_t max_baskets = std::max(10, (written + 1 + 9) / 10 * 10);
  out.I32(b.compress);
  out.I32(b.basket_size);
  out.I32(b.entry_offset_len);
  out.I32(written);    // fWriteBasket
  out.I64(b.entries);  // fEntryNumber
  WriteIOFeatures(out);
  out.I32(0);  // fOffset
  out.I32(max_baskets);
  out.I32(0);  // fSplitLevel
  out.I64(b.entries);
  out.I64(0);  // fFirstEntry
  out.I64(b.tot_bytes);
  out.I64(b.zip_bytes);
  WriteEmptyObjArray(out);  // fBranches
  size_t leaves = out.BeginObject(3);
  out.TObject(kBitsObject);
  out.TString("");
  out.I32(1);
  out.I32(0);
  uint32_t leaf_tag = WriteLeaf(out, b.leaf, tags);
  out.EndObject(leaves);
  WriteEmptyObjArray(out);  // fBaskets: every basket is a record of its own
  const auto pad = static_cast<size_t>(max_baskets);
  out.U8(1);
  for (size_t i = 0; i < pad; ++i) {
    out.I32(i < b.basket_bytes.size() ? b.basket_bytes[i] : 0);
  }
  out.U8(1);
  for (size_t i = 0; i < pad; ++i) {
    out.I64(i < b.basket_entry.size() ? b.basket_entry[i] : 0);
  }
  out.U8(1);
  for (size_t i = 0; i < pad; ++i) {
    out.I64(i < b.basket_seek.size() ? b.basket_seek[i] : 0);
  }
  out.TString("");  // fFileName
  out.EndObject(obj);
  out.EndObject(ptr);
  return leaf_tag;
}

}  // namespace

std::string LeafClassName(LeafType type) {
  switch (type) {
    case LeafType::kBool:
      return "TLeafO";
    case LeafType::kInt8:
    case LeafType::kUInt8:
      return "TLeafB";
    case LeafType::kInt16:
    case LeafType::kUInt16:
      return "TLeafS";
    case LeafType::kInt32:
    case LeafType::kUInt32:
      return "TLeafI";
    case LeafType::kInt64:
    case LeafType::kUInt64:
      return "TLeafL";
    case LeafType::kFloat32:
      return "TLeafF";
    case LeafType::kFloat64:
      return "TLeafD";
    case LeafType::kString:
      return "TLeafC";
    case LeafType::kUnknown:
      break;
  }
  return "";
}

char LeafTypeCode(LeafType type) {
  switch (type) {
    case LeafType::kBool:
      return 'O';
    case LeafType::kInt8:
      return 'B';
    case LeafType::kUInt8:
      return 'b';
    case LeafType::kInt16:
      return 'S';
    case LeafType::kUInt16:
      return 's';
    case LeafType::kInt32:
      return 'I';
    case LeafType::kUInt32:
      return 'i';
    case LeafType::kInt64:
      return 'L';
    case LeafType::kUInt64:
      return 'l';
    case LeafType::kFloat32:
      return 'F';
    case LeafType::kFloat64:
      return 'D';
    case LeafType::kString:
      return 'C';
    case LeafType::kUnknown:
      break;
  }
  return '?';
}

std::vector<uint8_t> SerializeTree(const TreeRecord& t, uint32_t key_len) {
  StreamBuffer out(key_len);
  out.Reserve(4096 + t.branches.size() * 512);
  size_t tree = out.BeginObject(20);
  out.TNamed(t.name, t.title, kBitsTree);
  size_t line = out.BeginObject(2);  // TAttLine: color 602, style 1, width 1
  out.I16(602);
  out.I16(1);
  out.I16(1);
  out.EndObject(line);
  size_t fill = out.BeginObject(2);  // TAttFill: color 0, style 1001
  out.I16(0);
  out.I16(1001);
  out.EndObject(fill);
  size_t marker = out.BeginObject(2);  // TAttMarker: color 1, style 1, size 1
  out.I16(1);
  out.I16(1);
  out.F32(1.0f);
  out.EndObject(marker);
  out.I64(t.entries);
  out.I64(t.tot_bytes);
  out.I64(t.zip_bytes);
  out.I64(t.saved_bytes);
  out.I64(t.flushed_bytes);
  out.F64(1.0);   // fWeight
  out.I32(0);     // fTimerInterval
  out.I32(25);    // fScanField
  out.I32(0);     // fUpdate
  out.I32(1000);  // fDefaultEntryOffsetLen
  const auto nranges = static_cast<uint32_t>(t.cluster_range_end.size());
  out.U32(nranges);
  out.I64(1000000000000);  // fMaxEntries
  out.I64(1000000000000);  // fMaxEntryLoop
  out.I64(0);              // fMaxVirtualSize
  out.I64(t.auto_save);
  out.I64(t.auto_flush);
  out.I64(1000000);  // fEstimate
  for (const auto* arr : {&t.cluster_range_end, &t.cluster_size}) {
    out.U8(nranges > 0 ? 1 : 0);
    for (uint32_t i = 0; i < nranges; ++i) {
      out.I64(i < arr->size() ? (*arr)[i] : 0);
    }
  }
  WriteIOFeatures(out);

  std::vector<uint32_t> leaf_tags;
  leaf_tags.reserve(t.branches.size());
  size_t branches = out.BeginObject(3);
  out.TObject(kBitsTreeBranchList);
  out.TString("");
  out.I32(static_cast<int32_t>(t.branches.size()));
  out.I32(0);
  for (const BranchRecord& b : t.branches) {
    leaf_tags.push_back(WriteBranch(out, b, leaf_tags));
  }
  out.EndObject(branches);
  size_t leaves = out.BeginObject(3);
  out.TObject(kBitsObject);
  out.TString("");
  out.I32(static_cast<int32_t>(leaf_tags.size()));
  out.I32(0);
  for (uint32_t tag : leaf_tags) {
    out.Reference(tag);
  }
  out.EndObject(leaves);
  out.NullPointer();  // fAliases
  out.I32(0);         // fIndexValues (TArrayD, no elements)
  out.I32(0);         // fIndex (TArrayI, no elements)
  out.NullPointer();  // fTreeIndex
  out.NullPointer();  // fFriends
  out.NullPointer();  // fUserInfo
  out.NullPointer();  // fBranchRef
  out.EndObject(tree);
  return out.Take();
}

}  // namespace ferry::rootwrite
