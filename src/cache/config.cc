#include "cache/config.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "base/strings.h"
#include "cache/page_index.h"
#include "cache/replica_hooks.h"

namespace ferry::cache {
namespace {

// One setting's value, with what an invalid value's error needs.
struct Value {
  const std::string& key;
  const std::string& text;
  Status Bad(const std::string& why) const {
    return InvalidArgumentError("cache setting " + key + " = '" + text + "': " + why);
  }
  // A size ("64M"), a number up to `max`, or seconds, into `field`.
  template <typename T>
  Status Size(T& field) const {
    auto v = ParseSize(text);
    if (!v) {
      return Bad("not a size");
    }
    field = static_cast<T>(*v);
    return OkStatus();
  }
  template <typename T>
  Status Uint(T& field, uint64_t max, uint64_t min = 0) const {
    auto v = ParseUint(text);
    if (!v || *v > max || *v < min) {
      return Bad("must be a number from " + std::to_string(min) + " to " + std::to_string(max));
    }
    field = static_cast<T>(*v);
    return OkStatus();
  }
  Status Seconds(int64_t& field) const {
    auto v = ParseInt(text);
    if (!v || *v < 0) {
      return Bad("not a number of seconds");
    }
    field = *v;
    return OkStatus();
  }
  std::vector<std::string> List() const {
    std::vector<std::string> out;
    for (std::string_view p : Split(text, ',')) {
      if (!p.empty()) {
        out.emplace_back(p);
      }
    }
    return out;
  }
};

Status SetPageSize(Config& c, const Value& v) {
  uint64_t n = 0;
  FERRY_TRY(v.Size(n));
  if (n > UINT32_MAX || !ValidPageSize(static_cast<uint32_t>(n))) {
    return v.Bad("must be a power of two from 512 to 1M");
  }
  c.page_size = static_cast<uint32_t>(n);
  return OkStatus();
}

Status SetMaxChunk(Config& c, const Value& v) {
  uint64_t n = 0;
  FERRY_TRY(v.Size(n));
  if (n == 0 || n > UINT32_MAX) {
    return v.Bad("must be 1..4G");
  }
  c.max_chunk_bytes = static_cast<uint32_t>(n);
  return OkStatus();
}

Status SetReplica(Config& c, const Value& v) {
  static const std::pair<const char*, ReplicaMode> kModes[] = {
      {"auto", ReplicaMode::kAuto}, {"manual", ReplicaMode::kManual}, {"off", ReplicaMode::kOff}};
  for (const auto& [name, mode] : kModes) {
    if (v.text == name) {
      c.replica = mode;
      return OkStatus();
    }
  }
  return v.Bad("must be auto, manual or off");
}

Status SetReplicaBudget(Config& c, const Value& v) {
  if (v.text == "auto") {
    c.replica_budget_percent = 0;
    return OkStatus();
  }
  if (!v.Uint(c.replica_budget_percent, 1000, 10)) {
    return v.Bad("must be auto or a percentage from 10 to 1000");
  }
  return OkStatus();
}

Status SetAutoOff(bool& field, const Value& v) {
  if (v.text != "auto" && v.text != "off") {
    return v.Bad("must be auto or off");
  }
  field = v.text == "auto";
  return OkStatus();
}

// "25", "25%" or "0.25": a share of the file from 1% to 100%.
Status SetBypassFraction(Config& c, const Value& v) {
  std::string t = v.text;
  if (!t.empty() && t.back() == '%') {
    t.pop_back();
  }
  double pct = -1;
  if (t.find('.') != std::string::npos) {
    char* end = nullptr;
    const double f = std::strtod(t.c_str(), &end);
    pct = end != nullptr && *end == '\0' && !t.empty() ? f * 100 : -1;
  } else if (auto n = ParseUint(t)) {
    pct = static_cast<double>(*n);
  }
  if (!(pct >= 1 && pct <= 100)) {
    return v.Bad("must be a share of the file from 1% to 100% (25, 25% or 0.25)");
  }
  c.bypass_percent = static_cast<uint32_t>(std::lround(pct));
  return OkStatus();
}

// Setters of a Config member from a value, by kind, so that the table below is one line a key.
template <auto Field>
Status TextOf(Config& c, const Value& v) {
  c.*Field = v.text;
  return OkStatus();
}
template <auto Field>
Status ListOf(Config& c, const Value& v) {
  c.*Field = v.List();
  return OkStatus();
}
template <auto Field, uint64_t kMin = 0>
Status SizeOf(Config& c, const Value& v) {
  FERRY_TRY(v.Size(c.*Field));
  return c.*Field < kMin ? v.Bad("must be at least " + std::to_string(kMin) + " bytes")
                         : OkStatus();
}
template <auto Field, uint64_t kMax, uint64_t kMin = 0>
Status UintOf(Config& c, const Value& v) {
  return v.Uint(c.*Field, kMax, kMin);
}
template <auto Field>
Status SecondsOf(Config& c, const Value& v) {
  return v.Seconds(c.*Field);
}
template <auto Field>
Status AutoOffOf(Config& c, const Value& v) {
  return SetAutoOff(c.*Field, v);
}

// Every key and how its value is applied, in the order ConfigKeys() lists them.
using Setter = Status (*)(Config&, const Value&);
struct Key {
  const char* name;
  Setter set;
  // Kept as text for the replica tier, which checks the value (ReplicaHooks::CheckSetting).
  bool tier = false;
};
constexpr Key kKeys[] = {
    {"dir", TextOf<&Config::dir>},
    {"max_size", SizeOf<&Config::max_bytes>},
    {"min_free", SizeOf<&Config::min_free_bytes>},
    {"max_entries", UintOf<&Config::max_entries, UINT64_MAX>},
    {"min_free_inodes", UintOf<&Config::min_free_inodes, UINT64_MAX>},
    {"page_size", SetPageSize},
    {"round_pages", UintOf<&Config::round_to_pages, 1>},
    {"iogap", SizeOf<&Config::iogap>},
    {"max_chunks", UintOf<&Config::max_chunks, 1u << 20, 1>},
    {"max_chunk", SetMaxChunk},
    {"max_request", SizeOf<&Config::max_request_bytes, 1>},
    {"channels", UintOf<&Config::channels, 64, 1>},
    {"writeback", SizeOf<&Config::writeback_bytes>},
    {"writeback_wait_ms", UintOf<&Config::writeback_wait_ms, 60000>},
    {"publish_ms", UintOf<&Config::publish_ms, 3600000>},
    {"sync", UintOf<&Config::sync, 1>},
    {"retries", UintOf<&Config::retries, 20>},
    {"backoff_ms", UintOf<&Config::backoff_ms, 60000>},
    {"lock_timeout_ms", UintOf<&Config::lock_timeout_ms, 600000>},
    {"revalidate_s", SecondsOf<&Config::revalidate_s>},
    {"url_params", ListOf<&Config::url_params>},
    {"workers", UintOf<&Config::workers, 256, 1>},
    {"replica", SetReplica},
    {"replica_codec", TextOf<&Config::replica_codec>, /*tier=*/true},
    {"replica_budget", SetReplicaBudget},
    {"replica_builder", TextOf<&Config::replica_builder>},
    {"readahead", AutoOffOf<&Config::readahead>},
    {"readahead_max", SizeOf<&Config::readahead_max_bytes, 1u << 20>},
    {"readahead_next", AutoOffOf<&Config::readahead_next>},
    {"bypass", AutoOffOf<&Config::bypass>},
    {"bypass_fraction", SetBypassFraction},
    {"bypass_tools", ListOf<&Config::bypass_tools>},
    {"shared", TextOf<&Config::shared>},
    {"shared_reauth", SecondsOf<&Config::shared_reauth_s>},
    {"cache_key_file", TextOf<&Config::key_file>},
};

std::string EnvName(const std::string& key) {
  std::string name = "FERRY_CACHE_";
  for (char ch : key) {
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return name;
}

}  // namespace

const std::vector<std::string>& ConfigKeys() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const Key& k : kKeys) {
      names.emplace_back(k.name);
    }
    return names;
  }();
  return kNames;
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

Result<Config> ConfigFromMap(const std::map<std::string, std::string>& kv,
                             bool use_env,
                             const ReplicaHooks* tier) {
  Config c;
  auto set = [&](const Key& k, const Value& v) -> Status {
    FERRY_TRY(k.set(c, v));
    if (k.tier && tier != nullptr) {
      if (Status s = tier->CheckSetting(v.key, v.text); !s.has_value()) {
        return v.Bad(s.error().message());
      }
    }
    return OkStatus();
  };
  for (const Key& k : kKeys) {
    const std::string key = k.name;
    auto it = kv.find(key);
    if (it != kv.end()) {
      FERRY_TRY(set(k, Value{key, it->second}));
    }
    if (use_env) {
      // getenv is read-only here; ferry never modifies its environment.
      if (const char* v = std::getenv(EnvName(key).c_str())) {  // NOLINT(concurrency-mt-unsafe)
        FERRY_TRY(set(k, Value{key, v}));
      }
    }
  }
  return c;
}

}  // namespace ferry::cache
