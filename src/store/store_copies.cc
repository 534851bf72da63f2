// Store::Scan with column copies (docs/format/store.md section 12): reading a collection
// column from its copy instead of the E blocks, falling back to the E blocks when a copy fails
// a check, and building the copies a scan asks for.
#include <algorithm>
#include <filesystem>

#include "io/local_source.h"
#include "store/scan_state.h"
#include "store/shard.h"
#include "store/store_dir.h"

namespace ferry::store {
namespace {

std::string CopyWhere(const std::string& path, const ColumnSpec& spec, uint64_t run) {
  return "column copy " + path + " (" + spec.name + ", run " + std::to_string(run) + ")";
}

}  // namespace

void Store::CopyBuild::Abandon(ScanState& st) {
  std::error_code ec;
  for (CopyColumn& c : st.copies) {
    if (c.writer.has_value()) {
      std::filesystem::remove(c.writer->path(), ec);
    }
  }
  for (const BuiltCopy& b : built) {
    std::filesystem::remove(dir + "/" + b.entry.file_name(), ec);
  }
  built.clear();
}

Status Store::StartCopyBuild(const ScanOptions& options, CopyBuild& build, ScanReport* report) {
  if (!options.build_copies || manifest_.version < 3 || manifest_.j_chunks()) {
    return OkStatus();
  }
  if (!local()) {
    report->not_built = "a remote store is never written";
    return OkStatus();
  }
  auto lock = LockStore(dir_);
  if (!lock.has_value()) {
    report->not_built = lock.error().message();
    return OkStatus();
  }
  // Ids come from the manifest as it is now (an append may have followed this Store's open).
  const Manifest now = FERRY_TRY(ReadManifest(dir_));
  build.active = true;
  build.dir = dir_;
  build.lock = std::move(*lock);
  build.next_id = now.next_copy_id;
  return OkStatus();
}

Result<std::unique_ptr<io::ByteSource>> Store::OpenCopy(const CopyEntry& entry,
                                                        const Shard& shard,
                                                        std::vector<ChunkRef>* refs) {
  const std::string path = dir_ + "/" + entry.file_name();
  std::unique_ptr<io::ByteSource> src =
      options_.open
          ? FERRY_TRY(options_.open(path, options_.mode))
          : FERRY_TRY(io::OpenLocal(
              path, options_.mode == IoMode::kMmap ? io::LocalMode::kMmap : io::LocalMode::kPread));
  const uint64_t size = src->size();
  std::vector<uint8_t> head(std::min<uint64_t>(size, kCopyHeaderSize));
  FERRY_TRY(src->ReadAt(0, head));
  const CopyHeader h = FERRY_TRY(CopyHeader::Parse(head, size));
  const ShardHeader& sh = shard.header();
  if (h.run != entry.run || h.generation != entry.generation || h.column != entry.column
      || h.schema_hash != manifest_.schema_hash || h.events != sh.events || h.log2_ks != sh.log2_ks
      || size != entry.bytes) {
    return CorruptionError("column copy does not belong to this shard and column");
  }
  std::vector<uint8_t> dir(uint64_t{h.s_blocks} * kSDirEntryBytes);
  FERRY_TRY(src->ReadAt(h.directory_offset(size), dir));
  *refs = FERRY_TRY(ParseCopyDirectory(dir, h, size));
  counters_.bytes += head.size() + dir.size();
  counters_.reads += 2;
  counters_.requests += 2;
  return src;
}

Status Store::ReadCopyChunk(io::ByteSource& source,
                            const ChunkRef& ref,
                            std::vector<uint8_t>* scratch,
                            std::span<const uint8_t>* out) {
  counters_.bytes += ref.size;
  if (options_.mode == IoMode::kMmap) {
    if (auto view = source.View(ref.offset, ref.size); view.has_value()) {
      ++counters_.views;
      *out = *view;
      return OkStatus();
    }
  }
  scratch->resize(ref.size);
  ++counters_.reads;
  ++counters_.requests;
  FERRY_TRY(source.ReadAt(ref.offset, *scratch));
  *out = *scratch;
  return OkStatus();
}

void Store::PrepareCopies(Shard& shard,
                          std::span<const int32_t> columns,
                          ScanState& st,
                          CopyBuild& build,
                          ScanReport* report) {
  const ShardHeader& h = shard.header();
  const uint32_t generation =
      manifest_.runs[static_cast<size_t>(manifest_.RunSlot(h.run))].generation;
  st.copies.clear();
  st.copies.resize(st.jagged_at.size());
  for (size_t k = 0; k < st.jagged_at.size(); ++k) {
    CopyColumn& cc = st.copies[k];
    cc.q = st.jagged_at[k];
    const int32_t c = columns[cc.q];
    const ColumnSpec& spec = schema().columns[static_cast<size_t>(c)];
    uint32_t replaces = 0;
    if (const CopyEntry* e = manifest_.FindCopy(h.run, c); e != nullptr) {
      cc.path = dir_ + "/" + e->file_name();
      cc.id = e->id;
      auto src = OpenCopy(*e, shard, &cc.refs);
      if (src.has_value()) {
        cc.source = std::move(*src);
        ++report->columns[k].shards_from_copies;
        continue;
      }
      report->copy_errors.push_back(
          std::move(src).error().AddContext(CopyWhere(cc.path, spec, h.run)));
      replaces = e->id;
    }
    ++report->columns[k].shards_from_blocks;
    if (!build.active) {
      continue;
    }
    BuiltCopy b{.entry = {.id = build.next_id++,
                          .column = static_cast<uint32_t>(c),
                          .run = h.run,
                          .generation = generation},
                .replaces = replaces};
    CopyHeader head{.run = h.run,
                    .generation = generation,
                    .column = b.entry.column,
                    .schema_hash = manifest_.schema_hash,
                    .events = h.events,
                    .s_blocks = static_cast<uint32_t>(h.s_blocks()),
                    .log2_ks = h.log2_ks};
    auto w = CopyWriter::Open(dir_ + "/" + b.entry.file_name(), head);
    if (!w.has_value()) {
      report->copy_errors.push_back(std::move(w).error());
      continue;
    }
    cc.writer = std::move(*w);
    cc.pending = b;
  }
}

Status Store::FillJaggedV3(Shard& shard,
                           uint64_t block,
                           std::span<const int32_t> columns,
                           ScanState& st,
                           ScanReport* report) {
  const Schema& s = schema();
  const uint64_t ks = uint64_t{1} << shard.header().log2_ks;
  const uint64_t first = block * ks;
  const uint64_t n = std::min(ks, shard.header().events - first);
  st.from_blocks.clear();
  for (CopyColumn& cc : st.copies) {
    const ColumnSpec& spec = s.columns[static_cast<size_t>(columns[cc.q])];
    if (cc.source != nullptr) {
      const ChunkRef& ref = cc.refs[block];
      std::span<const uint8_t> stored;
      Status got = ReadCopyChunk(*cc.source, ref, &st.copy_scratch, &stored);
      if (got.has_value()) {
        got = DecodeSChunk(ref, stored, true, spec.value_size(), st.batch.columns[cc.q].bytes);
      }
      ++counters_.block_reads;
      if (got.has_value()) {
        continue;
      }
      // The rest of this shard comes from the E blocks; the copy is reported once.
      report->copy_errors.push_back(std::move(got).error().AddContext(
          CopyWhere(cc.path, spec, shard.header().run) + " > S block " + std::to_string(block)));
      cc.source.reset();
      cc.failed = true;
    }
    st.from_blocks.push_back(cc.q);
  }
  if (!st.from_blocks.empty()) {
    FERRY_TRY(FillJaggedFromE(shard, first, n, columns, st.from_blocks, &st.batch));
  }
  for (CopyColumn& cc : st.copies) {
    if (cc.writer.has_value()) {
      const ColumnSpec& spec = s.columns[static_cast<size_t>(columns[cc.q])];
      FERRY_TRY(cc.writer->Add(st.batch.columns[cc.q].bytes, spec.value_size(), manifest_.codec));
    }
  }
  return OkStatus();
}

Status Store::FinishShardCopies(ScanState& st, CopyBuild& build, ScanReport* report) {
  for (size_t k = 0; k < st.copies.size(); ++k) {
    CopyColumn& cc = st.copies[k];
    if (cc.source != nullptr && local()) {
      TouchCopy(cc.path);
    }
    if (cc.failed && build.active) {
      build.drop.push_back(cc.id);
    }
    if (!cc.writer.has_value()) {
      continue;
    }
    cc.pending.entry.bytes = FERRY_TRY(cc.writer->Finish());
    cc.writer.reset();
    build.built.push_back(cc.pending);
    ++report->columns[k].copies_built;
  }
  return OkStatus();
}

Status Store::EndCopyBuild(CopyBuild& build, ScanReport* report) {
  if (!build.active || (build.built.empty() && build.drop.empty())) {
    return OkStatus();
  }
  auto change = PublishCopies(dir_, build.built, build.drop);
  if (!change.has_value()) {
    ScanState none(schema(), {});
    build.Abandon(none);
    return std::move(change).error().AddContext("publishing column copies of " + dir_);
  }
  report->published = std::move(*change);
  return OkStatus();
}

Status Store::VerifyCopies(Shard& shard,
                           std::span<const uint64_t> s_group_elements,
                           VerifyReport* rep) {
  const Schema& s = schema();
  const ShardHeader& h = shard.header();
  std::vector<uint8_t> stored;
  std::vector<uint8_t> raw;
  for (const CopyEntry& e : manifest_.copies) {
    if (e.run != h.run) {
      continue;
    }
    const ColumnSpec& spec = s.columns[e.column];
    const std::string where = CopyWhere(dir_ + "/" + e.file_name(), spec, e.run);
    std::vector<ChunkRef> refs;
    auto src = FERRY_TRY_CTX(OpenCopy(e, shard, &refs), where);
    for (uint64_t b = 0; b < refs.size(); ++b) {
      stored.resize(refs[b].size);
      FERRY_TRY_CTX(src->ReadAt(refs[b].offset, stored), where);
      raw.resize(s_group_elements[b * s.groups() + static_cast<size_t>(spec.group)] * spec.len
                 * spec.value_size());
      FERRY_TRY_CTX(DecodeSChunk(refs[b], stored, true, spec.value_size(), raw),
                    where + " > S block " + std::to_string(b));
      rep->bytes += refs[b].size;
    }
    ++rep->copies;
  }
  return OkStatus();
}

}  // namespace ferry::store
