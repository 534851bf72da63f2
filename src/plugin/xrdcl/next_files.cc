#include "plugin/xrdcl/next_files.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <XrdCl/XrdClFileSystem.hh>

#include "plugin/xrdcl/context.h"
#include "readahead/file_ahead.h"

namespace ferry::plugin {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A URL cut at its file name: "root://h//d/f.root?cgi" -> dir "root://h//d", name "f.root",
// query "?cgi" (kept for the next file: a token in it covers the directory).
struct UrlParts {
  std::string dir;
  std::string name;
  std::string query;
};

// Read-ahead warms ROOT files only.
bool IsRootName(const std::string& name) {
  return name.size() > 5 && name.ends_with(".root");
}

std::optional<UrlParts> Split(const std::string& url) {
  const size_t q = url.find('?');
  const std::string base = url.substr(0, q);
  const size_t slash = base.rfind('/');
  const size_t scheme = base.find("://");
  if (slash == std::string::npos || scheme == std::string::npos || slash <= scheme + 3) {
    return std::nullopt;
  }
  UrlParts p{base.substr(0, slash), base.substr(slash + 1),
             q == std::string::npos ? "" : url.substr(q)};
  if (!IsRootName(p.name)) {
    return std::nullopt;
  }
  return p;
}

// Whether a warm handle's read-ahead is still on its way: its trees not loaded yet, or its first
// clusters asked for and none landed. A reader that takes such a handle caught up with the
// warming.
bool StillWarming(const cache::CachedFile& file) {
  const readahead::FileAhead* ahead = file.read_ahead();
  if (ahead == nullptr) {
    return false;
  }
  const readahead::FileAhead::Snapshot s = ahead->snapshot();
  return !s.on || (s.landed == 0 && s.queued + s.in_flight > 0);
}

}  // namespace

std::optional<NextFiles::Warm> NextFiles::Take(const std::string& url) {
  std::optional<Warm> warm;
  std::optional<std::string> list_dir;
  {
    MutexLock lock(mu_);
    warm = TakeLocked(url);
    // Inserted only now: a warming this open waited for had to be kept for it (WarmFile drops
    // warm handles of URLs the reader opened).
    opened_.insert(url);
    list_dir = StartListingLocked(url);
  }
  if (list_dir) {
    // Asked for beside the open rather than after it: the answer comes with the open's, so the
    // next files' opens go out one round trip sooner, before the first file's metadata fills
    // the new connection (its slow start would hold their answers back behind it).
    ctx_.pool->Submit([this, url, dir = *list_dir] { FetchListing(url, dir); });
  }
  return warm;
}

std::optional<std::string> NextFiles::StartListingLocked(const std::string& url) {
  auto parts = Split(url);
  if (!parts || !listings_.try_emplace(parts->dir).second) {
    return std::nullopt;
  }
  listing_now_.insert(parts->dir);
  return std::move(parts->dir);
}

std::optional<NextFiles::Warm> NextFiles::TakeLocked(const std::string& url) {
  const auto parts = Split(url);
  auto queued = warming_.find(url);
  const bool was_warming = queued != warming_.end();
  if (was_warming && parts) {
    sequence_.CaughtUp(parts->dir);  // the reader is as fast as the warming: go further ahead
  }
  if (was_warming && !queued->second) {
    warming_.erase(queued);  // still queued: the reader's own open is sooner (WarmFile skips it)
    return std::nullopt;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kJoinMs);
  while (warming_.count(url) != 0) {
    if (!warmed_.WaitUntil(mu_, deadline)) {
      return std::nullopt;  // a stuck warming: the reader opens the file itself
    }
  }
  auto it = kept_.find(url);
  if (it == kept_.end()) {
    return std::nullopt;
  }
  Warm w = std::move(it->second.warm);
  kept_.erase(it);
  if (!was_warming && parts && w.file && StillWarming(*w.file)) {
    sequence_.CaughtUp(parts->dir);
  }
  ctx_.cache->counters().Add(cache::Counter::kNextFilesAdopted);
  return w;
}

void NextFiles::OnOpen(const std::string& url) {
  const auto parts = Split(url);
  if (!parts) {
    return;
  }
  std::vector<Warm> expired;
  std::vector<std::string> warm;
  {
    MutexLock lock(mu_);
    expired = ExpiredLocked(NowMs());
    last_open_[parts->dir] = parts->name;
    // The listing was asked for by Take; while it is on its way, FetchListing predicts for this
    // open when it arrives.
    if (listing_now_.count(parts->dir) == 0) {
      warm = QueueLocked(parts->dir, parts->query,
                         sequence_.OnOpen(parts->dir, parts->name, listings_[parts->dir]));
    }
  }
  Close(std::move(expired));
  Submit(std::move(warm));
}

std::vector<std::string> NextFiles::QueueLocked(const std::string& dir,
                                                const std::string& query,
                                                const std::vector<std::string>& names) {
  std::vector<std::string> warm;
  for (const std::string& name : names) {
    std::string next_url = dir;
    next_url.append("/").append(name).append(query);
    if (kept_.size() + warming_.size() < kMaxWarm && kept_.count(next_url) == 0
        && opened_.count(next_url) == 0 && warming_.try_emplace(next_url, false).second) {
      warm.push_back(std::move(next_url));
    }
  }
  return warm;
}

void NextFiles::Submit(std::vector<std::string> urls) {
  for (std::string& url : urls) {
    ctx_.pool->Submit([this, url = std::move(url)] { WarmFile(url); });
  }
}

void NextFiles::FetchListing(const std::string& url, const std::string& dir) {
  // The directory's path as the server knows it: the URL's path up to its file name.
  const XrdCl::URL parsed(url);
  std::string path = parsed.GetPath();
  path = path.substr(0, path.rfind('/') + 1);
  XrdCl::FileSystem fs(parsed, /*enablePlugIns=*/false);
  XrdCl::DirectoryList* list = nullptr;
  const XrdCl::XRootDStatus st = fs.DirList(path, XrdCl::DirListFlags::None, list);
  std::vector<std::string> names;
  if (st.IsOK() && list != nullptr) {
    for (auto it = list->Begin(); it != list->End(); ++it) {
      // Only the files a sequence can go through: a dataset's first file is then the
      // listing's first name, whatever else its directory holds.
      if (IsRootName((*it)->GetName())) {
        names.push_back((*it)->GetName());
      }
    }
  }
  delete list;  // NOLINT(cppcoreguidelines-owning-memory): XrdCl hands over a raw pointer
  std::sort(names.begin(), names.end());
  std::vector<std::string> warm;
  {
    MutexLock lock(mu_);
    // The open that asked for the listing starts the directory's sequence (and predicts at
    // once when the reader goes on to this directory from one it finished).
    auto last = last_open_.find(dir);
    const auto parts = Split(url);
    if (last != last_open_.end() && parts) {
      warm = QueueLocked(dir, parts->query, sequence_.OnOpen(dir, last->second, names));
    }
    listings_[dir] = std::move(names);
    listing_now_.erase(dir);
  }
  Submit(std::move(warm));
}

void NextFiles::WarmFile(const std::string& url) {
  {
    MutexLock lock(mu_);
    auto w = warming_.find(url);
    if (w == warming_.end()) {
      return;  // the reader's open came first and opens it itself
    }
    w->second = true;
  }
  auto origin = std::make_shared<XrdOrigin>(url, XrdCl::OpenFlags::Read, XrdCl::Access::None, 0,
                                            ctx_.config.channels, ctx_.pool.get(), &ctx_.exiting);
  cache::OpenOptions options;
  options.read_ahead = true;
  options.detect_bulk = true;
  options.bulk_reader = ctx_.copy_tool;
  auto file = ctx_.cache->Open(url, origin, options);
  if (!file) {
    origin->CloseInBackground();
    MutexLock lock(mu_);
    EndWarmingLocked(url);
    return;
  }
  (*file)->WarmUp();
  ctx_.cache->counters().Add(cache::Counter::kNextFilesWarmed);
  std::vector<Warm> unwanted;
  {
    MutexLock lock(mu_);
    EndWarmingLocked(url);
    if (ctx_.exiting || kept_.count(url) != 0 || opened_.count(url) != 0) {
      unwanted.push_back({origin, std::move(*file)});
    } else {
      kept_[url] = {{origin, std::move(*file)}, NowMs()};
    }
  }
  Close(std::move(unwanted));
}

void NextFiles::EndWarmingLocked(const std::string& url) {
  warming_.erase(url);
  warmed_.NotifyAll();  // an open waiting for it finds the handle, or opens the file itself
}

std::vector<NextFiles::Warm> NextFiles::ExpiredLocked(int64_t now_ms) {
  std::vector<Warm> out;
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (now_ms - it->second.since_ms > kKeepMs) {
      if (const auto parts = Split(it->first)) {
        sequence_.Expired(parts->dir, parts->name);  // the reader is slower: less far ahead
      }
      out.push_back(std::move(it->second.warm));
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void NextFiles::Close(std::vector<Warm> warm) {
  for (Warm& w : warm) {
    if (w.file) {
      w.file->Close();
    }
    if (w.origin && w.origin->is_open()) {
      w.origin->CloseInBackground();
    }
  }
}

}  // namespace ferry::plugin
