// The sender's file list: command-line paths expanded into regular files with the relative
// names they get under the receiver's destination directory.
//
// A file PATH arrives as DEST/basename(PATH); a directory PATH as DEST/basename(PATH)/..., its
// regular files taken recursively in name order. Symbolic links inside directories, and special
// files, are skipped and listed (the protocol carries regular files only). Thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ferry::xfer {

struct SourceFile {
  std::string local_path;
  std::string rel_path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
};

struct SourceList {
  std::vector<SourceFile> files;
  std::vector<std::string> skipped;  // "path: reason"
  uint64_t total_bytes = 0;
  std::string source_name;  // set when the one file was renamed to `dest` (dest_is_name)
};

inline constexpr size_t kMaxSourceFiles = 10'000'000;

// With dest_is_name and one regular file among `paths`, that file's relative path is `dest` and
// source_name its base name; otherwise every source arrives as dest/basename.
Result<SourceList> CollectSources(std::span<const std::string> paths,
                                  std::string_view dest,
                                  bool dest_is_name = false);

}  // namespace ferry::xfer
