#include "rootwrite/dataset_writer.h"

namespace ferry::rootwrite {
namespace {

// The two writers have the same members but no common base: each is wrapped as it is.
template <class Writer>
class WriterOf final : public DatasetWriter {
 public:
  template <class Options>
  WriterOf(FileWriter& file, Options options) : w_(file, std::move(options)) {}

  Status AddBranch(const BranchSpec& spec) override {
    FERRY_TRY(w_.AddBranch(spec));
    return OkStatus();
  }
  Status WriteColumns(std::span<const rootio::Column* const> columns) override {
    return w_.WriteColumns(columns);
  }
  Status Close() override { return w_.Close(); }
  int64_t cluster_size() const override { return w_.cluster_size(); }
  int64_t zip_bytes() const override { return w_.zip_bytes(); }
  int64_t tot_bytes() const override { return w_.tot_bytes(); }

 private:
  Writer w_;
};

}  // namespace

std::string_view DatasetFormatName(DatasetFormat format) {
  return format == DatasetFormat::kRntuple ? "rntuple" : "ttree";
}

Result<DatasetFormat> ParseDatasetFormat(std::string_view name) {
  if (name == "ttree") {
    return DatasetFormat::kTree;
  }
  if (name == "rntuple") {
    return DatasetFormat::kRntuple;
  }
  return InvalidArgumentError("unknown format '" + std::string(name) + "' (ttree or rntuple)");
}

std::unique_ptr<DatasetWriter> DatasetWriter::Make(FileWriter& file,
                                                   const DatasetWriterOptions& options) {
  if (options.format == DatasetFormat::kRntuple) {
    RntupleOptions o;
    o.name = options.name;
    o.description = options.title;
    o.zipped_cluster_bytes = options.zipped_cluster_bytes;
    return std::make_unique<WriterOf<RntupleWriter>>(file, std::move(o));
  }
  TreeOptions o;
  o.name = options.name;
  o.title = options.title;
  o.basket_size = options.basket_size;
  o.auto_flush = options.auto_flush;
  o.background_compression = options.background_compression;
  return std::make_unique<WriterOf<TreeWriter>>(file, std::move(o));
}

}  // namespace ferry::rootwrite
