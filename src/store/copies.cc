#include "store/copies.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/fd.h"
#include "base/strings.h"
#include "store/store_dir.h"

namespace ferry::store {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// "15%" (0-100) or a size ("2G", "500M", bytes).
Status ParseBudget(std::string_view v, CopiesConf* c) {
  if (v.ends_with('%')) {
    auto pct = ParseDouble(v.substr(0, v.size() - 1));
    if (!pct.has_value() || !(*pct >= 0 && *pct <= 100)) {
      return InvalidArgumentError("column_copies_budget: a percentage is 0% to 100%");
    }
    c->budget_fraction = *pct / 100;
    c->budget_bytes.reset();
    return OkStatus();
  }
  auto size = ParseSize(v);
  if (!size.has_value()) {
    return InvalidArgumentError("column_copies_budget takes a size (2G) or a percentage (15%)");
  }
  c->budget_bytes = *size;
  return OkStatus();
}

Status ParseConfLine(std::string_view line, CopiesConf* c) {
  const size_t eq = line.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgumentError("expected key = value");
  }
  const std::string_view key = Trim(line.substr(0, eq));
  const std::string_view value = Trim(line.substr(eq + 1));
  if (key == "column_copies") {
    if (value != "auto" && value != "off") {
      return InvalidArgumentError("column_copies is auto or off");
    }
    c->auto_build = value == "auto";
    return OkStatus();
  }
  if (key == "column_copies_budget") {
    return ParseBudget(value, c);
  }
  return InvalidArgumentError("unknown key '" + std::string(key) + "'");
}

// The copy's last-scanned time in nanoseconds (its mtime); 0 when it cannot be read.
int64_t MtimeNs(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return 0;
  }
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

uint64_t ShardBytes(const Manifest& m) {
  uint64_t n = 0;
  for (const RunEntry& r : m.runs) {
    n += r.shard_bytes;
  }
  return n;
}

// Drops copies, least recently scanned first (then oldest id), until they fit the budget.
void Evict(const std::string& dir, uint64_t budget, Manifest* m, CopiesChange* change) {
  uint64_t total = 0;
  std::vector<std::pair<int64_t, uint32_t>> order;
  for (const CopyEntry& c : m->copies) {
    total += c.bytes;
    order.emplace_back(MtimeNs(dir + "/" + c.file_name()), c.id);
  }
  std::sort(order.begin(), order.end());
  for (size_t k = 0; k < order.size() && total > budget; ++k) {
    auto it = std::find_if(m->copies.begin(), m->copies.end(),
                           [&](const CopyEntry& c) { return c.id == order[k].second; });
    total -= it->bytes;
    change->evicted.push_back(*it);
    m->copies.erase(it);
  }
  change->budget = budget;
  change->copy_bytes = total;
}

// Publishes m (its copy table sorted) and removes the files of the entries in gone.
Status PublishAndRemove(const std::string& dir, Manifest& m, std::span<const CopyEntry> gone) {
  std::sort(m.copies.begin(), m.copies.end(), [](const CopyEntry& a, const CopyEntry& b) {
    return a.run != b.run ? a.run < b.run : a.column < b.column;
  });
  uint64_t bytes = 0;
  FERRY_TRY(PublishManifest(dir, m, &bytes));
  // A reader that opened the previous manifest and reaches a removed copy reads the E blocks.
  std::error_code ec;
  for (const CopyEntry& c : gone) {
    std::filesystem::remove(dir + "/" + c.file_name(), ec);
  }
  return OkStatus();
}

}  // namespace

uint64_t CopiesConf::Budget(uint64_t shard_bytes) const {
  if (budget_bytes.has_value()) {
    return *budget_bytes;
  }
  return static_cast<uint64_t>(budget_fraction * static_cast<double>(shard_bytes));
}

Result<CopiesConf> ParseCopiesConf(std::string_view text) {
  CopiesConf c;
  size_t line_no = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_no;
    const size_t hash = line.find('#');
    line = Trim(hash == std::string_view::npos ? line : line.substr(0, hash));
    if (line.empty()) {
      continue;
    }
    FERRY_TRY_CTX(ParseConfLine(line, &c), "line " + std::to_string(line_no));
  }
  return c;
}

Result<CopiesConf> ReadCopiesConf(const std::string& dir) {
  const std::string path = dir + "/" + kStoreConfName;
  std::ifstream in(path);
  if (!in) {
    return CopiesConf{};
  }
  std::stringstream text;
  text << in.rdbuf();
  return FERRY_TRY_CTX(ParseCopiesConf(text.str()), path);
}

Result<CopiesChange> PublishCopies(const std::string& dir,
                                   std::span<const BuiltCopy> built,
                                   std::span<const uint32_t> drop) {
  Manifest m = FERRY_TRY(ReadManifest(dir));
  const CopiesConf conf = FERRY_TRY(ReadCopiesConf(dir));
  CopiesChange change;
  std::vector<CopyEntry> gone;
  std::erase_if(m.copies, [&](const CopyEntry& c) {
    const bool bad = std::find(drop.begin(), drop.end(), c.id) != drop.end();
    if (bad) {
      gone.push_back(c);
      change.evicted.push_back(c);
    }
    return bad;
  });
  for (const BuiltCopy& b : built) {
    const int64_t slot = m.RunSlot(b.entry.run);
    const CopyEntry* have = m.FindCopy(b.entry.run, static_cast<int32_t>(b.entry.column));
    const bool current =
        slot >= 0 && m.runs[static_cast<size_t>(slot)].generation == b.entry.generation;
    if (!current || (have != nullptr && have->id != b.replaces)) {
      change.discarded.push_back(b.entry);
      gone.push_back(b.entry);
      continue;
    }
    if (have != nullptr) {
      gone.push_back(*have);
      m.copies.erase(m.copies.begin() + (have - m.copies.data()));
    }
    m.copies.push_back(b.entry);
    m.next_copy_id = std::max(m.next_copy_id, b.entry.id + 1);
    change.added.push_back(b.entry);
  }
  Evict(dir, conf.Budget(ShardBytes(m)), &m, &change);
  gone.insert(gone.end(), change.evicted.begin(), change.evicted.end());
  FERRY_TRY(PublishAndRemove(dir, m, gone));
  return change;
}

Result<CopiesChange> DropCopies(const std::string& dir, std::span<const int32_t> columns) {
  Fd lock = FERRY_TRY(LockStore(dir));
  Manifest m = FERRY_TRY(ReadManifest(dir));
  const CopiesConf conf = FERRY_TRY(ReadCopiesConf(dir));
  CopiesChange change;
  std::vector<CopyEntry> gone;
  std::erase_if(m.copies, [&](const CopyEntry& c) {
    const bool drop =
        std::find(columns.begin(), columns.end(), static_cast<int32_t>(c.column)) != columns.end();
    if (drop) {
      gone.push_back(c);
    }
    return drop;
  });
  change.evicted = gone;
  change.budget = conf.Budget(ShardBytes(m));
  for (const CopyEntry& c : m.copies) {
    change.copy_bytes += c.bytes;
  }
  FERRY_TRY(PublishAndRemove(dir, m, gone));
  return change;
}

std::vector<CopyInfo> ListCopies(const std::string& dir, const Manifest& m, bool local) {
  std::vector<CopyInfo> out;
  for (const CopyEntry& c : m.copies) {
    CopyInfo info{c, m.schema.columns[c.column].name, 0};
    if (local) {
      info.last_scanned = MtimeNs(dir + "/" + c.file_name()) / 1000000000;
    }
    out.push_back(std::move(info));
  }
  return out;
}

void TouchCopy(const std::string& path) {
  // Best effort by design: a store on a read-only file system is scanned all the same.
  (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

}  // namespace ferry::store
