#include "store/pick.h"

#include <sys/stat.h>

#include <algorithm>

#include "rootwrite/dataset_writer.h"
#include "rootwrite/file_writer.h"

namespace ferry::store {
namespace {

constexpr size_t kBatchEvents = 4096;
constexpr const char* kTitle = "events picked by ferry store get";

// The columns' branches declared, the events written in batches, the dataset closed.
Status WriteEvents(Store& store,
                   std::span<const EventId> ids,
                   std::span<const int32_t> cols,
                   const std::string& path,
                   rootwrite::DatasetWriter& out) {
  const Schema& s = store.schema();
  for (int32_t c : cols) {
    const ColumnSpec& spec = s.columns[static_cast<size_t>(c)];
    rootwrite::BranchSpec b{
        .name = spec.name, .type = spec.type, .len = static_cast<int32_t>(spec.len)};
    if (spec.jagged()) {
      b.count = s.columns[static_cast<size_t>(spec.counter)].name;
    }
    FERRY_TRY_CTX(out.AddBranch(b), path);
  }
  std::vector<rootio::Column> values;
  std::vector<const rootio::Column*> ptrs;
  for (size_t at = 0; at < ids.size(); at += kBatchEvents) {
    values.clear();
    FERRY_TRY(
        store.ReadEvents(ids.subspan(at, std::min(kBatchEvents, ids.size() - at)), cols, &values));
    ptrs.clear();
    for (const rootio::Column& v : values) {
      ptrs.push_back(&v);
    }
    FERRY_TRY_CTX(out.WriteColumns(ptrs), path);
  }
  FERRY_TRY_CTX(out.Close(), path);
  return OkStatus();
}

}  // namespace

Result<PickReport> WritePicked(Store& store,
                               std::span<const EventId> ids,
                               std::span<const int32_t> columns,
                               const std::string& path,
                               codec::Setting compression,
                               rootwrite::DatasetFormat format) {
  const Schema& s = store.schema();
  std::vector<int32_t> cols(columns.begin(), columns.end());
  if (cols.empty()) {
    cols = FERRY_TRY(store.ResolveColumns({}));
  }
  for (size_t k = 0, n = cols.size(); k < n; ++k) {
    const ColumnSpec& c = s.columns[static_cast<size_t>(cols[k])];
    if (c.jagged() && std::find(cols.begin(), cols.end(), c.counter) == cols.end()) {
      cols.push_back(c.counter);
    }
  }
  // Schema order puts every counter before the jagged columns it counts, as the writer needs.
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());

  auto file = FERRY_TRY(rootwrite::FileWriter::Create(path, {.compression = compression}));
  const std::string& name = store.manifest().tree;
  std::unique_ptr<rootwrite::DatasetWriter> out =
      rootwrite::DatasetWriter::Make(*file, {.format = format, .name = name, .title = kTitle});
  FERRY_TRY(WriteEvents(store, ids, cols, path, *out));
  FERRY_TRY_CTX(file->Close(), path);
  PickReport rep;
  rep.events = ids.size();
  rep.branches = cols.size();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    rep.bytes = static_cast<uint64_t>(st.st_size);
  }
  return rep;
}

}  // namespace ferry::store
