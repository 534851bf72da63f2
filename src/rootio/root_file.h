// RootFile: opens a ROOT file over a ByteSource, lists its directories and keys, and opens
// flat TTrees. Opening costs three reads (header, top directory, keys list).
//
// Thread-safety: const methods may be called concurrently; the ByteSource is thread-safe.
// Lifetime: a RootFile either owns its source or borrows one that must outlive it and every
// Tree it opened.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "io/byte_source.h"
#include "io/local_source.h"
#include "rootio/file_header.h"
#include "rootio/key.h"
#include "rootio/tree.h"

namespace ferry::rootio {

// An object in the file, found by walking directories.
struct ObjectEntry {
  std::string path;  // "dir/sub/name"
  Key key;
};

// A directory's keys list: where it lies and where each key header sits in it.
struct KeysList {
  uint64_t seek = 0;  // file offset of the keys list record (0: empty directory)
  int32_t nbytes = 0;
  std::vector<Key> keys;          // all cycles, in list order
  std::vector<uint64_t> offsets;  // file offset of each key's header inside the list
};

// One TStreamerInfo of the file's StreamerInfo record.
struct StreamerEntry {
  std::string class_name;
  int32_t class_version = 0;
  uint32_t checksum = 0;
};

class RootFile {
 public:
  static Result<std::unique_ptr<RootFile>> Open(io::ByteSource& source);
  static Result<std::unique_ptr<RootFile>> Open(std::unique_ptr<io::ByteSource> source);
  static Result<std::unique_ptr<RootFile>> OpenPath(const std::string& path,
                                                    io::LocalMode mode = io::LocalMode::kPread);

  const FileHeader& header() const { return header_; }
  io::ByteSource& source() const { return *source_; }
  const std::string& name() const { return source_->name(); }

  // Keys of a directory ("" = top). All cycles, in file order.
  Result<std::vector<Key>> ListKeys(std::string_view dir_path) const;
  // The keys list of a directory ("" = top) with the position of every key header in it.
  Result<KeysList> ReadKeysListOf(std::string_view dir_path) const;
  // Every object of every directory, depth first; the highest cycle of each name.
  Result<std::vector<ObjectEntry>> ListObjects() const;
  // Paths of every TTree in the file.
  Result<std::vector<std::string>> TreePaths() const;
  // The key at "dir/sub/name" or "name;cycle" (highest cycle by default).
  Result<Key> FindKey(std::string_view path) const;
  // Opens a TTree; the Tree borrows this file's source.
  Result<std::unique_ptr<Tree>> OpenTree(std::string_view path) const;
  // The decompressed payload of an object.
  Result<std::vector<uint8_t>> ReadObject(const Key& key) const;
  // The class names and versions recorded in the StreamerInfo record.
  Result<std::vector<StreamerEntry>> ReadStreamerInfo() const;

 private:
  RootFile() = default;
  static Result<std::unique_ptr<RootFile>> Init(std::unique_ptr<RootFile> f);
  Result<std::vector<Key>> ReadKeysList(uint64_t seek_keys,
                                        int32_t nbytes_keys,
                                        std::vector<uint64_t>* offsets = nullptr) const;
  // The directory record of "dir/sub" ("" = top).
  Result<DirectoryRecord> FindDirectory(std::string_view dir_path) const;
  Result<DirectoryRecord> ReadSubdirectory(const Key& key) const;
  Status Walk(const std::string& prefix,
              const std::vector<Key>& keys,
              int depth,
              std::vector<ObjectEntry>* out) const;

  std::unique_ptr<io::ByteSource> owned_;
  io::ByteSource* source_ = nullptr;
  FileHeader header_;
  DirectoryRecord top_;
  std::vector<Key> top_keys_;
};

// True for the key classes of directories.
bool IsDirectoryClass(std::string_view class_name);

}  // namespace ferry::rootio
