#include "store/store_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <vector>

#include "io/local_source.h"

namespace ferry::store {

Result<Fd> LockStore(const std::string& dir) {
  Fd fd = FERRY_TRY(Fd::Open(dir + "/.lock", O_RDWR | O_CREAT, 0644));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return Error(ErrorCode::kIo, "another convert or append is writing " + dir, errno);
  }
  return fd;
}

Result<Manifest> ReadManifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  auto src = FERRY_TRY(io::OpenLocal(path));
  std::vector<uint8_t> bytes(src->size());
  FERRY_TRY_CTX(src->ReadAt(0, bytes), path);
  return FERRY_TRY_CTX(Manifest::Parse(bytes), path);
}

Status SyncDir(const std::string& dir) {
  Fd d = FERRY_TRY(Fd::Open(dir, O_RDONLY | O_DIRECTORY, 0));
  if (::fsync(d.get()) != 0) {
    return IoError("fsync " + dir, errno);
  }
  return OkStatus();
}

Status PublishManifest(const std::string& dir, Manifest& m, uint64_t* bytes) {
  std::vector<uint8_t> manifest = m.Serialize();
  const std::string final_path = dir + "/" + kManifestName;
  const std::string tmp_path = final_path + ".tmp";
  {
    Fd fd = FERRY_TRY(Fd::Open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    FERRY_TRY_CTX(PwriteFull(fd.get(), manifest.data(), manifest.size(), 0), tmp_path);
    if (::fsync(fd.get()) != 0) {
      return IoError("fsync " + tmp_path, errno);
    }
    FERRY_TRY_CTX(fd.Close(), tmp_path);
  }
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    return IoError("rename " + tmp_path, errno);
  }
  *bytes = manifest.size();
  return SyncDir(dir);
}

std::set<std::string> NamedFiles(const Manifest* m, uint32_t* max_generation) {
  std::set<std::string> out;
  if (m != nullptr) {
    for (const RunEntry& r : m->runs) {
      out.insert(r.file_name());
      *max_generation = std::max(*max_generation, r.generation);
    }
    for (const CopyEntry& c : m->copies) {
      out.insert(c.file_name());
    }
  }
  return out;
}

void RemoveUnnamed(const std::string& dir, const std::set<std::string>& keep) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    const bool ours =
        name.starts_with("run-") && (name.ends_with(".shard") || name.ends_with(".copy"));
    if ((ours && keep.count(name) == 0) || name == std::string(kManifestName) + ".tmp") {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

}  // namespace ferry::store
