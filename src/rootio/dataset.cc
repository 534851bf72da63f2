#include "rootio/dataset.h"

#include "rootio/dataset_impl.h"
#include "rootio/rntuple_anchor.h"

namespace ferry::rootio {

DatasetScratch::DatasetScratch() : parts_(std::make_unique<Parts>()) {}
DatasetScratch::~DatasetScratch() = default;
DatasetScratch::DatasetScratch(DatasetScratch&&) noexcept = default;
DatasetScratch& DatasetScratch::operator=(DatasetScratch&&) noexcept = default;

Result<std::unique_ptr<Dataset>> Dataset::Open(std::unique_ptr<RootFile> file,
                                               std::string_view name) {
  const Key key = FERRY_TRY(file->FindKey(name));
  if (key.class_name == kRntupleClassName) {
    return OpenRntupleDataset(std::move(file), name);
  }
  return OpenTreeDataset(std::move(file), name);
}

Result<std::unique_ptr<Dataset>> Dataset::OpenPath(const std::string& path, std::string_view name) {
  std::unique_ptr<RootFile> file = FERRY_TRY(RootFile::OpenPath(path));
  return Open(std::move(file), name);
}

}  // namespace ferry::rootio
