// Internal to the store library: the two passes of Convert (converter.h) share these.
//
// Inputs (convert_input.cc): a TTree's or an RNTuple's fields behind rootio::Dataset.
// Pass 1 (convert_plan.cc): the schema of the inputs and every entry's run, lumi and event,
// sorted into one ShardPlan per run. Pass 2 (converter.cc): the Router decodes and routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "rootio/dataset.h"
#include "store/converter.h"
#include "store/shard_builder.h"

namespace ferry::store::convert_internal {

// Per reading thread: the dataset reader's buffers.
using LeafScratch = rootio::DatasetScratch;

// An input's dataset, read field by field (a leaf id is a rootio::Dataset field id).
using OpenInput = rootio::Dataset;

// The dataset `name` of the file at path; errors past the file's opening name the file.
Result<std::unique_ptr<OpenInput>> OpenInputData(const std::string& path, const std::string& name);

// The schema of a tree or RNTuple plus, per column, the leaf it is read from.
struct TreeSchema {
  Schema schema;
  std::vector<int32_t> leaves;
  std::vector<std::string> skipped;
};

// Columns of the dataset's readable numeric fields, fixed ones first (each jagged field counted
// by the column of its counter field); the other fields go to skipped, with why.
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
