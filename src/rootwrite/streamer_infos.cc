#include "rootwrite/streamer_infos.h"

#include <array>

#include "rootwrite/stream_buffer.h"

namespace ferry::rootwrite {
namespace {

// ROOT's member type codes (TVirtualStreamerInfo::EReadWrite).
constexpr int32_t kChar = 1;
constexpr int32_t kShort = 2;
constexpr int32_t kInt = 3;
constexpr int32_t kFloat = 5;
constexpr int32_t kCounter = 6;
constexpr int32_t kDouble = 8;
constexpr int32_t kUChar = 11;
constexpr int32_t kUShort = 12;
constexpr int32_t kUInt = 13;
constexpr int32_t kBits = 15;
constexpr int32_t kLong64 = 16;
constexpr int32_t kULong64 = 17;
constexpr int32_t kBool = 18;
constexpr int32_t kOffsetP = 40;  // counted array of the basic type that follows
constexpr int32_t kObject = 61;
constexpr int32_t kAny = 62;
constexpr int32_t kObjectP = 64;
constexpr int32_t kTString = 65;
constexpr int32_t kTObject = 66;
constexpr int32_t kTNamed = 67;
constexpr int32_t kBase = 0;

// Class checksums ROOT 6 records for the class versions written here.
constexpr uint32_t kCkTObject = 0x901bc02d;
constexpr uint32_t kCkTNamed = 0xdfb74a3c;
constexpr uint32_t kCkTCollection = 0x57e3cb9c;
constexpr uint32_t kCkTSeqCollection = 0xfc6c3bc6;
constexpr uint32_t kCkTAttLine = 0x94074549;
constexpr uint32_t kCkTAttFill = 0xffd92a92;
constexpr uint32_t kCkTAttMarker = 0x291d8bec;
constexpr uint32_t kCkTLeaf = 0x6d1e8152;

constexpr std::string_view kObjectTitle = "Basic ROOT object";
constexpr std::string_view kNamedTitle = "The basis for a named object (name, title)";
constexpr std::string_view kSeqTitle = "Sequenceable collection ABC";
constexpr std::string_view kLeafTitle = "Leaf: description of a Branch data type";
constexpr std::string_view kMinTitle = "Minimum value if leaf range is specified";
constexpr std::string_view kMaxTitle = "Maximum value if leaf range is specified";

using E = ElementDesc;
using K = ElementKind;

constexpr E Base(std::string_view name,
                 std::string_view title,
                 int32_t type,
                 int32_t version,
                 uint32_t checksum) {
  return {K::kBase, name, title, type, 0, "BASE", version, checksum};
}
constexpr E Basic(std::string_view name,
                  std::string_view title,
                  int32_t type,
                  int32_t size,
                  std::string_view type_name) {
  return {K::kBasicType, name, title, type, size, type_name};
}
constexpr E String(std::string_view name, std::string_view title) {
  return {K::kString, name, title, kTString, 24, "TString"};
}
constexpr E ObjectP(std::string_view name, std::string_view title, std::string_view type_name) {
  return {K::kObjectPointer, name, title, kObjectP, 8, type_name};
}
constexpr E Counted(std::string_view name,
                    std::string_view title,
                    int32_t type,
                    std::string_view type_name,
                    int32_t count_version,
                    std::string_view count_name,
                    std::string_view count_class) {
  return {K::kBasicPointer, name,          title, kOffsetP + type, 8,
          type_name,        count_version, 0,     count_name,      count_class};
}

constexpr E kTObjectMembers[] = {
    Basic("fUniqueID", "object unique identifier", kUInt, 4, "unsigned int"),
    Basic("fBits", "bit field status word", kBits, 4, "unsigned int"),
};
constexpr E kTNamedMembers[] = {
    Base("TObject", kObjectTitle, kTObject, 1, kCkTObject),
    String("fName", "object identifier"),
    String("fTitle", "object title"),
};
constexpr E kTListMembers[] = {
    Base("TSeqCollection", kSeqTitle, kBase, 0, kCkTSeqCollection),
};
constexpr E kTSeqCollectionMembers[] = {
    Base("TCollection", "Collection abstract base class", kBase, 3, kCkTCollection),
};
constexpr E kTCollectionMembers[] = {
    Base("TObject", kObjectTitle, kTObject, 1, kCkTObject),
    String("fName", "name of the collection"),
    Basic("fSize", "number of elements in collection", kInt, 4, "int"),
};
constexpr E kTAttLineMembers[] = {
    Basic("fLineColor", "Line color", kShort, 2, "short"),
    Basic("fLineStyle", "Line style", kShort, 2, "short"),
    Basic("fLineWidth", "Line width", kShort, 2, "short"),
};
constexpr E kTAttFillMembers[] = {
    Basic("fFillColor", "Fill area color", kShort, 2, "short"),
    Basic("fFillStyle", "Fill area style", kShort, 2, "short"),
};
constexpr E kTAttMarkerMembers[] = {
    Basic("fMarkerColor", "Marker color index", kShort, 2, "short"),
    Basic("fMarkerStyle", "Marker style", kShort, 2, "short"),
    Basic("fMarkerSize", "Marker size", kFloat, 4, "float"),
};
constexpr E kTIOFeaturesMembers[] = {
    Basic("fIOBits", "", kUChar, 1, "unsigned char"),
};
constexpr E kTObjArrayMembers[] = {
    Base("TSeqCollection", kSeqTitle, kBase, 0, kCkTSeqCollection),
    Basic("fLowerBound", "Lower bound of the array", kInt, 4, "Int_t"),
    Basic("fLast", "Last element in array containing an object", kInt, 4, "Int_t"),
};

constexpr E kTTreeMembers[] = {
    Base("TNamed", kNamedTitle, kTNamed, 1, kCkTNamed),
    Base("TAttLine", "Line attributes", kBase, 2, kCkTAttLine),
    Base("TAttFill", "Fill area attributes", kBase, 2, kCkTAttFill),
    Base("TAttMarker", "Marker attributes", kBase, 2, kCkTAttMarker),
    Basic("fEntries", "Number of entries", kLong64, 8, "Long64_t"),
    Basic("fTotBytes",
          "Total number of bytes in all branches before compression",
          kLong64,
          8,
          "Long64_t"),
    Basic("fZipBytes",
          "Total number of bytes in all branches after compression",
          kLong64,
          8,
          "Long64_t"),
    Basic("fSavedBytes", "Number of autosaved bytes", kLong64, 8, "Long64_t"),
    Basic("fFlushedBytes", "Number of auto-flushed bytes", kLong64, 8, "Long64_t"),
    Basic("fWeight", "Tree weight (see TTree::SetWeight)", kDouble, 8, "double"),
    Basic("fTimerInterval", "Timer interval in milliseconds", kInt, 4, "int"),
    Basic("fScanField", "Number of runs before prompting in Scan", kInt, 4, "int"),
    Basic("fUpdate", "Update frequency for EntryLoop", kInt, 4, "int"),
    Basic("fDefaultEntryOffsetLen",
          "Initial Length of fEntryOffset table in the basket buffers",
          kInt,
          4,
          "int"),
    Basic("fNClusterRange",
          "Number of Cluster range in addition to the one defined by 'AutoFlush'",
          kCounter,
          4,
          "int"),
    Basic("fMaxEntries",
          "Maximum number of entries in case of circular buffers",
          kLong64,
          8,
          "Long64_t"),
    Basic("fMaxEntryLoop", "Maximum number of entries to process", kLong64, 8, "Long64_t"),
    Basic(
        "fMaxVirtualSize", "Maximum total size of buffers kept in memory", kLong64, 8, "Long64_t"),
    Basic("fAutoSave",
          "Autosave tree when fAutoSave entries written or -fAutoSave (compressed) bytes produced",
          kLong64,
          8,
          "Long64_t"),
    Basic("fAutoFlush",
          "Auto-flush tree when fAutoFlush entries written or -fAutoFlush (compressed) bytes "
          "produced",
          kLong64,
          8,
          "Long64_t"),
    Basic("fEstimate", "Number of entries to estimate histogram limits", kLong64, 8, "Long64_t"),
    Counted("fClusterRangeEnd",
            "[fNClusterRange] Last entry of a cluster range.",
            kLong64,
            "Long64_t*",
            20,
            "fNClusterRange",
            "TTree"),
    Counted("fClusterSize",
            "[fNClusterRange] Number of entries in each cluster for a given range.",
            kLong64,
            "Long64_t*",
            20,
            "fNClusterRange",
            "TTree"),
    {K::kObjectAny, "fIOFeatures", "IO features to define for newly-written baskets and branches.",
     kAny, 1, "ROOT::TIOFeatures"},
    {K::kObject, "fBranches", "List of Branches", kObject, 64, "TObjArray"},
    {K::kObject, "fLeaves", "Direct pointers to individual branch leaves", kObject, 64,
     "TObjArray"},
    ObjectP("fAliases", "List of aliases for expressions based on the tree branches.", "TList*"),
    {K::kObjectAny, "fIndexValues", "Sorted index values", kAny, 24, "TArrayD"},
    {K::kObjectAny, "fIndex", "Index of sorted values", kAny, 24, "TArrayI"},
    ObjectP("fTreeIndex", "Pointer to the tree Index (if any)", "TVirtualIndex*"),
    ObjectP("fFriends", "pointer to list of friend elements", "TList*"),
    ObjectP("fUserInfo", "pointer to a list of user objects associated to this Tree", "TList*"),
    ObjectP("fBranchRef", "Branch supporting the TRefTable (if any)", "TBranchRef*"),
};

constexpr E kTBranchMembers[] = {
    Base("TNamed", kNamedTitle, kTNamed, 1, kCkTNamed),
    Base("TAttFill", "Fill area attributes", kBase, 2, kCkTAttFill),
    Basic("fCompress", "Compression level and algorithm", kInt, 4, "int"),
    Basic("fBasketSize", "Initial Size of  Basket Buffer", kInt, 4, "int"),
    Basic("fEntryOffsetLen",
          "Initial Length of fEntryOffset table in the basket buffers",
          kInt,
          4,
          "int"),
    Basic("fWriteBasket", "Last basket number written", kInt, 4, "int"),
    Basic("fEntryNumber",
          "Current entry number (last one filled in this branch)",
          kLong64,
          8,
          "Long64_t"),
    {K::kObjectAny, "fIOFeatures", "IO features for newly-created baskets.", kAny, 1,
     "ROOT::TIOFeatures"},
    Basic("fOffset", "Offset of this branch", kInt, 4, "int"),
    Basic("fMaxBaskets", "Maximum number of Baskets so far", kCounter, 4, "int"),
    Basic("fSplitLevel", "Branch split level", kInt, 4, "int"),
    Basic("fEntries", "Number of entries", kLong64, 8, "Long64_t"),
    Basic("fFirstEntry", "Number of the first entry in this branch", kLong64, 8, "Long64_t"),
    Basic("fTotBytes",
          "Total number of bytes in all leaves before compression",
          kLong64,
          8,
          "Long64_t"),
    Basic("fZipBytes",
          "Total number of bytes in all leaves after compression",
          kLong64,
          8,
          "Long64_t"),
    {K::kObject, "fBranches", "-> List of Branches of this branch", kObject, 64, "TObjArray"},
    {K::kObject, "fLeaves", "-> List of leaves of this branch", kObject, 64, "TObjArray"},
    {K::kObject, "fBaskets", "-> List of baskets of this branch", kObject, 64, "TObjArray"},
    Counted("fBasketBytes",
            "[fMaxBaskets] Length of baskets on file",
            kInt,
            "int*",
            13,
            "fMaxBaskets",
            "TBranch"),
    Counted("fBasketEntry",
            "[fMaxBaskets] Table of first entry in each basket",
            kLong64,
            "Long64_t*",
            13,
            "fMaxBaskets",
            "TBranch"),
    Counted("fBasketSeek",
            "[fMaxBaskets] Addresses of baskets on file",
            kLong64,
            "Long64_t*",
            13,
            "fMaxBaskets",
            "TBranch"),
    String("fFileName",
           "Name of file where buffers are stored (\"\" if in same file as Tree header)"),
};

constexpr E kTLeafMembers[] = {
    Base("TNamed", kNamedTitle, kTNamed, 1, kCkTNamed),
    Basic("fLen", "Number of fixed length elements", kInt, 4, "int"),
    Basic("fLenType", "Number of bytes for this data type", kInt, 4, "int"),
    Basic("fOffset", "Offset in ClonesArray object (if one)", kInt, 4, "int"),
    Basic("fIsRange", "(=kTRUE if leaf has a range, kFALSE otherwise)", kBool, 1, "bool"),
    Basic("fIsUnsigned", "(=kTRUE if unsigned, kFALSE otherwise)", kBool, 1, "bool"),
    ObjectP("fLeafCount",
            "Pointer to Leaf count if variable length (we do not own the counter)",
            "TLeaf*"),
};

// A typed leaf: the TLeaf base and fMinimum/fMaximum of its value type.
#define FERRY_TYPED_LEAF(var, type, size, type_name)                        \
  constexpr E var[] = {Base("TLeaf", kLeafTitle, kBase, 2, kCkTLeaf),       \
                       Basic("fMinimum", kMinTitle, type, size, type_name), \
                       Basic("fMaximum", kMaxTitle, type, size, type_name)};
FERRY_TYPED_LEAF(kTLeafOMembers, kBool, 1, "bool")
FERRY_TYPED_LEAF(kTLeafBMembers, kChar, 1, "char")
FERRY_TYPED_LEAF(kTLeafSMembers, kShort, 2, "short")
FERRY_TYPED_LEAF(kTLeafIMembers, kInt, 4, "int")
FERRY_TYPED_LEAF(kTLeafLMembers, kLong64, 8, "Long64_t")
FERRY_TYPED_LEAF(kTLeafFMembers, kFloat, 4, "float")
FERRY_TYPED_LEAF(kTLeafDMembers, kDouble, 8, "double")
FERRY_TYPED_LEAF(kTLeafCMembers, kInt, 4, "int")
#undef FERRY_TYPED_LEAF

// The RNTuple anchor (class version 2, ROOT 6.34): its members as ROOT records them, without
// titles. The anchor's trailing checksum is no member: ROOT's custom streamer appends it.
constexpr E kRntupleMembers[] = {
    Basic("fVersionEpoch", "", kUShort, 2, "unsigned short"),
    Basic("fVersionMajor", "", kUShort, 2, "unsigned short"),
    Basic("fVersionMinor", "", kUShort, 2, "unsigned short"),
    Basic("fVersionPatch", "", kUShort, 2, "unsigned short"),
    Basic("fSeekHeader", "", kULong64, 8, "ULong64_t"),
    Basic("fNBytesHeader", "", kULong64, 8, "ULong64_t"),
    Basic("fLenHeader", "", kULong64, 8, "ULong64_t"),
    Basic("fSeekFooter", "", kULong64, 8, "ULong64_t"),
    Basic("fNBytesFooter", "", kULong64, 8, "ULong64_t"),
    Basic("fLenFooter", "", kULong64, 8, "ULong64_t"),
    Basic("fMaxKeySize", "", kULong64, 8, "ULong64_t"),
};

constexpr ClassDesc kClasses[] = {
    {"TObject", 1, kCkTObject, kTObjectMembers},
    {"TNamed", 1, kCkTNamed, kTNamedMembers},
    {"TList", 5, 0x69c5c3bb, kTListMembers},
    {"TSeqCollection", 0, kCkTSeqCollection, kTSeqCollectionMembers},
    {"TCollection", 3, kCkTCollection, kTCollectionMembers},
    {"TString", 2, 0x00017419, {}},
    {"TAttLine", 2, kCkTAttLine, kTAttLineMembers},
    {"TAttFill", 2, kCkTAttFill, kTAttFillMembers},
    {"TAttMarker", 2, kCkTAttMarker, kTAttMarkerMembers},
    {"ROOT::TIOFeatures", 1, 0x1aa12f10, kTIOFeaturesMembers},
    {"TObjArray", 3, 0xa99e6552, kTObjArrayMembers},
    {"TTree", 20, 0x7264e07f, kTTreeMembers},
    {"TBranch", 13, 0x10978aac, kTBranchMembers},
    {"TLeaf", 2, kCkTLeaf, kTLeafMembers},
    {"TLeafO", 1, 0x02ae48d3, kTLeafOMembers},
    {"TLeafB", 1, 0x0f1e4b5e, kTLeafBMembers},
    {"TLeafS", 1, 0x150ceecf, kTLeafSMembers},
    {"TLeafI", 1, 0x7e6aae19, kTLeafIMembers},
    {"TLeafL", 1, 0xde320862, kTLeafLMembers},
    {"TLeafF", 1, 0x3add9d72, kTLeafFMembers},
    {"TLeafD", 1, 0x118e8776, kTLeafDMembers},
    {"TLeafC", 1, 0xfbe3b2f3, kTLeafCMembers},
    {"ROOT::RNTuple", 2, 0x4ba21bf5, kRntupleMembers},
};

struct ElementClass {
  std::string_view name;
  int16_t version;
};

ElementClass ClassOf(ElementKind kind) {
  switch (kind) {
    case K::kBase:
      return {"TStreamerBase", 3};
    case K::kBasicType:
      return {"TStreamerBasicType", 2};
    case K::kString:
      return {"TStreamerString", 2};
    case K::kObject:
      return {"TStreamerObject", 2};
    case K::kObjectAny:
      return {"TStreamerObjectAny", 2};
    case K::kObjectPointer:
      return {"TStreamerObjectPointer", 2};
    case K::kBasicPointer:
      return {"TStreamerBasicPointer", 2};
  }
  return {"TStreamerElement", 4};
}

void WriteElement(StreamBuffer& out, const ElementDesc& e) {
  ElementClass ec = ClassOf(e.kind);
  size_t ptr = out.BeginPointer(ec.name);
  size_t outer = out.BeginObject(ec.version);
  size_t elem = out.BeginObject(4);  // TStreamerElement
  out.TNamed(e.name, e.title, kBitsObject);
  out.I32(e.type);
  out.I32(e.size);
  out.I32(0);  // fArrayLength
  out.I32(0);  // fArrayDim
  std::array<uint32_t, 5> max_index{};
  if (e.kind == K::kBase) {
    max_index[1] = e.checksum;
  }
  for (uint32_t m : max_index) {
    out.U32(m);
  }
  out.TString(e.type_name);
  out.EndObject(elem);
  if (e.kind == K::kBase) {
    out.I32(e.version);
  } else if (e.kind == K::kBasicPointer) {
    out.I32(e.version);
    out.TString(e.count_name);
    out.TString(e.count_class);
  }
  out.EndObject(outer);
  out.EndObject(ptr);
}

void WriteStreamerInfo(StreamBuffer& out, const ClassDesc& c) {
  size_t ptr = out.BeginPointer("TStreamerInfo");
  size_t info = out.BeginObject(9);
  out.TNamed(c.name, "", kBitsStreamerInfo);
  out.U32(c.checksum);
  out.I32(c.version);
  size_t arr_ptr = out.BeginPointer("TObjArray");
  size_t arr = out.BeginObject(3);
  out.TObject(kBitsCollection);
  out.TString("");
  out.I32(static_cast<int32_t>(c.elements.size()));
  out.I32(0);  // lower bound
  for (const ElementDesc& e : c.elements) {
    WriteElement(out, e);
  }
  out.EndObject(arr);
  out.EndObject(arr_ptr);
  out.EndObject(info);
  out.EndObject(ptr);
}

}  // namespace

const ClassDesc* FindClassDesc(std::string_view class_name) {
  for (const ClassDesc& c : kClasses) {
    if (c.name == class_name) {
      return &c;
    }
  }
  return nullptr;
}

std::vector<std::string> FlatTreeClasses(std::span<const std::string> leaf_classes) {
  std::vector<std::string> out = {"TTree",    "TNamed",     "TObject",           "TAttLine",
                                  "TAttFill", "TAttMarker", "ROOT::TIOFeatures", "TBranch",
                                  "TLeaf"};
  for (const std::string& lc : leaf_classes) {
    bool seen = false;
    for (const std::string& have : out) {
      seen = seen || have == lc;
    }
    if (!seen) {
      out.push_back(lc);
    }
  }
  for (const char* tail : {"TObjArray", "TSeqCollection", "TCollection", "TList", "TString"}) {
    out.emplace_back(tail);
  }
  return out;
}

Result<std::vector<uint8_t>> BuildStreamerInfoList(std::span<const std::string> classes,
                                                   uint32_t key_len) {
  StreamBuffer out(key_len);
  size_t list = out.BeginObject(5);
  out.TObject(kBitsCollection);
  out.TString("");
  out.I32(static_cast<int32_t>(classes.size()));
  for (const std::string& name : classes) {
    const ClassDesc* c = FindClassDesc(name);
    if (c == nullptr) {
      return InvalidArgumentError("no streamer description for class " + name);
    }
    WriteStreamerInfo(out, *c);
    out.U8(0);  // the list's option string for this element
  }
  out.EndObject(list);
  return out.Take();
}

}  // namespace ferry::rootwrite
