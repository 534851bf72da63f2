// Internal to the store library: the two passes of Convert (converter.h) share these.
//
// Pass 1 (convert_plan.cc): the schema of the inputs and every entry's run, lumi and event,
// sorted into one ShardPlan per run. Pass 2 (converter.cc): the Router decodes and routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "rootio/root_file.h"
#include "store/converter.h"
#include "store/shard_builder.h"

namespace ferry::store::convert_internal {

struct OpenInput {
  std::unique_ptr<rootio::RootFile> file;
  std::unique_ptr<rootio::Tree> tree;
};

Result<OpenInput> OpenInputTree(const std::string& path, const std::string& tree);

// The schema of a tree plus, per column, the leaf it is read from.
struct TreeSchema {
  Schema schema;
  std::vector<int32_t> leaves;
  std::vector<std::string> skipped;
};

// kInvalidArgument naming path and the first column that differs.
Status SameSchema(const Schema& a, const Schema& b, const std::string& path);

// Where pass 1 put an input entry: the index of its run's plan, and its slots there.
struct SlotOf {
  uint32_t plan;
  EventSlot slot;
};

// Pass 1's result: the schema, per-run plans (ascending runs) and every entry's slots.
struct Plans {
  TreeSchema first;
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
// event leaf, mixed luminosityBlock presence, no events, or a duplicate run:lumi:event (naming
// both entries).
Result<Plans> PlanInputs(const ConvertOptions& opt, Manifest& m);

}  // namespace ferry::store::convert_internal
