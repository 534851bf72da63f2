// cache_wan_replay: the sparse, ROOT-like read pattern of bench/cache_wan.sh over XrdCl.
//
// For every file a deterministic pattern is derived from (seed, file index): the file is cut
// into equal slots, and one chunk of MIN..MAX bytes is placed at a random offset in each slot,
// with as many slots as make the chunks add up to FRACTION of the file. The chunks are read in
// file order, CHUNKS per synchronous XrdCl::File::VectorRead, like a TTreeCache reading one
// cluster after another. THREADS workers take files from a shared list. XrdCl plug-ins are
// enabled, so a configured cache (XRD_PLUGINCONFDIR) serves the reads.
//
// usage: cache_wan_replay [options] URL_PREFIX NAME...
//   -t THREADS (4)  -f FRACTION (0.06)  -n CHUNKS (64)  -m MIN (2048)  -M MAX (16384)
//   -s SEED (42)    -V DIR  compare every chunk with DIR/NAME
//   -C              one connection per thread (user name "rK@" in the URL)
// Prints one JSON object on stdout; exit 1 on any error or mismatch.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <XrdCl/XrdClFile.hh>
#include <XrdCl/XrdClXRootDResponses.hh>

namespace {

struct Options {
  int threads = 4;
  double fraction = 0.06;
  size_t per_read = 64;
  uint32_t min_len = 2048;
  uint32_t max_len = 16384;
  uint64_t seed = 42;
  std::string verify_dir;
  bool conn_per_thread = false;
  std::string prefix;
  std::vector<std::string> names;
};

struct Chunk {
  uint64_t offset;
  uint32_t length;
};

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::vector<Chunk> Pattern(uint64_t size, const Options& o, uint64_t file_seed) {
  std::mt19937_64 rng(file_seed);
  const double mean = 0.5 * (o.min_len + o.max_len);
  const uint64_t n =
      std::max<uint64_t>(1, static_cast<uint64_t>(o.fraction * static_cast<double>(size) / mean));
  const uint64_t slot = size / n;
  std::uniform_int_distribution<uint32_t> len_dist(o.min_len, o.max_len);
  std::vector<Chunk> out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const auto len = static_cast<uint32_t>(std::min<uint64_t>(len_dist(rng), slot));
    const uint64_t room = slot - len;
    out.push_back({i * slot + (room != 0 ? rng() % (room + 1) : 0), len});
  }
  return out;
}

std::string UrlFor(const Options& o, const std::string& name, int worker) {
  std::string prefix = o.prefix;
  if (o.conn_per_thread) {
    const size_t p = prefix.find("://");
    if (p != std::string::npos) {
      prefix = prefix.substr(0, p + 3) + "r" + std::to_string(worker) + "@" + prefix.substr(p + 3);
    }
  }
  return prefix + "/" + name;
}

struct Totals {
  std::atomic<uint64_t> vector_reads{0};
  std::atomic<uint64_t> chunks{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> mismatches{0};
  std::atomic<uint64_t> open_us{0};  // summed over files: open + stat
  std::atomic<uint64_t> close_us{0};
  std::mutex mu;
  std::vector<double> latencies_ms;
};

void ReadFile(const Options& o, size_t index, int worker, Totals& t) {
  const std::string& name = o.names[index];
  const std::string url = UrlFor(o, name, worker);
  const auto t_open = Clock::now();
  XrdCl::File file;
  XrdCl::XRootDStatus st = file.Open(url, XrdCl::OpenFlags::Read);
  if (!st.IsOK()) {
    std::fprintf(stderr, "open %s: %s\n", url.c_str(), st.ToString().c_str());
    t.errors++;
    return;
  }
  XrdCl::StatInfo* info = nullptr;
  st = file.Stat(false, info);
  if (!st.IsOK() || info == nullptr) {
    std::fprintf(stderr, "stat %s: %s\n", url.c_str(), st.ToString().c_str());
    t.errors++;
    return;
  }
  const uint64_t size = info->GetSize();
  delete info;
  t.open_us += static_cast<uint64_t>(Seconds(Clock::now() - t_open) * 1e6);
  int local = -1;
  if (!o.verify_dir.empty()) {
    local = ::open((o.verify_dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  }
  const std::vector<Chunk> pattern = Pattern(size, o, o.seed * 1000003ull + index);
  std::vector<char> buf;
  std::vector<char> want;
  std::vector<double> lat;
  for (size_t i = 0; i < pattern.size(); i += o.per_read) {
    const size_t n = std::min(o.per_read, pattern.size() - i);
    size_t need = 0;
    for (size_t k = 0; k < n; ++k) {
      need += pattern[i + k].length;
    }
    buf.resize(need);
    XrdCl::ChunkList chunks;
    size_t pos = 0;
    for (size_t k = 0; k < n; ++k) {
      chunks.emplace_back(pattern[i + k].offset, pattern[i + k].length, buf.data() + pos);
      pos += pattern[i + k].length;
    }
    XrdCl::VectorReadInfo* vinfo = nullptr;
    const auto t0 = Clock::now();
    st = file.VectorRead(chunks, nullptr, vinfo);
    lat.push_back(Seconds(Clock::now() - t0) * 1e3);
    delete vinfo;
    if (!st.IsOK()) {
      std::fprintf(stderr, "vector read %s: %s\n", url.c_str(), st.ToString().c_str());
      t.errors++;
      break;
    }
    t.vector_reads++;
    t.chunks += n;
    t.bytes += need;
    if (local >= 0) {
      for (const auto& c : chunks) {
        want.resize(c.length);
        if (::pread(local, want.data(), c.length, static_cast<off_t>(c.offset))
                != static_cast<ssize_t>(c.length)
            || std::memcmp(want.data(), c.buffer, c.length) != 0) {
          t.mismatches++;
        }
      }
    }
  }
  if (local >= 0) {
    ::close(local);
  }
  const auto t_close = Clock::now();
  st = file.Close();
  t.close_us += static_cast<uint64_t>(Seconds(Clock::now() - t_close) * 1e6);
  if (!st.IsOK()) {
    t.errors++;
  }
  std::lock_guard<std::mutex> lock(t.mu);
  t.latencies_ms.insert(t.latencies_ms.end(), lat.begin(), lat.end());
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

bool ParseArgs(int argc, char** argv, Options& o) {
  int i = 1;
  auto value = [&](const char* flag) -> const char* {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag);
      std::exit(2);
    }
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-t") {
      o.threads = std::atoi(value("-t"));
    } else if (a == "-f") {
      o.fraction = std::atof(value("-f"));
    } else if (a == "-n") {
      o.per_read = static_cast<size_t>(std::atoi(value("-n")));
    } else if (a == "-m") {
      o.min_len = static_cast<uint32_t>(std::atoi(value("-m")));
    } else if (a == "-M") {
      o.max_len = static_cast<uint32_t>(std::atoi(value("-M")));
    } else if (a == "-s") {
      o.seed = std::strtoull(value("-s"), nullptr, 10);
    } else if (a == "-V") {
      o.verify_dir = value("-V");
    } else if (a == "-C") {
      o.conn_per_thread = true;
    } else if (o.prefix.empty()) {
      o.prefix = a;
    } else {
      o.names.push_back(a);
    }
  }
  return !o.prefix.empty() && !o.names.empty() && o.threads > 0 && o.per_read > 0 && o.min_len > 0
         && o.max_len >= o.min_len;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: cache_wan_replay [-t N] [-f F] [-n N] [-m MIN] [-M MAX] [-s SEED] "
                 "[-V DIR] [-C] URL_PREFIX NAME...\n");
    return 2;
  }
  Totals t;
  std::atomic<size_t> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < o.threads; ++w) {
    workers.emplace_back([&, w] {
      for (size_t i = next++; i < o.names.size(); i = next++) {
        ReadFile(o, i, w, t);
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  const double wall = Seconds(Clock::now() - start);
  struct rusage ru = {};
  ::getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
                     + static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  std::printf(
      "{\"wall_s\":%.4f,\"vector_reads\":%llu,\"chunks\":%llu,\"bytes\":%llu,"
      "\"p50_ms\":%.2f,\"p90_ms\":%.2f,\"errors\":%llu,\"mismatches\":%llu,"
      "\"verified\":%s,\"open_ms\":%.1f,\"close_ms\":%.1f,\"cpu_s\":%.4f}\n",
      wall, static_cast<unsigned long long>(t.vector_reads.load()),
      static_cast<unsigned long long>(t.chunks.load()),
      static_cast<unsigned long long>(t.bytes.load()), Percentile(t.latencies_ms, 0.5),
      Percentile(t.latencies_ms, 0.9), static_cast<unsigned long long>(t.errors.load()),
      static_cast<unsigned long long>(t.mismatches.load()), o.verify_dir.empty() ? "false" : "true",
      static_cast<double>(t.open_us.load()) / 1e3, static_cast<double>(t.close_us.load()) / 1e3,
      cpu);
  std::fflush(stdout);
  return t.errors == 0 && t.mismatches == 0 ? 0 : 1;
}
