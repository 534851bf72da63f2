// The TTree part of an overlay (overlay_writer.h). A dataset is a TTree, a column
// a branch, a unit a basket record (a slot < fWriteBasket with a record of its own, not an
// embedded basket). Its records: one new TTree record per tree (relocate.h: the baskets' seeks
// and sizes overwritten in the decompressed payload in place, compressed again under the
// original key header), with the tree's keys-list entry patched to point at it.
//
// The tree records come first in the overlay because a record's key may have 32-bit seeks
// (every file under 2 GB), so it must sit below 2^31 - 1; baskets may go anywhere. A record's
// final size is only known once every basket is placed (its payload holds their seeks), so its
// room is the size of the record as it would be with no basket moved, compressed with the
// replica's codec, plus a margin (SlotFor).
//
// Thread-safety: none (one builder thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "replica/overlay_writer.h"
#include "rootio/key.h"
#include "rootio/root_file.h"
#include "rootio/tree_model.h"

namespace ferry::replica {

// What relocating one tree needs from the original file: its TTree record (key + stored
// payload), the parsed tree, and its key header in the keys list (fKeylen bytes).
struct TreeRecordSource {
  std::string path;
  rootio::Key key;
  std::vector<uint8_t> record;
  rootio::TreeInfo info;
  uint64_t entry_offset = 0;
  std::vector<uint8_t> entry;
};
// Reads them for the tree at `path` (highest cycle) through the file's source.
Result<TreeRecordSource> LoadTreeRecord(const rootio::RootFile& f, const std::string& path);
// The same with the tree's record given (e.g. rebuilt from a replica) instead of read.
Result<TreeRecordSource> TreeRecordFrom(const rootio::RootFile& f,
                                        const std::string& path,
                                        std::vector<uint8_t> record);

// The TTree part of an overlay: dataset d is trees[d].
std::unique_ptr<OverlayFormat> MakeTreeOverlay(std::vector<TreeRecordSource> trees);
// The same for every tree of the file.
Result<std::unique_ptr<OverlayFormat>> LoadTreeOverlay(const rootio::RootFile& f);

}  // namespace ferry::replica
