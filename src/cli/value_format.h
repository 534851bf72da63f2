// Printing leaf values as JSON (the `ferry root dump --json` contract): scalars as numbers,
// fixed and jagged arrays as lists, strings as JSON strings, booleans as true/false, floats
// with %.9g and doubles with %.17g, non-finite values as NaN / Infinity / -Infinity.
#pragma once

#include <cstdint>

#include "base/json_writer.h"
#include "rootio/column.h"

namespace ferry::cli {

// Writes value k of the column.
void WriteValue(JsonWriter& w, const rootio::Column& col, size_t k);
// Writes entry i (relative to col.first_entry): a scalar, a list, or a string.
void WriteEntry(JsonWriter& w, const rootio::Column& col, int64_t i);

}  // namespace ferry::cli
