// Internal to the store library: the two passes of Convert (converter.h) share these.
//
// Inputs (convert_input.cc): a TTree's or an RNTuple's leaves behind one interface.
// Pass 1 (convert_plan.cc): the schema of the inputs and every entry's run, lumi and event,
// sorted into one ShardPlan per run. Pass 2 (converter.cc): the Router decodes and routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "rootio/basket.h"
#include "rootio/rntuple.h"
#include "rootio/rntuple_columns.h"
#include "rootio/root_file.h"
#include "store/converter.h"
#include "store/shard_builder.h"

namespace ferry::store::convert_internal {

// Per reading thread: the TTree reader's basket decoder or the RNTuple reader's buffers.
struct LeafScratch {
  rootio::BasketDecoder decoder;
  rootio::RntupleScratch rntuple;
};

// An input's dataset, read leaf by leaf: a TTree, or an RNTuple (the key's class tells) whose
// flat top-level fields (rootio/rntuple_columns.h) play the leaves; a leaf id is then an
// index into `fields`. Members are destroyed in reverse order: the file outlives its readers.
struct OpenInput {
  std::unique_ptr<rootio::RootFile> file;
  std::unique_ptr<rootio::Tree> tree;
  std::unique_ptr<rootio::Rntuple> rntuple;
  std::vector<rootio::RntupleLeaf> fields;
  std::vector<std::string> unflat;  // the RNTuple's other top-level fields, with why

  struct Shape {
    rootio::LeafType type = rootio::LeafType::kUnknown;
    bool jagged = false;
    uint32_t len = 1;
  };
  int64_t entries() const;
  std::vector<rootio::EntryRange> Clusters() const;
  int32_t FindLeaf(std::string_view name) const;  // -1 when absent
  Shape ShapeOf(int32_t leaf) const;
  // As rootio::Tree::ReadLeafInto; concurrent calls need their own scratch.
  Status ReadLeafInto(int32_t leaf,
                      rootio::EntryRange range,
                      rootio::Column* out,
                      LeafScratch* scratch) const;
};

Result<OpenInput> OpenInputData(const std::string& path, const std::string& name);

// The schema of a tree or RNTuple plus, per column, the leaf it is read from.
struct TreeSchema {
  Schema schema;
  std::vector<int32_t> leaves;
  std::vector<std::string> skipped;
};

Result<TreeSchema> SchemaOf(const rootio::TreeInfo& info);
Result<TreeSchema> SchemaOfInput(const OpenInput& in);

// kInvalidArgument naming path and the first column that differs.
Status SameSchema(const Schema& a, const Schema& b, const std::string& path);

// Where pass 1 put an input entry: the index of its run's plan, and its slots there.
struct SlotOf {
  uint32_t plan;
  EventSlot slot;
};

// Pass 1's result: the schema, per-run plans (ascending runs) and every entry's slots.
struct Plans {
  TreeSchema first;  // its schema is the store's on append
  // Per input, per column of first.schema: the input's leaf. Inputs agree on their columns by
  // name, not order: a TTree and an RNTuple of the same events list them differently.
  std::vector<std::vector<int32_t>> leaves;
  bool no_lumi = false;
  double bytes_per_event = 0;
  std::vector<ShardPlan> plans;
  std::vector<std::vector<SlotOf>> slots;  // per input, per entry
  // Per plan: the first event (input order) for error messages.
  std::vector<std::string> first_event;
  uint64_t input_bytes = 0;
  uint64_t events = 0;
};
// Pass 1 over opt.inputs: appends them to m.inputs; kInvalidArgument for a missing run or
// event leaf, mixed luminosityBlock presence, no events, a duplicate run:lumi:event (naming
// both entries), or an input whose columns differ (by name, type, shape, counter) from
// `store` (an append's store schema) or else the first input's.
Result<Plans> PlanInputs(const ConvertOptions& opt, Manifest& m, const Schema* store = nullptr);

}  // namespace ferry::store::convert_internal
