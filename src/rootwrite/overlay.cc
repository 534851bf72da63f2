#include "rootwrite/overlay.h"

#include <algorithm>
#include <string>

#include "io/local_source.h"
#include "rootio/cursor.h"
#include "rootio/key.h"
#include "rootio/root_file.h"
#include "rootio/tree_parse.h"

namespace ferry::rootwrite {
namespace {

constexpr uint64_t kSlotAlign = 4096;

uint64_t RoundUp(uint64_t n, uint64_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

uint64_t OverlayWriter::SlotFor(uint64_t record_bytes) {
  // Seeks and sizes change the payload a little, so its compressed size may move by a few
  // percent; 1/8 plus a page covers that without wasting much.
  return RoundUp(record_bytes + record_bytes / 8 + kSlotAlign, kSlotAlign);
}

Result<uint32_t> OverlayWriter::AddTree(std::span<const uint8_t> record,
                                        const rootio::TreeInfo& info,
                                        uint64_t key_entry_offset,
                                        std::span<const uint8_t> key_entry,
                                        uint64_t slot_bytes) {
  if (started_) {
    return InvalidArgumentError("trees must be added before the baskets");
  }
  TreeState t;
  t.record.assign(record.begin(), record.end());
  t.info = info;
  t.key_entry_offset = key_entry_offset;
  t.key_entry.assign(key_entry.begin(), key_entry.end());
  if (slot_bytes == 0) {
    // The record as it would be with no basket moved: the size the final one will be close to.
    auto probe =
        RelocateTree(record, info, {}, original_size_, setting_, key_entry_offset, key_entry);
    if (!probe) {
      return std::move(probe).error();
    }
    slot_bytes = SlotFor(probe->record.size());
  }
  t.slot_bytes = slot_bytes;
  trees_.push_back(std::move(t));
  return static_cast<uint32_t>(trees_.size() - 1);
}

void OverlayWriter::Start() {
  uint64_t pos = original_size_;
  for (TreeState& t : trees_) {
    t.slot_offset = pos;
    pos += t.slot_bytes;
  }
  baskets_begin_ = pos;
  end_ = pos;
  started_ = true;
}

Result<const rootio::BasketRef*> OverlayWriter::Claim(uint32_t tree,
                                                      int32_t branch,
                                                      int32_t basket) {
  if (!started_) {
    Start();
  }
  if (tree >= trees_.size()) {
    return InvalidArgumentError("no tree " + std::to_string(tree));
  }
  TreeState& t = trees_[tree];
  if (branch < 0 || static_cast<size_t>(branch) >= t.info.branches.size()) {
    return InvalidArgumentError("no branch " + std::to_string(branch));
  }
  const rootio::Branch& b = t.info.branches[static_cast<size_t>(branch)];
  if (basket < 0 || basket >= b.write_basket || static_cast<size_t>(basket) >= b.baskets.size()
      || b.baskets[static_cast<size_t>(basket)].seek == 0) {
    return InvalidArgumentError("branch " + b.name + ": basket " + std::to_string(basket)
                                + " is not a record of its own");
  }
  if (t.moved.count({branch, basket}) != 0) {
    return InvalidArgumentError("branch " + b.name + ": basket " + std::to_string(basket)
                                + " added twice");
  }
  return &b.baskets[static_cast<size_t>(basket)];
}

MovedBasket OverlayWriter::Place(uint32_t tree, int32_t branch, int32_t basket, uint32_t bytes) {
  TreeState& t = trees_[tree];
  const rootio::BasketRef& ref =
      t.info.branches[static_cast<size_t>(branch)].baskets[static_cast<size_t>(basket)];
  MovedBasket m;
  m.tree = tree;
  m.branch = branch;
  m.basket = basket;
  m.offset = end_;
  m.bytes = bytes;
  m.original_offset = ref.seek;
  m.original_bytes = ref.bytes;
  t.moved.insert({branch, basket});
  t.moves.push_back({branch, basket, end_, bytes});
  end_ += bytes;
  return m;
}

Result<MovedBasket> OverlayWriter::AddBasket(uint32_t tree,
                                             int32_t branch,
                                             int32_t basket,
                                             std::span<const uint8_t> record,
                                             ByteVector* out) {
  const rootio::BasketRef* ref = FERRY_TRY(Claim(tree, branch, basket));
  const std::string& name = trees_[tree].info.branches[static_cast<size_t>(branch)].name;
  if (record.size() != ref->bytes) {
    return InvalidArgumentError("branch " + name + ": basket record of "
                                + std::to_string(record.size()) + " bytes, the tree says "
                                + std::to_string(ref->bytes));
  }
  size_t chosen = 0;
  const uint32_t bytes = FERRY_TRY_CTX(
      ReencodeBasketChoosing(record, candidates_, chooser_, end_, &scratch_, out, verify_, &chosen),
      "branch " + name + " > basket " + std::to_string(basket));
  MovedBasket m = Place(tree, branch, basket, bytes);
  m.setting = candidates_[chosen];
  return m;
}

Result<MovedBasket> OverlayWriter::AddEncodedBasket(uint32_t tree,
                                                    int32_t branch,
                                                    int32_t basket,
                                                    std::span<const uint8_t> encoded,
                                                    const codec::Setting& setting,
                                                    ByteVector* out) {
  FERRY_TRY(Claim(tree, branch, basket));
  const size_t at = out->size();
  out->insert(out->end(), encoded.begin(), encoded.end());
  SetKeySeek(std::span<uint8_t>(out->data() + at, encoded.size()), end_);
  MovedBasket m = Place(tree, branch, basket, static_cast<uint32_t>(encoded.size()));
  m.setting = setting;
  return m;
}

Result<MovedBasket> OverlayWriter::AddStoredBasket(uint32_t tree,
                                                   int32_t branch,
                                                   int32_t basket,
                                                   std::span<const uint8_t> stored,
                                                   ByteVector* out) {
  const rootio::BasketRef* ref = FERRY_TRY(Claim(tree, branch, basket));
  if (stored.size() != ref->bytes) {
    return InvalidArgumentError("basket record of " + std::to_string(stored.size())
                                + " bytes, the tree says " + std::to_string(ref->bytes));
  }
  rootio::Cursor c(stored);
  const rootio::Key key = FERRY_TRY(rootio::ParseKey(c));
  if (key.nbytes < key.keylen || static_cast<size_t>(key.nbytes) > stored.size()) {
    return CorruptionError("basket record's key does not fit it");
  }
  const size_t at = out->size();
  out->insert(out->end(), stored.begin(), stored.end());
  SetKeySeek(std::span<uint8_t>(out->data() + at, stored.size()), end_);
  MovedBasket m = Place(tree, branch, basket, static_cast<uint32_t>(stored.size()));
  // The original's codec, for the report (ROOT's block header does not keep the level).
  m.setting = {key.compressed() ? codec::DetectAlgorithm(stored.subspan(key.keylen))
                                : codec::Algorithm::kNone,
               0};
  m.as_stored = true;
  return m;
}

Result<Overlay> OverlayWriter::Finish(std::span<const uint8_t> head) {
  if (!started_) {
    Start();
  }
  Overlay o;
  o.original_size = original_size_;
  o.baskets_begin = baskets_begin_;
  o.virtual_size = end_;
  bool fits = true;
  for (TreeState& t : trees_) {
    RelocatedTree r = FERRY_TRY_CTX(RelocateTree(t.record, t.info, t.moves, t.slot_offset, setting_,
                                                 t.key_entry_offset, t.key_entry),
                                    "TTree " + t.info.name);
    t.needed_bytes = r.record.size() > t.slot_bytes ? SlotFor(r.record.size()) : t.slot_bytes;
    fits = fits && r.record.size() <= t.slot_bytes;
    o.patches.push_back(std::move(r.key_entry));
    PlacedRecord p;
    p.offset = t.slot_offset;
    p.slot_bytes = t.slot_bytes;
    p.record = std::move(r.record);
    o.records.push_back(std::move(p));
  }
  if (!fits) {
    return Error(ErrorCode::kNoSpace, "a TTree record outgrew its reserved slot");
  }
  o.patches.push_back(FERRY_TRY(HeaderPatch(head, o.virtual_size)));
  std::sort(o.patches.begin(), o.patches.end(),
            [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < o.patches.size(); ++i) {
    if (o.patches[i - 1].offset + o.patches[i - 1].bytes.size() > o.patches[i].offset) {
      return CorruptionError("patches overlap: a keys list inside the file header");
    }
  }
  return o;
}

Result<TreeRecordSource> LoadTreeRecord(const rootio::RootFile& f, const std::string& path) {
  const rootio::Key key = FERRY_TRY(f.FindKey(path));
  std::vector<uint8_t> record(static_cast<size_t>(key.nbytes));
  FERRY_TRY(io::CheckRange(f.name(), f.source().size(), key.seek_key, record.size()));
  FERRY_TRY(f.source().ReadAt(key.seek_key, record));
  return TreeRecordFrom(f, path, std::move(record));
}

Result<TreeRecordSource> TreeRecordFrom(const rootio::RootFile& f,
                                        const std::string& path,
                                        std::vector<uint8_t> record) {
  TreeRecordSource t;
  t.path = path;
  t.key = FERRY_TRY(f.FindKey(path));
  t.record = std::move(record);
  rootio::Cursor c(t.record);
  const rootio::Key own = FERRY_TRY(rootio::ParseKey(c));
  if (own.keylen != t.key.keylen || own.objlen != t.key.objlen
      || static_cast<size_t>(own.nbytes) > t.record.size() || own.nbytes < own.keylen) {
    return CorruptionError("TTree record of " + path + " does not match its key");
  }
  ByteVector payload;
  FERRY_TRY(rootio::DecodePayload(std::span<const uint8_t>(t.record).subspan(
                                      own.keylen, static_cast<size_t>(own.nbytes - own.keylen)),
                                  own.objlen, &payload));
  t.info = FERRY_TRY(rootio::ParseTree(payload, own.keylen));
  FERRY_TRY_CTX(ReadKeyEntry(f, path, t.key, &t.entry_offset, &t.entry), "TTree " + path);
  return t;
}

Status ReadKeyEntry(const rootio::RootFile& f,
                    const std::string& path,
                    const rootio::Key& key,
                    uint64_t* offset,
                    std::vector<uint8_t>* entry) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
  rootio::KeysList list = FERRY_TRY(f.ReadKeysListOf(dir));
  for (size_t i = 0; i < list.keys.size(); ++i) {
    if (list.keys[i].seek_key == key.seek_key) {
      *offset = list.offsets[i];
      // The list holds the key's header (fKeylen bytes), nothing of the record itself.
      const uint64_t n = std::min<uint64_t>(key.keylen, f.source().size() - *offset);
      entry->resize(static_cast<size_t>(n));
      return f.source().ReadAt(*offset, *entry);
    }
  }
  return NotFoundError("not in its directory's keys list");
}

Result<std::vector<uint8_t>> RelocateInMemory(
    std::span<const uint8_t> file,
    const codec::Setting& setting,
    const std::function<bool(const std::string&, const rootio::Branch&)>& select) {
  io::MemorySource src(std::vector<uint8_t>(file.begin(), file.end()));
  auto f = FERRY_TRY(rootio::RootFile::Open(src));
  std::vector<TreeRecordSource> trees;
  for (const std::string& path : FERRY_TRY(f->TreePaths())) {
    trees.push_back(FERRY_TRY_CTX(LoadTreeRecord(*f, path), "TTree " + path));
  }
  std::vector<uint64_t> slots(trees.size(), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    OverlayWriter w(file.size(), setting);
    for (size_t t = 0; t < trees.size(); ++t) {
      FERRY_TRY(w.AddTree(trees[t].record, trees[t].info, trees[t].entry_offset, trees[t].entry,
                          slots[t]));
    }
    w.Start();
    ByteVector baskets;
    std::vector<uint8_t> record;
    for (size_t t = 0; t < trees.size(); ++t) {
      const rootio::TreeInfo& info = trees[t].info;
      for (size_t b = 0; b < info.branches.size(); ++b) {
        if (select && !select(trees[t].path, info.branches[b])) {
          continue;
        }
        for (size_t k = 0; k < info.branches[b].baskets.size(); ++k) {
          const rootio::BasketRef& ref = info.branches[b].baskets[k];
          if (ref.seek == 0 || static_cast<int32_t>(k) >= info.branches[b].write_basket) {
            continue;
          }
          record.resize(ref.bytes);
          FERRY_TRY(io::CheckRange(f->name(), file.size(), ref.seek, ref.bytes));
          FERRY_TRY(src.ReadAt(ref.seek, record));
          FERRY_TRY(w.AddBasket(static_cast<uint32_t>(t), static_cast<int32_t>(b),
                                static_cast<int32_t>(k), record, &baskets));
        }
      }
    }
    auto overlay = w.Finish(file.first(std::min<size_t>(file.size(), 100)));
    if (!overlay && overlay.error().code() == ErrorCode::kNoSpace && attempt == 0) {
      for (size_t t = 0; t < trees.size(); ++t) {
        slots[t] = w.needed_slot_bytes(static_cast<uint32_t>(t));
      }
      continue;
    }
    if (!overlay) {
      return std::move(overlay).error();
    }
    return VirtualFileBytes(file, *overlay, baskets);
  }
  return Error(ErrorCode::kNoSpace, "TTree record outgrew its slot twice");
}

std::vector<uint8_t> VirtualFileBytes(std::span<const uint8_t> file,
                                      const Overlay& overlay,
                                      std::span<const uint8_t> units) {
  std::vector<uint8_t> out(static_cast<size_t>(overlay.virtual_size), 0);
  std::copy(file.begin(), file.end(), out.begin());
  for (const Patch& p : overlay.patches) {
    std::copy(p.bytes.begin(), p.bytes.end(), out.begin() + static_cast<ptrdiff_t>(p.offset));
  }
  for (const PlacedRecord& r : overlay.records) {
    std::copy(r.record.begin(), r.record.end(), out.begin() + static_cast<ptrdiff_t>(r.offset));
  }
  std::copy(units.begin(), units.end(),
            out.begin() + static_cast<ptrdiff_t>(overlay.baskets_begin));
  return out;
}

}  // namespace ferry::rootwrite
