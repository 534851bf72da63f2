#include "rootio/tree_parse.h"

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rootio/cursor.h"
#include "rootio/object_stream.h"

namespace ferry::rootio {
namespace {

constexpr int kMaxBranchDepth = 32;
constexpr int kMaxLeafCountDepth = 8;

struct LeafClass {
  std::string_view name;
  LeafType signed_type;
  LeafType unsigned_type;
};

constexpr LeafClass kLeafClasses[] = {
    {"TLeafO", LeafType::kBool, LeafType::kBool},
    {"TLeafB", LeafType::kInt8, LeafType::kUInt8},
    {"TLeafS", LeafType::kInt16, LeafType::kUInt16},
    {"TLeafI", LeafType::kInt32, LeafType::kUInt32},
    {"TLeafL", LeafType::kInt64, LeafType::kUInt64},
    {"TLeafG", LeafType::kInt64, LeafType::kUInt64},
    {"TLeafF", LeafType::kFloat32, LeafType::kFloat32},
    {"TLeafD", LeafType::kFloat64, LeafType::kFloat64},
    {"TLeafC", LeafType::kString, LeafType::kString},
};

// A streamed member the parser steps over: its name, its size on disk, and the first class
// version that streams it. The tables below list, in stream order, the members between two
// that are read (docs/format/root.md gives the whole records); a parser skips a run with
// SkipMembers and finds a member's position in a run with OffsetOf.
struct Member {
  std::string_view name;
  uint8_t bytes;
  int16_t since = 0;
};

// TTree, after fEntries.
constexpr Member kTreeSizes[] = {
    {"fTotBytes", 8},         {"fZipBytes", 8}, {"fSavedBytes", 8},
    {"fFlushedBytes", 8, 18}, {"fWeight", 8},   {"fTimerInterval", 4},
    {"fScanField", 4},        {"fUpdate", 4},   {"fDefaultEntryOffsetLen", 4, 17},
};
// TTree, after fNClusterRange (or fDefaultEntryOffsetLen before version 19).
constexpr Member kTreeLimits[] = {
    {"fMaxEntries", 8}, {"fMaxEntryLoop", 8}, {"fMaxVirtualSize", 8}, {"fAutoSave", 8}};
// TTree, after fAutoFlush (version 18 on).
constexpr Member kTreeEstimate[] = {{"fEstimate", 8}};
// TBranch, after fWriteBasket; fIOFeatures (version 13 on) follows.
constexpr Member kBranchEntryNumber[] = {{"fEntryNumber", 8}};
// TBranch, after fIOFeatures.
constexpr Member kBranchOffset[] = {{"fOffset", 4}};
// TBranch, after fMaxBaskets.
constexpr Member kBranchSplitLevel[] = {{"fSplitLevel", 4}};
// TBranch, after fEntries.
constexpr Member kBranchFirstEntry[] = {{"fFirstEntry", 8, 11}};
// TLeaf, after fLenType: the in-memory offset (a basket's buffer is packed).
constexpr Member kLeafOffset[] = {{"fOffset", 4}};
// A TBasket's key header, in pieces around the fields read (fVersion, fKeylen).
constexpr Member kKeyNbytes[] = {{"fNbytes", 4}};
constexpr Member kKeyObjlenDatime[] = {{"fObjlen", 4}, {"fDatime", 4}};
constexpr Member kKeyCycle[] = {{"fCycle", 2}};
// fSeekKey and fSeekPdir: 32-bit, or 64-bit in keys of version > 1000 (files past 2 GB).
constexpr Member kKeySeeksSmall[] = {{"fSeekKey", 4}, {"fSeekPdir", 4}};
constexpr Member kKeySeeksBig[] = {{"fSeekKey", 8}, {"fSeekPdir", 8}};
// The TBasket after its key's strings, before fNevBufSize.
constexpr Member kBasketHead[] = {{"fVersion", 2}, {"fBufferSize", 4}};
// After fNevBufSize, when it is negative: that sign says fIOBits follows.
constexpr Member kBasketIOBits[] = {{"fIOBits", 1}};

// The bytes a run of members takes in a record of class version v.
constexpr size_t BytesOf(std::span<const Member> run, int16_t v) {
  size_t n = 0;
  for (const Member& m : run) {
    n += m.since <= v ? m.bytes : 0;
  }
  return n;
}

// Where member `name` starts inside the run, in a record of class version v.
constexpr size_t OffsetOf(std::span<const Member> run, std::string_view name, int16_t v) {
  size_t n = 0;
  for (const Member& m : run) {
    if (m.name == name) {
      return n;
    }
    n += m.since <= v ? m.bytes : 0;
  }
  return n;
}

static_assert(BytesOf(kTreeSizes, 16) == 8 * 3 + 8 + 4 * 3);
static_assert(BytesOf(kTreeSizes, 18) == 8 * 4 + 8 + 4 * 3 + 4);
static_assert(OffsetOf(kTreeSizes, "fZipBytes", 16) == 8);

LeafType TypeOfLeafClass(std::string_view cls, bool is_unsigned) {
  for (const auto& lc : kLeafClasses) {
    if (lc.name == cls) {
      return is_unsigned ? lc.unsigned_type : lc.signed_type;
    }
  }
  return LeafType::kUnknown;
}

class TreeParser {
 public:
  TreeParser(std::span<const uint8_t> payload, uint16_t keylen) : c_(payload), tags_(keylen) {}

  Result<TreeInfo> Parse() {
    FERRY_TRY(ParseTreeBody());
    return std::move(info_);
  }

 private:
  using ElementFn = std::function<Status(const ObjectTag&, size_t)>;

  Error Truncated(const char* what) { return CorruptionError(std::string(what) + " truncated"); }

  // A TObjArray: its own frame, a TObject (version 3 on) and a name (version 2 on), the count
  // and lower bound, then one tagged object per element. After each new object the cursor moves
  // to the end its byte count gives, so members this parser does not read (a newer class
  // version, a class it skips) cost nothing and cannot shift what follows.
  Status ForEachInObjArray(const char* what, const ElementFn& fn) {
    Framed f = ReadFramed(c_);
    if (f.version > 2) {
      SkipTObject(c_);
    }
    if (f.version > 1) {
      (void)c_.TString();
    }
    int32_t n = c_.I32();
    (void)c_.I32();  // lower bound
    if (!c_.ok()) {
      return Truncated(what);
    }
    // Every element takes at least its 4-byte tag: a larger count is corruption, and checking it
    // here bounds the loop by the bytes there are.
    if (n < 0 || static_cast<size_t>(n) > c_.remaining() / 4) {
      return CorruptionError(std::string(what) + ": impossible element count " + std::to_string(n));
    }
    for (int32_t i = 0; i < n; ++i) {
      ObjectTag tag = FERRY_TRY(tags_.Read(c_));
      FERRY_TRY(fn(tag, static_cast<size_t>(i)));
      if (tag.kind == ObjectTag::Kind::kNew && tag.end != 0) {
        if (c_.pos() > tag.end) {
          return CorruptionError(std::string(what) + ": element " + std::to_string(i) + " ("
                                 + tag.class_name + ") overruns its byte count");
        }
        c_.Seek(tag.end);
      }
    }
    if (f.counted) {
      return SkipToEnd(c_, f, what);
    }
    return OkStatus();
  }

  // Steps over a run of members of a record of class version v (version 0: a run whose members
  // do not depend on it).
  void SkipMembers(std::span<const Member> run, int16_t v = 0) { c_.Skip(BytesOf(run, v)); }

  Status SkipFramed(const char* what) {
    Framed f = ReadFramed(c_);
    return SkipToEnd(c_, f, what);
  }

  Status ParseTreeBody() {
    Framed f = ReadFramed(c_);
    int16_t v = f.version;
    info_.class_version = v;
    if (!c_.ok()) {
      return Truncated("TTree");
    }
    if (v < 16 || v > 20) {
      return UnsupportedError("TTree class version " + std::to_string(v)
                              + " (supported: 16-20, ROOT 5.23 to 6.x)");
    }
    FERRY_TRY(ReadTNamed(c_, &info_.name, &info_.title));
    FERRY_TRY(SkipFramed("TAttLine"));
    FERRY_TRY(SkipFramed("TAttFill"));
    FERRY_TRY(SkipFramed("TAttMarker"));
    info_.entries = c_.I64();
    info_.zip_bytes_pos = static_cast<uint32_t>(c_.pos() + OffsetOf(kTreeSizes, "fZipBytes", v));
    SkipMembers(kTreeSizes, v);
    uint32_t nranges = 0;
    if (v >= 19) {
      nranges = c_.U32();  // fNClusterRange
    }
    SkipMembers(kTreeLimits);
    if (v >= 18) {
      info_.auto_flush = c_.I64();
    }
    SkipMembers(kTreeEstimate);
    if (!c_.ok()) {
      return Truncated("TTree fields");
    }
    if (info_.entries < 0) {
      return CorruptionError("TTree has negative fEntries");
    }
    if (v >= 19) {
      if (nranges > c_.remaining() / 16) {
        return CorruptionError("TTree: impossible fNClusterRange " + std::to_string(nranges));
      }
      // fClusterRangeEnd and fClusterSize are streamed as pointers to arrays: a one-byte flag,
      // then fNClusterRange values only when the array exists.
      for (auto* arr : {&info_.cluster_range_end, &info_.cluster_size}) {
        if (c_.U8() != 0) {
          arr->resize(nranges);
          for (auto& x : *arr) {
            x = c_.I64();
          }
        }
      }
    }
    if (v >= 20) {
      FERRY_TRY(SkipFramed("TTree fIOFeatures"));
    }
    FERRY_TRY(ForEachInObjArray("TTree fBranches", [&](const ObjectTag& tag, size_t) -> Status {
      if (tag.kind != ObjectTag::Kind::kNew) {
        return OkStatus();
      }
      int32_t index = FERRY_TRY(ParseBranch(tag, -1, 0));
      info_.top_branches.push_back(index);
      return OkStatus();
    }));
    FERRY_TRY(ForEachInObjArray("TTree fLeaves", [&](const ObjectTag& tag, size_t) -> Status {
      if (tag.kind == ObjectTag::Kind::kNew && tag.class_name.starts_with("TLeaf")) {
        FERRY_TRY(ParseLeaf(tag, -1, 0));
      }
      return OkStatus();
    }));
    if (!c_.ok()) {
      return Truncated("TTree");
    }
    return OkStatus();
  }

  // Parses a branch object whose tag was just read; returns its index in info_.branches.
  Result<int32_t> ParseBranch(const ObjectTag& tag, int32_t parent, int depth) {
    if (depth > kMaxBranchDepth) {
      return CorruptionError("branches nested deeper than " + std::to_string(kMaxBranchDepth));
    }
    if (!tag.class_name.starts_with("TBranch")) {
      return CorruptionError("unexpected class " + tag.class_name + " in a branch list");
    }
    auto index = static_cast<int32_t>(info_.branches.size());
    info_.branches.emplace_back();
    info_.branches.back().class_name = tag.class_name;
    info_.branches.back().parent = parent;
    bool derived = tag.class_name != "TBranch";
    if (derived) {
      (void)ReadFramed(c_);  // the derived class header; its TBranch base follows
    }
    Status st = ParseBranchBody(index, depth);
    if (!st.has_value()) {
      const std::string& name = info_.branches[static_cast<size_t>(index)].name;
      return std::move(st).error().AddContext(
          "branch " + (name.empty() ? "#" + std::to_string(index) : name));
    }
    Branch& b = info_.branches[static_cast<size_t>(index)];
    if (derived) {
      b.supported = false;
      b.unsupported_reason = tag.class_name + " (object branch, not a flat tree branch)";
      if (tag.end == 0) {
        return CorruptionError(tag.class_name + " without byte count");
      }
      c_.Seek(tag.end);
    }
    if (parent >= 0) {
      info_.branches[static_cast<size_t>(parent)].children.push_back(index);
    }
    return index;
  }

  // A branch's sub-branches (parsed recursively) and its leaves (new, or references to
  // leaves parsed before).
  Status ParseBranchChildren(int32_t index, int depth) {
    const auto bi = static_cast<size_t>(index);
    FERRY_TRY(ForEachInObjArray("TBranch fBranches", [&](const ObjectTag& tag, size_t) -> Status {
      if (tag.kind == ObjectTag::Kind::kNew) {
        FERRY_TRY(ParseBranch(tag, index, depth + 1));
      }
      return OkStatus();
    }));
    FERRY_TRY(ForEachInObjArray("TBranch fLeaves", [&](const ObjectTag& tag, size_t) -> Status {
      int32_t leaf = -1;
      if (tag.kind == ObjectTag::Kind::kNew) {
        leaf = FERRY_TRY(ParseLeaf(tag, index, 0));
      } else if (tag.kind == ObjectTag::Kind::kReference) {
        auto it = leaf_by_tag_.find(tag.reference);
        if (it == leaf_by_tag_.end()) {
          return CorruptionError("leaf reference to unknown object "
                                 + std::to_string(tag.reference));
        }
        leaf = it->second;
        info_.leaves[static_cast<size_t>(leaf)].branch = index;
      }
      if (leaf >= 0) {
        info_.branches[bi].leaves.push_back(leaf);
      }
      return OkStatus();
    }));
    return OkStatus();
  }

  // Baskets stored inside the TBranch object (a tree written but not flushed), by slot.
  Status ParseEmbeddedBaskets(size_t bi, std::unordered_map<size_t, int32_t>& embedded_slot) {
    return ForEachInObjArray("TBranch fBaskets", [&](const ObjectTag& tag, size_t slot) -> Status {
      if (tag.kind != ObjectTag::Kind::kNew) {
        return OkStatus();
      }
      if (tag.class_name != "TBasket") {
        return CorruptionError("unexpected class " + tag.class_name + " in fBaskets");
      }
      Result<EmbeddedBasket> eb = ParseEmbeddedBasket();
      if (!eb.has_value()) {
        return std::move(eb).error().AddContext("embedded basket " + std::to_string(slot));
      }
      Branch& b = info_.branches[bi];
      embedded_slot[slot] = static_cast<int32_t>(b.embedded.size());
      b.embedded.push_back(std::move(*eb));
      return OkStatus();
    });
  }

  Status ParseBranchBody(int32_t index, int depth) {
    Framed f = ReadFramed(c_);
    int16_t v = f.version;
    if (!c_.ok()) {
      return Truncated("TBranch");
    }
    if (v < 10 || v > 13) {
      return UnsupportedError("TBranch class version " + std::to_string(v) + " (supported: 10-13)");
    }
    auto bi = static_cast<size_t>(index);
    {
      Branch& b = info_.branches[bi];
      FERRY_TRY(ReadTNamed(c_, &b.name, &b.title));
    }
    FERRY_TRY(SkipFramed("TAttFill"));
    int32_t compress = c_.I32();
    int32_t basket_size = c_.I32();
    int32_t entry_offset_len = c_.I32();
    int32_t write_basket = c_.I32();
    SkipMembers(kBranchEntryNumber);
    if (v >= 13) {
      FERRY_TRY(SkipFramed("TBranch fIOFeatures"));
    }
    SkipMembers(kBranchOffset);
    int32_t max_baskets = c_.I32();
    SkipMembers(kBranchSplitLevel);
    int64_t entries = c_.I64();
    SkipMembers(kBranchFirstEntry, v);
    int64_t tot_bytes = c_.I64();
    const auto zip_bytes_pos = static_cast<uint32_t>(c_.pos());
    int64_t zip_bytes = c_.I64();
    if (!c_.ok()) {
      return Truncated("TBranch fields");
    }
    if (max_baskets < 0 || write_basket < 0 || write_basket > max_baskets || entries < 0
        || static_cast<size_t>(max_baskets) > c_.remaining() / 4) {
      return CorruptionError("TBranch has inconsistent basket counts (fWriteBasket "
                             + std::to_string(write_basket) + ", fMaxBaskets "
                             + std::to_string(max_baskets) + ")");
    }
    {
      Branch& b = info_.branches[bi];
      b.compress = compress;
      b.basket_size = basket_size;
      b.entry_offset_len = entry_offset_len;
      b.entries = entries;
      b.tot_bytes = tot_bytes;
      b.zip_bytes = zip_bytes;
      b.zip_bytes_pos = zip_bytes_pos;
      b.write_basket = write_basket;
    }
    FERRY_TRY(ParseBranchChildren(index, depth));
    std::unordered_map<size_t, int32_t> embedded_slot;
    FERRY_TRY(ParseEmbeddedBaskets(bi, embedded_slot));
    std::vector<int32_t> basket_bytes(static_cast<size_t>(max_baskets), 0);
    std::vector<int64_t> basket_entry(static_cast<size_t>(max_baskets), 0);
    std::vector<int64_t> basket_seek(static_cast<size_t>(max_baskets), 0);
    // Each table is a presence byte and fMaxBaskets values; relocation overwrites them in place.
    uint32_t bytes_pos = 0;
    uint32_t seek_pos = 0;
    if (c_.U8() != 0) {
      bytes_pos = static_cast<uint32_t>(c_.pos());
      for (auto& x : basket_bytes) {
        x = c_.I32();
      }
    }
    if (c_.U8() != 0) {
      for (auto& x : basket_entry) {
        x = c_.I64();
      }
    }
    if (c_.U8() != 0) {
      seek_pos = static_cast<uint32_t>(c_.pos());
      for (auto& x : basket_seek) {
        x = c_.I64();
      }
    }
    info_.branches[bi].basket_bytes_pos = bytes_pos;
    info_.branches[bi].basket_seek_pos = seek_pos;
    (void)c_.TString();  // fFileName
    FERRY_TRY(SkipToEnd(c_, f, "TBranch"));
    return BuildBaskets(bi, write_basket, basket_bytes, basket_entry, basket_seek, embedded_slot);
  }

  Status BuildBaskets(size_t bi,
                      int32_t write_basket,
                      const std::vector<int32_t>& bytes,
                      const std::vector<int64_t>& first,
                      const std::vector<int64_t>& seek,
                      const std::unordered_map<size_t, int32_t>& embedded_slot) {
    Branch& b = info_.branches[bi];
    auto nwritten = static_cast<size_t>(write_basket);
    auto embedded_at = [&](size_t slot) -> int32_t {
      auto it = embedded_slot.find(slot);
      return it == embedded_slot.end() ? -1 : it->second;
    };
    int32_t trailing = embedded_at(nwritten);
    // Entry numbers must be sane before any arithmetic on them.
    constexpr int64_t kMaxEntry = int64_t{1} << 62;
    for (size_t i = 0; i <= nwritten && i < first.size(); ++i) {
      if (first[i] < 0 || first[i] > kMaxEntry) {
        return CorruptionError("basket " + std::to_string(i) + " starts at entry "
                               + std::to_string(first[i]));
      }
    }
    if (b.entries > kMaxEntry) {
      return CorruptionError("branch has " + std::to_string(b.entries) + " entries");
    }
    for (size_t i = 0; i < nwritten; ++i) {
      BasketRef r;
      r.first_entry = first[i];
      int64_t end = i + 1 < nwritten                           ? first[i + 1]
                    : trailing >= 0 && nwritten < first.size() ? first[nwritten]
                                                               : b.entries;
      r.num_entries = end - r.first_entry;
      if (seek[i] > 0) {
        r.seek = static_cast<uint64_t>(seek[i]);
        r.bytes = static_cast<uint32_t>(bytes[i]);
        if (bytes[i] <= 0) {
          return CorruptionError("basket " + std::to_string(i) + " has size "
                                 + std::to_string(bytes[i]));
        }
      } else {
        r.embedded = embedded_at(i);
        if (r.embedded < 0) {
          return CorruptionError("basket " + std::to_string(i)
                                 + " has neither a seek nor an embedded copy");
        }
      }
      b.baskets.push_back(r);
    }
    if (trailing >= 0) {
      BasketRef r;
      r.first_entry = nwritten < first.size() ? first[nwritten] : 0;
      if (nwritten > 0 && r.first_entry == 0) {
        r.first_entry = b.baskets.back().first_entry + b.baskets.back().num_entries;
      }
      r.num_entries = b.embedded[static_cast<size_t>(trailing)].num_entries;
      r.embedded = trailing;
      b.baskets.push_back(r);
    }
    int64_t expect = b.baskets.empty() ? 0 : b.baskets.front().first_entry;
    for (const BasketRef& r : b.baskets) {
      if (r.num_entries < 0 || r.first_entry != expect) {
        return CorruptionError("basket entry table is not contiguous at entry "
                               + std::to_string(r.first_entry));
      }
      if (r.embedded >= 0
          && b.embedded[static_cast<size_t>(r.embedded)].num_entries != r.num_entries) {
        return CorruptionError(
            "embedded basket holds "
            + std::to_string(b.embedded[static_cast<size_t>(r.embedded)].num_entries)
            + " entries, the entry table says " + std::to_string(r.num_entries));
      }
      expect = r.first_entry + r.num_entries;
    }
    FinishLeafLayout(b);
    return OkStatus();
  }

  void FinishLeafLayout(Branch& b) {
    uint32_t offset = 0;
    bool fixed = true;
    for (int32_t li : b.leaves) {
      Leaf& leaf = info_.leaves[static_cast<size_t>(li)];
      leaf.entry_offset = offset;
      size_t size = LeafTypeSize(leaf.type);
      if (leaf.jagged() || size == 0 || leaf.len < 1) {
        fixed = false;
      } else {
        offset += static_cast<uint32_t>(size) * static_cast<uint32_t>(leaf.len);
      }
      if (leaf.type == LeafType::kUnknown && b.supported) {
        b.supported = false;
        b.unsupported_reason = "leaf class " + leaf.class_name;
      }
    }
    b.fixed_entry_size = fixed ? offset : 0;
    if (b.leaves.size() > 1) {
      for (int32_t li : b.leaves) {
        const Leaf& leaf = info_.leaves[static_cast<size_t>(li)];
        if ((leaf.jagged() || leaf.type == LeafType::kString) && b.supported) {
          b.supported = false;
          b.unsupported_reason = "leaf list with a variable-size leaf";
        }
      }
    }
  }

  Result<int32_t> ParseLeaf(const ObjectTag& tag, int32_t branch, int depth) {
    if (depth > kMaxLeafCountDepth) {
      return CorruptionError("fLeafCount chain deeper than " + std::to_string(kMaxLeafCountDepth));
    }
    auto index = static_cast<int32_t>(info_.leaves.size());
    info_.leaves.emplace_back();
    leaf_by_tag_[tag.map_tag] = index;
    auto li = static_cast<size_t>(index);
    Framed outer = ReadFramed(c_);
    Framed base = outer;
    if (tag.class_name != "TLeaf") {
      base = ReadFramed(c_);
    }
    std::string name, title;
    FERRY_TRY(ReadTNamed(c_, &name, &title));
    int32_t len = c_.I32();
    int32_t len_type = c_.I32();
    SkipMembers(kLeafOffset);
    (void)c_.Bool();  // fIsRange
    bool is_unsigned = c_.Bool();
    if (!c_.ok()) {
      return Truncated("TLeaf");
    }
    ObjectTag count = FERRY_TRY(tags_.Read(c_));
    int32_t count_leaf = -1;
    if (count.kind == ObjectTag::Kind::kReference) {
      auto it = leaf_by_tag_.find(count.reference);
      if (it == leaf_by_tag_.end()) {
        return CorruptionError("leaf " + name + ": fLeafCount refers to unknown object "
                               + std::to_string(count.reference));
      }
      count_leaf = it->second;
    } else if (count.kind == ObjectTag::Kind::kNew) {
      count_leaf = FERRY_TRY(ParseLeaf(count, -1, depth + 1));
      if (count.end != 0) {
        c_.Seek(count.end);
      }
    }
    if (base.counted) {
      FERRY_TRY(SkipToEnd(c_, base, "TLeaf"));
    }
    if (outer.counted && tag.class_name != "TLeaf") {
      FERRY_TRY(SkipToEnd(c_, outer, tag.class_name.c_str()));
    }
    Leaf& leaf = info_.leaves[li];
    leaf.name = std::move(name);
    leaf.title = std::move(title);
    leaf.class_name = tag.class_name;
    leaf.len = len;
    leaf.len_type = len_type;
    leaf.is_unsigned = is_unsigned;
    leaf.count_leaf = count_leaf;
    leaf.branch = branch;
    leaf.type = TypeOfLeafClass(tag.class_name, is_unsigned);
    if (leaf.type != LeafType::kUnknown && leaf.type != LeafType::kString) {
      if (len < 1 || len > (1 << 24)) {
        return CorruptionError("leaf " + leaf.name + ": bad fLen " + std::to_string(len));
      }
    }
    if (count_leaf >= 0) {
      LeafType ct = info_.leaves[static_cast<size_t>(count_leaf)].type;
      // An object-branch counter (kUnknown) leaves the branch unsupported, not the file corrupt.
      if (ct == LeafType::kString || ct == LeafType::kFloat32 || ct == LeafType::kFloat64
          || count_leaf == index) {
        return CorruptionError("leaf " + info_.leaves[li].name
                               + ": counter leaf is not an integer");
      }
    }
    return index;
  }

  // A basket still in memory when the tree was written (the last one of a branch, not yet
  // flushed): streamed inside the TTree record as a TBasket with its key header, its entry
  // offsets and (flag 1 or > 10) its whole buffer, key bytes included. It has no place in the
  // file of its own, so its bytes are copied out here.
  Result<EmbeddedBasket> ParseEmbeddedBasket() {
    size_t key_start = c_.pos();
    SkipMembers(kKeyNbytes);
    int16_t key_version = c_.I16();
    SkipMembers(kKeyObjlenDatime);
    auto keylen = static_cast<uint16_t>(c_.I16());
    SkipMembers(kKeyCycle);
    SkipMembers(key_version > 1000 ? std::span<const Member>(kKeySeeksBig) : kKeySeeksSmall);
    (void)c_.TString();  // fClassName
    (void)c_.TString();  // fName
    (void)c_.TString();  // fTitle
    SkipMembers(kBasketHead);
    int32_t nev_buf_size = c_.I32();
    if (nev_buf_size < 0) {
      SkipMembers(kBasketIOBits);
    }
    int32_t nev_buf = c_.I32();
    int32_t last = c_.I32();
    uint8_t flag = c_.U8();
    if (!c_.ok()) {
      return Truncated("TBasket header");
    }
    (void)key_start;
    if (nev_buf < 0 || last < keylen) {
      return CorruptionError("basket header has fNevBuf " + std::to_string(nev_buf) + ", fLast "
                             + std::to_string(last) + ", fKeylen " + std::to_string(keylen));
    }
    EmbeddedBasket eb;
    eb.num_entries = nev_buf;
    std::vector<int32_t> raw_offsets;
    if (flag != 0 && flag % 10 != 2 && nev_buf > 0) {
      int32_t n = c_.I32();
      if (n < 0 || static_cast<size_t>(n) > c_.remaining() / 4) {
        return CorruptionError("embedded basket: bad entry-offset count " + std::to_string(n));
      }
      raw_offsets.resize(static_cast<size_t>(n));
      for (auto& o : raw_offsets) {
        o = c_.I32();
      }
      if (flag > 40) {
        int32_t nd = c_.I32();
        if (nd < 0 || static_cast<size_t>(nd) > c_.remaining() / 4) {
          return CorruptionError("embedded basket: bad displacement count");
        }
        c_.Skip(static_cast<size_t>(nd) * 4);
      }
    }
    if (flag == 1 || flag > 10) {
      auto buf = c_.Bytes(static_cast<size_t>(last));
      if (!c_.ok()) {
        return Truncated("embedded basket buffer");
      }
      eb.data.assign(buf.begin() + keylen, buf.end());
    }
    if (!raw_offsets.empty()) {
      if (raw_offsets.size() < static_cast<size_t>(nev_buf)) {
        return CorruptionError("embedded basket: " + std::to_string(raw_offsets.size())
                               + " entry offsets for " + std::to_string(nev_buf) + " entries");
      }
      eb.offsets.resize(static_cast<size_t>(nev_buf) + 1);
      for (size_t i = 0; i < static_cast<size_t>(nev_buf); ++i) {
        int64_t o = static_cast<int64_t>(raw_offsets[i]) - keylen;
        if (o < 0 || o > static_cast<int64_t>(eb.data.size())
            || (i > 0 && o < static_cast<int64_t>(eb.offsets[i - 1]))) {
          return CorruptionError("embedded basket: entry offset " + std::to_string(i)
                                 + " out of range");
        }
        eb.offsets[i] = static_cast<uint32_t>(o);
      }
      eb.offsets.back() = static_cast<uint32_t>(eb.data.size());
    }
    return eb;
  }

  Cursor c_;
  TagReader tags_;
  TreeInfo info_;
  std::unordered_map<uint32_t, int32_t> leaf_by_tag_;
};

}  // namespace

Result<TreeInfo> ParseTree(std::span<const uint8_t> payload, uint16_t keylen) {
  TreeParser p(payload, keylen);
  return p.Parse();
}

}  // namespace ferry::rootio
