// Column-filling steps shared by the resamplers: the column header of a template branch,
// gathers of template values by pick lists, and the event-id columns.
//
// Values are native (rootio::Column layout). Gathers resize the output without clearing it
// first (a reused column keeps its bytes, only growth is zero-filled) and expect every pick to
// be a valid index of the source. Pure functions of their arguments; thread-safe on distinct
// outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "gen/event_ids.h"
#include "gen/event_template.h"
#include "rootio/column.h"

namespace ferry::gen {

// Bytes of capacity GatherCopy may write past the end of its destination.
inline constexpr size_t kGatherSlack = 32;

// Sets type, entries, jagged and fixed_len of out for n entries of branch spec; a fixed-size
// branch loses any offsets.
void StartColumn(const rootwrite::BranchSpec& spec, int64_t n, rootio::Column* out);

// dst[i * size, (i + 1) * size) = src[picks[i] * size, ...) for every pick.
void GatherFixed(uint8_t* dst, const uint8_t* src, std::span<const uint32_t> picks, size_t size);

// Copies len bytes from src + at to dst. Entries of a few values (most NanoAOD collections)
// move as one fixed 32-byte block when src has 32 bytes there; the bytes past len land in the
// next entry's place (overwritten by its own copy, entries go in order) or in dst's
// kGatherSlack bytes of capacity past its end.
inline void GatherCopy(uint8_t* dst, const uint8_t* src, size_t at, size_t len, size_t src_size) {
  if (len <= kGatherSlack && at + kGatherSlack <= src_size) {
    __builtin_memcpy(dst, src + at, kGatherSlack);
  } else if (len > 0) {  // empty columns have null data pointers
    __builtin_memcpy(dst, src + at, len);
  }
}

// Jagged (or string) entries picks[i] of src, with new offsets: unit is the size of one
// offset step (the value size, 1 for strings).
void GatherRanges(const rootio::Column& src,
                  std::span<const uint32_t> picks,
                  size_t unit,
                  rootio::Column* out);

// Fills out (already started) with the run, luminosityBlock or event number of ids, for
// branch index b of tmpl (one of tmpl.run, tmpl.lumi, tmpl.event).
void FillIdColumn(const EventTemplate& tmpl,
                  int32_t b,
                  std::span<const EventId> ids,
                  rootio::Column* out);

}  // namespace ferry::gen
