// A replica tier for the cache's own tests (cache/replica_hooks.h): it serves no virtual file and
// records what the cache asked of it — the access records (one byte each, so the trace file
// grows) and the builds — so a test checks the cache's side of the interface without the replica
// library above it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cache/replica_hooks.h"

namespace ferry::cache {

class RecordingReplicaHooks final : public ReplicaHooks {
 public:
  Result<std::shared_ptr<const VirtualFile>> OpenVirtual(
      const EntryPaths& /*paths*/,
      const IndexInfo& /*entry*/,
      const PageSealer* /*sealer*/) const override {
    return NotFoundError("no replica (test)");
  }
  void EncodeAccess(uint64_t /*generation*/,
                    std::span<const io::ReadRequest> /*requests*/,
                    std::vector<uint8_t>& out) const override {
    out.push_back(1);
    MutexLock lock(mu_);
    ++accesses_;
  }
  uint64_t access_log_max_bytes() const override { return 16ull << 20; }
  void RequestBuild(const Config& /*config*/,
                    const std::string& key,
                    bool still_open) const override {
    MutexLock lock(mu_);
    builds_.push_back(key);
    still_open_.push_back(still_open);
  }
  void Verify(const EntryPaths& /*paths*/,
              const IndexInfo& /*entry*/,
              const PageSealer* /*sealer*/,
              VerifyReport& /*report*/) const override {}
  // Accepts any value but "bad" (the cache's tests of ConfigFromMap with a tier).
  Status CheckSetting(std::string_view /*key*/, std::string_view value) const override {
    return value == "bad" ? InvalidArgumentError("must not be bad (test)") : OkStatus();
  }

  // The access records encoded so far.
  uint64_t accesses() const {
    MutexLock lock(mu_);
    return accesses_;
  }
  // The keys whose builds were asked for, in order; cleared.
  std::vector<std::string> TakeBuilds() const {
    MutexLock lock(mu_);
    std::vector<std::string> out;
    out.swap(builds_);
    return out;
  }

  // Per build asked for, in order, whether the file was still open then; cleared.
  std::vector<bool> TakeStillOpen() const {
    MutexLock lock(mu_);
    std::vector<bool> out;
    out.swap(still_open_);
    return out;
  }

 private:
  mutable Mutex mu_;
  mutable uint64_t accesses_ FERRY_GUARDED_BY(mu_) = 0;
  mutable std::vector<std::string> builds_ FERRY_GUARDED_BY(mu_);
  mutable std::vector<bool> still_open_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::cache
