// The StreamerInfo record: a TList of TStreamerInfo objects describing, member by member, every
// class whose objects a file contains, so that ROOT (and jsroot, which builds its TTree
// streamers from this record) can read them.
//
// ferry describes the classes of a flat TTree (TTree v20, TBranch v13, TLeaf v2, the typed
// leaves v1, TObjArray, TNamed, TObject, TAttLine/Fill/Marker, ROOT::TIOFeatures, TList,
// TSeqCollection, TCollection, TString) and the RNTuple anchor (ROOT::RNTuple v2, which jsroot
// needs to find an RNTuple) in a table of members with ROOT's type codes, sizes, titles and
// class checksums (the values ROOT 6 records for these class versions), and serialises them
// with the framing of stream_buffer.h:
//
//   TList v5 { TObject, name "", count, then per class:
//     pointer -> TStreamerInfo v9 { TNamed(class, ""), checksum, class version,
//                                   pointer -> TObjArray v3 { elements as pointers } }
//     and a one-byte option string }
//   element = TStreamerBase v3 | TStreamerBasicType v2 | TStreamerString v2 |
//             TStreamerObject v2 | TStreamerObjectAny v2 | TStreamerObjectPointer v2 |
//             TStreamerBasicPointer v2, each around a TStreamerElement v4 { TNamed, fType,
//             fSize, fArrayLength, fArrayDim, fMaxIndex[5], fTypeName } (+ base version, or
//             counter version/name/class).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ferry::rootwrite {

enum class ElementKind : uint8_t {
  kBase,           // a base class; fMaxIndex[1] holds the base's checksum
  kBasicType,      // a number
  kString,         // a TString member
  kObject,         // an embedded object with its own streamer (TObjArray)
  kObjectAny,      // an embedded object without TObject base (TIOFeatures, TArrayD)
  kObjectPointer,  // a pointer to an object
  kBasicPointer,   // a counted array of numbers ("[fMaxBaskets]")
};

struct ElementDesc {
  ElementKind kind;
  std::string_view name;
  std::string_view title;
  int32_t type;  // ROOT's TStreamerInfo::EReadWrite code
  int32_t size;
  std::string_view type_name;
  int32_t version = 0;    // kBase: base class version; kBasicPointer: counter's class version
  uint32_t checksum = 0;  // kBase: base class checksum
  std::string_view count_name = {};   // kBasicPointer
  std::string_view count_class = {};  // kBasicPointer
};

struct ClassDesc {
  std::string_view name;
  int32_t version;
  uint32_t checksum;
  std::span<const ElementDesc> elements;
};

// The description of a class ferry writes, or nullptr.
const ClassDesc* FindClassDesc(std::string_view class_name);

// The classes every flat-tree file needs, followed by the leaf classes given (TLeafF, ...).
std::vector<std::string> FlatTreeClasses(std::span<const std::string> leaf_classes);

// Serialises the TList of TStreamerInfo for the classes named (in that order) as the payload
// of a record whose key is key_len bytes long. InvalidArgument for an unknown class.
Result<std::vector<uint8_t>> BuildStreamerInfoList(std::span<const std::string> classes,
                                                   uint32_t key_len);

}  // namespace ferry::rootwrite
