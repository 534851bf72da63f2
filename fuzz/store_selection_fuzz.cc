// Fuzz target: what selects events of an event store (store/event_list.h, store/selection.h).
// Input: first byte even: the text of an events file (`ferry store get --events-file`, written
// by another program); odd: a `--where` expression, compiled against a small NanoAOD-like
// schema (scalars, a bool, a counter and its jagged columns). A parsed expression reads only
// scalar columns of the schema.
#include <cstdint>
#include <string_view>
#include <vector>

#include "store/event_list.h"
#include "store/schema.h"
#include "store/selection.h"

using namespace ferry;
using namespace ferry::store;

namespace {

const Schema& TestSchema() {
  static const Schema schema = [] {
    using rootio::LeafType;
    std::vector<ColumnSpec> c(6);
    c[0] = {.name = "run", .type = LeafType::kUInt32};
    c[1] = {.name = "MET_pt", .type = LeafType::kFloat32};
    c[2] = {.name = "nJet", .type = LeafType::kInt32};
    c[3] = {
        .name = "Jet_pt", .type = LeafType::kFloat32, .kind = ColumnKind::kJagged, .counter = 2};
    c[4] = {.name = "Jet_id", .type = LeafType::kUInt8, .kind = ColumnKind::kJagged, .counter = 2};
    c[5] = {.name = "HLT_IsoMu24", .type = LeafType::kBool};
    return Schema::Build(std::move(c)).value();
  }();
  return schema;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    (void)ParseEventList(text);
    return 0;
  }
  const Schema& schema = TestSchema();
  auto selection = Selection::Parse(text, schema);
  if (!selection.has_value()) {
    return 0;
  }
  for (int32_t col : selection->columns()) {
    if (col < 0 || static_cast<size_t>(col) >= schema.columns.size()
        || schema.columns[static_cast<size_t>(col)].jagged()) {
      __builtin_trap();
    }
  }
  return 0;
}
