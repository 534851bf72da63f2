#include "rootio/root_file.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/strings.h"
#include "rootio/object_stream.h"
#include "rootio/tree_parse.h"

namespace ferry::rootio {
namespace {

constexpr int kMaxDirectoryDepth = 32;
constexpr uint64_t kMaxKeysListBytes = 256ull << 20;

// Keeps the highest cycle of each name, preserving first-seen order.
std::vector<Key> LatestCycles(const std::vector<Key>& keys) {
  std::vector<Key> out;
  std::map<std::string, size_t> at;
  for (const Key& k : keys) {
    auto it = at.find(k.name);
    if (it == at.end()) {
      at[k.name] = out.size();
      out.push_back(k);
    } else if (k.cycle > out[it->second].cycle) {
      out[it->second] = k;
    }
  }
  return out;
}

}  // namespace

bool IsDirectoryClass(std::string_view class_name) {
  return class_name == "TDirectory" || class_name == "TDirectoryFile";
}

Result<std::unique_ptr<RootFile>> RootFile::Open(io::ByteSource& source) {
  std::unique_ptr<RootFile> f(new RootFile());
  f->source_ = &source;
  return Init(std::move(f));
}

Result<std::unique_ptr<RootFile>> RootFile::Open(std::unique_ptr<io::ByteSource> source) {
  std::unique_ptr<RootFile> f(new RootFile());
  f->source_ = source.get();
  f->owned_ = std::move(source);
  return Init(std::move(f));
}

Result<std::unique_ptr<RootFile>> RootFile::OpenPath(const std::string& path, io::LocalMode mode) {
  auto src = FERRY_TRY(io::OpenLocal(path, mode));
  return Open(std::move(src));
}

Result<std::unique_ptr<RootFile>> RootFile::Init(std::unique_ptr<RootFile> f) {
  io::ByteSource& src = *f->source_;
  const std::string ctx = "file " + src.name();
  uint64_t size = src.size();
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(size, kFileHeaderReadSize)));
  FERRY_TRY_CTX(src.ReadAt(0, head), ctx);
  f->header_ = FERRY_TRY_CTX(ParseFileHeader(head, size), ctx);
  const FileHeader& h = f->header_;

  // Top directory: the TFile key, its name and title, then the TDirectory record.
  auto begin = static_cast<uint64_t>(h.begin);
  uint64_t want = static_cast<uint64_t>(h.nbytes_name) + 80;
  std::vector<uint8_t> dir(static_cast<size_t>(std::min<uint64_t>(want, size - begin)));
  FERRY_TRY_CTX(src.ReadAt(begin, dir), ctx + " > top directory");
  if (dir.size() <= static_cast<size_t>(h.nbytes_name)) {
    return CorruptionError("top directory record is truncated").AddContext(ctx);
  }
  f->top_ = FERRY_TRY_CTX(ParseDirectoryRecord(std::span<const uint8_t>(dir).subspan(
                              static_cast<size_t>(h.nbytes_name))),
                          ctx + " > top directory");
  f->top_keys_ =
      FERRY_TRY_CTX(f->ReadKeysList(f->top_.seek_keys, f->top_.nbytes_keys), ctx + " > keys list");
  return f;
}

Result<std::vector<Key>> RootFile::ReadKeysList(uint64_t seek_keys,
                                                int32_t nbytes_keys,
                                                std::vector<uint64_t>* offsets) const {
  std::vector<Key> keys;
  if (seek_keys == 0 || nbytes_keys == 0) {
    return keys;  // an empty directory
  }
  if (static_cast<uint64_t>(nbytes_keys) > kMaxKeysListBytes) {
    return CorruptionError("keys list of " + std::to_string(nbytes_keys) + " bytes");
  }
  FERRY_TRY(io::CheckRange(source_->name(), source_->size(), seek_keys,
                           static_cast<uint64_t>(nbytes_keys)));
  std::vector<uint8_t> buf(static_cast<size_t>(nbytes_keys));
  FERRY_TRY(source_->ReadAt(seek_keys, buf));
  Cursor c(buf);
  Key self = FERRY_TRY(ParseKey(c));
  c.Seek(self.keylen);
  int32_t n = c.I32();
  if (!c.ok() || n < 0 || static_cast<size_t>(n) > c.remaining() / 26) {
    return CorruptionError("keys list has a bad key count " + std::to_string(n));
  }
  keys.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    if (offsets != nullptr) {
      offsets->push_back(seek_keys + c.pos());
    }
    keys.push_back(FERRY_TRY_CTX(ParseKey(c), "key " + std::to_string(i)));
  }
  return keys;
}

Result<DirectoryRecord> RootFile::ReadSubdirectory(const Key& key) const {
  std::vector<uint8_t> payload = FERRY_TRY(ReadObject(key));
  return ParseDirectoryRecord(payload);
}

Result<DirectoryRecord> RootFile::FindDirectory(std::string_view dir_path) const {
  DirectoryRecord dir = top_;
  std::vector<Key> keys;
  bool top = true;
  std::set<uint64_t> seen;
  int depth = 0;
  for (std::string_view part : Split(dir_path, '/')) {
    if (part.empty()) {
      continue;
    }
    if (++depth > kMaxDirectoryDepth) {
      return CorruptionError("directory nesting deeper than " + std::to_string(kMaxDirectoryDepth));
    }
    // The keys of the directory we are in: read only when the path goes deeper.
    if (!top) {
      keys = FERRY_TRY(ReadKeysList(dir.seek_keys, dir.nbytes_keys));
    }
    auto latest = LatestCycles(top ? top_keys_ : keys);
    top = false;
    auto it = std::find_if(latest.begin(), latest.end(), [&](const Key& k) {
      return k.name == part && IsDirectoryClass(k.class_name);
    });
    if (it == latest.end()) {
      return NotFoundError("no directory '" + std::string(part) + "' in " + name());
    }
    dir = FERRY_TRY_CTX(ReadSubdirectory(*it), "directory " + std::string(part));
    if (!seen.insert(dir.seek_keys).second) {
      return CorruptionError("directory cycle at " + std::string(part));
    }
  }
  return dir;
}

Result<std::vector<Key>> RootFile::ListKeys(std::string_view dir_path) const {
  if (dir_path.find_first_not_of('/') == std::string_view::npos) {
    return top_keys_;
  }
  DirectoryRecord d = FERRY_TRY(FindDirectory(dir_path));
  return FERRY_TRY_CTX(ReadKeysList(d.seek_keys, d.nbytes_keys),
                       "directory " + std::string(dir_path));
}

Result<KeysList> RootFile::ReadKeysListOf(std::string_view dir_path) const {
  DirectoryRecord d = FERRY_TRY(FindDirectory(dir_path));
  KeysList out;
  out.seek = d.seek_keys;
  out.nbytes = d.nbytes_keys;
  out.keys = FERRY_TRY(ReadKeysList(d.seek_keys, d.nbytes_keys, &out.offsets));
  return out;
}

Status RootFile::Walk(const std::string& prefix,
                      const std::vector<Key>& keys,
                      int depth,
                      std::vector<ObjectEntry>* out) const {
  if (depth > kMaxDirectoryDepth) {
    return CorruptionError("directory nesting deeper than " + std::to_string(kMaxDirectoryDepth));
  }
  for (const Key& k : LatestCycles(keys)) {
    std::string path = prefix.empty() ? k.name : prefix + "/" + k.name;
    out->push_back({path, k});
    if (IsDirectoryClass(k.class_name)) {
      DirectoryRecord d = FERRY_TRY_CTX(ReadSubdirectory(k), "directory " + path);
      auto sub = FERRY_TRY_CTX(ReadKeysList(d.seek_keys, d.nbytes_keys), "directory " + path);
      FERRY_TRY(Walk(path, sub, depth + 1, out));
    }
  }
  return OkStatus();
}

Result<std::vector<ObjectEntry>> RootFile::ListObjects() const {
  std::vector<ObjectEntry> out;
  FERRY_TRY_CTX(Walk("", top_keys_, 0, &out), "file " + name());
  return out;
}

Result<std::vector<std::string>> RootFile::TreePaths() const {
  std::vector<std::string> out;
  for (const ObjectEntry& e : FERRY_TRY(ListObjects())) {
    if (e.key.class_name == "TTree") {
      out.push_back(e.path);
    }
  }
  return out;
}

Result<Key> RootFile::FindKey(std::string_view path) const {
  std::string_view dir;
  std::string_view leaf = path;
  if (size_t slash = path.rfind('/'); slash != std::string_view::npos) {
    dir = path.substr(0, slash);
    leaf = path.substr(slash + 1);
  }
  int64_t cycle = -1;
  if (size_t semi = leaf.find(';'); semi != std::string_view::npos) {
    cycle = FERRY_TRY(ParseInt(leaf.substr(semi + 1)));
    leaf = leaf.substr(0, semi);
  }
  auto keys = FERRY_TRY(ListKeys(dir));
  const Key* best = nullptr;
  for (const Key& k : keys) {
    if (k.name != leaf) {
      continue;
    }
    if (cycle >= 0 ? k.cycle == cycle : (best == nullptr || k.cycle > best->cycle)) {
      best = &k;
    }
  }
  if (best == nullptr) {
    return NotFoundError("no object '" + std::string(path) + "' in " + name());
  }
  return *best;
}

Result<std::vector<uint8_t>> RootFile::ReadObject(const Key& key) const {
  if (key.seek_key == 0 || key.seek_key >= source_->size()) {
    return CorruptionError("key " + key.name + " points outside the file");
  }
  return FERRY_TRY_CTX(ReadPayload(*source_, key), "key " + key.name);
}

Result<std::unique_ptr<Tree>> RootFile::OpenTree(std::string_view path) const {
  const std::string ctx = "file " + name();
  auto found = FindKey(path);
  if (!found && found.error().code() == ErrorCode::kNotFound) {
    // Name the trees there are: a misspelt name is the usual cause.
    const std::string_view dir =
        path.substr(0, path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/'));
    std::string trees;
    for (const Key& k : ListKeys(dir).value_or(std::vector<Key>{})) {
      if ((k.class_name == "TTree" || k.class_name == "ROOT::RNTuple")
          && trees.find("'" + k.name + "'") == std::string::npos) {
        trees += (trees.empty() ? "'" : ", '") + k.name + "'"
                 + (k.class_name == "TTree" ? "" : " (an RNTuple)");
      }
    }
    return NotFoundError("no TTree '" + std::string(path) + "' in " + name() + "; "
                         + (trees.empty() ? std::string("it holds no tree") : "its trees: " + trees)
                         + " (ferry root ls " + name() + " lists them; give the name with --tree)");
  }
  Key key = FERRY_TRY_CTX(std::move(found), ctx);
  if (key.class_name != "TTree") {
    const bool rntuple = key.class_name == "ROOT::RNTuple";
    return InvalidArgumentError(
               "'" + std::string(path) + "' is a " + key.class_name + ", not a TTree"
               + (rntuple ? ": this command reads TTrees only; ferry root dump, ferry analyze agc "
                            "and ferry store convert read RNTuples too"
                          : "; ferry root ls " + name() + " shows what the file holds"))
        .AddContext(ctx);
  }
  std::vector<uint8_t> payload = FERRY_TRY_CTX(ReadObject(key), ctx);
  TreeInfo info =
      FERRY_TRY_CTX(ParseTree(payload, key.keylen), ctx + " > TTree " + std::string(path));
  std::string_view p = path.substr(0, path.find(';'));
  info.path = std::string(p);
  return std::make_unique<Tree>(*source_, std::move(info));
}

Result<std::vector<StreamerEntry>> RootFile::ReadStreamerInfo() const {
  std::vector<StreamerEntry> out;
  if (header_.seek_info == 0) {
    return out;
  }
  const std::string ctx = "file " + name() + " > StreamerInfo";
  Key key = FERRY_TRY_CTX(ReadKey(*source_, header_.seek_info), ctx);
  std::vector<uint8_t> payload = FERRY_TRY_CTX(ReadObject(key), ctx);
  Cursor c(payload);
  TagReader tags(key.keylen);
  Framed list = ReadFramed(c);
  SkipTObject(c);
  (void)c.TString();
  int32_t n = c.I32();
  if (!c.ok() || n < 0 || static_cast<size_t>(n) > c.remaining() / 4) {
    return CorruptionError("bad TList header").AddContext(ctx);
  }
  for (int32_t i = 0; i < n; ++i) {
    ObjectTag t = FERRY_TRY_CTX(tags.Read(c), ctx);
    if (t.kind == ObjectTag::Kind::kNew) {
      if (t.class_name == "TStreamerInfo") {
        Framed f = ReadFramed(c);
        (void)f;
        StreamerEntry e;
        std::string title;
        FERRY_TRY_CTX(ReadTNamed(c, &e.class_name, &title), ctx);
        e.checksum = c.U32();
        e.class_version = c.I32();
        out.push_back(std::move(e));
      }
      if (t.end == 0) {
        return CorruptionError("StreamerInfo element without byte count").AddContext(ctx);
      }
      c.Seek(t.end);
    }
    uint8_t option_len = c.U8();  // TList stores an option string per element
    c.Skip(option_len);
    if (!c.ok()) {
      return CorruptionError("StreamerInfo list truncated").AddContext(ctx);
    }
  }
  (void)list;
  return out;
}

}  // namespace ferry::rootio
