#include "cache/config.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "base/strings.h"
#include "cache/page_index.h"
#include "codec/compression.h"

namespace ferry::cache {
namespace {

Status Set(Config& c, const std::string& key, const std::string& value) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("cache setting " + key + " = '" + value + "': " + why);
  };
  auto size = [&](auto& field) -> Status {
    auto v = ParseSize(value);
    if (!v) {
      return bad("not a size");
    }
    field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
    return OkStatus();
  };
  auto uint = [&](auto& field, uint64_t max) -> Status {
    auto v = ParseUint(value);
    if (!v || *v > max) {
      return bad("not a number up to " + std::to_string(max));
    }
    field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
    return OkStatus();
  };
  if (key == "dir") {
    c.dir = value;
  } else if (key == "max_size") {
    return size(c.max_bytes);
  } else if (key == "min_free") {
    return size(c.min_free_bytes);
  } else if (key == "page_size") {
    uint64_t v = 0;
    FERRY_TRY(size(v));
    if (v > UINT32_MAX || !ValidPageSize(static_cast<uint32_t>(v))) {
      return bad("must be a power of two from 512 to 1M");
    }
    c.page_size = static_cast<uint32_t>(v);
  } else if (key == "round_pages") {
    return uint(c.round_to_pages, 1);
  } else if (key == "iogap") {
    return size(c.iogap);
  } else if (key == "max_chunks") {
    FERRY_TRY(uint(c.max_chunks, 1u << 20));
    if (c.max_chunks == 0) {
      return bad("must be at least 1");
    }
  } else if (key == "max_chunk") {
    uint64_t v = 0;
    FERRY_TRY(size(v));
    if (v == 0 || v > UINT32_MAX) {
      return bad("must be 1..4G");
    }
    c.max_chunk_bytes = static_cast<uint32_t>(v);
  } else if (key == "max_request") {
    FERRY_TRY(size(c.max_request_bytes));
    if (c.max_request_bytes == 0) {
      return bad("must be at least 1");
    }
  } else if (key == "channels") {
    FERRY_TRY(uint(c.channels, 64));
    if (c.channels == 0) {
      return bad("must be 1..64");
    }
  } else if (key == "writeback") {
    return size(c.writeback_bytes);
  } else if (key == "publish_ms") {
    return uint(c.publish_ms, 3600000);
  } else if (key == "sync") {
    return uint(c.sync, 1);
  } else if (key == "retries") {
    return uint(c.retries, 20);
  } else if (key == "backoff_ms") {
    return uint(c.backoff_ms, 60000);
  } else if (key == "lock_timeout_ms") {
    return uint(c.lock_timeout_ms, 600000);
  } else if (key == "revalidate_s" || key == "shared_reauth") {
    auto v = ParseInt(value);
    if (!v || *v < 0) {
      return bad("not a number of seconds");
    }
    (key == "revalidate_s" ? c.revalidate_s : c.shared_reauth_s) = *v;
  } else if (key == "shared") {
    c.shared = value;
  } else if (key == "url_params") {
    c.url_params.clear();
    for (std::string_view p : Split(value, ',')) {
      if (!p.empty()) {
        c.url_params.emplace_back(p);
      }
    }
  } else if (key == "workers") {
    FERRY_TRY(uint(c.workers, 256));
    if (c.workers == 0) {
      return bad("must be 1..256");
    }
  } else if (key == "replica") {
    if (value == "auto") {
      c.replica = ReplicaMode::kAuto;
    } else if (value == "manual") {
      c.replica = ReplicaMode::kManual;
    } else if (value == "off") {
      c.replica = ReplicaMode::kOff;
    } else {
      return bad("must be auto, manual or off");
    }
  } else if (key == "replica_codec") {
    if (value != "auto") {
      auto setting = codec::Setting::Parse(value);
      if (!setting
          || (setting->algorithm != codec::Algorithm::kZstd
              && setting->algorithm != codec::Algorithm::kLz4
              && setting->algorithm != codec::Algorithm::kNone)) {
        return bad("must be auto, zstd:N, lz4 or none");
      }
    }
    c.replica_codec = value;
  } else if (key == "replica_budget") {
    if (value == "auto") {
      c.replica_budget_percent = 0;
    } else {
      FERRY_TRY(uint(c.replica_budget_percent, 1000));
      if (c.replica_budget_percent < 10) {
        return bad("must be auto or a percentage from 10 to 1000");
      }
    }
  } else if (key == "replica_builder") {
    c.replica_builder = value;
  } else if (key == "readahead" || key == "bypass") {
    if (value != "auto" && value != "off") {
      return bad("must be auto or off");
    }
    (key == "readahead" ? c.readahead : c.bypass) = value == "auto";
  } else if (key == "readahead_max") {
    FERRY_TRY(size(c.readahead_max_bytes));
    if (c.readahead_max_bytes < (1u << 20)) {
      return bad("must be at least 1M");
    }
  } else if (key == "bypass_fraction") {
    // "25", "25%" or "0.25".
    std::string v = value;
    if (!v.empty() && v.back() == '%') {
      v.pop_back();
    }
    double pct = -1;
    if (v.find('.') != std::string::npos) {
      char* end = nullptr;
      const double f = std::strtod(v.c_str(), &end);
      pct = end != nullptr && *end == '\0' && !v.empty() ? f * 100 : -1;
    } else if (auto n = ParseUint(v)) {
      pct = static_cast<double>(*n);
    }
    if (!(pct >= 1 && pct <= 100)) {
      return bad("must be a share of the file from 1% to 100% (25, 25% or 0.25)");
    }
    c.bypass_percent = static_cast<uint32_t>(std::lround(pct));
  } else if (key == "bypass_tools") {
    c.bypass_tools.clear();
    for (std::string_view t : Split(value, ',')) {
      if (!t.empty()) {
        c.bypass_tools.emplace_back(t);
      }
    }
  }
  return OkStatus();
}

std::string EnvName(const std::string& key) {
  std::string name = "FERRY_CACHE_";
  for (char ch : key) {
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return name;
}

}  // namespace

const std::vector<std::string>& ConfigKeys() {
  static const std::vector<std::string> kKeys = {
      "dir",           "max_size",       "min_free",        "page_size",
      "round_pages",   "iogap",          "max_chunks",      "max_chunk",
      "max_request",   "channels",       "writeback",       "publish_ms",
      "sync",          "retries",        "backoff_ms",      "lock_timeout_ms",
      "revalidate_s",  "url_params",     "workers",         "replica",
      "replica_codec", "replica_budget", "replica_builder", "readahead",
      "readahead_max", "bypass",         "bypass_fraction", "bypass_tools",
      "shared",        "shared_reauth"};
  return kKeys;
}

fetch::PlannerConfig Config::planner() const {
  fetch::PlannerConfig p;
  p.page_size = page_size;
  p.round_to_pages = round_to_pages;
  p.iogap = iogap;
  p.max_chunks = max_chunks;
  p.max_chunk_bytes = max_chunk_bytes;
  p.max_request_bytes = max_request_bytes;
  return p;
}

Result<Config> ConfigFromMap(const std::map<std::string, std::string>& kv, bool use_env) {
  Config c;
  for (const std::string& key : ConfigKeys()) {
    auto it = kv.find(key);
    if (it != kv.end()) {
      FERRY_TRY(Set(c, key, it->second));
    }
    if (use_env) {
      // getenv is read-only here; ferry never modifies its environment.
      if (const char* v = std::getenv(EnvName(key).c_str())) {  // NOLINT(concurrency-mt-unsafe)
        FERRY_TRY(Set(c, key, v));
      }
    }
  }
  return c;
}

}  // namespace ferry::cache
