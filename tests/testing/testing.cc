#include "testing/testing.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ferry::testing {

namespace {

std::string DataDir(const char* env_name, const char* fallback) {
  const char* env = std::getenv(env_name);  // NOLINT(concurrency-mt-unsafe): read-only
  std::string dir = env != nullptr ? env : fallback;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return "";
  }
  return dir;
}

std::vector<std::string> RootFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  if (dir.empty()) {
    return out;
  }
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".root") {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string RootDataDir() {
  return DataDir("FERRY_ROOT_DATA_DIR", "data/root");
}

std::string RootDataFile(const std::string& name) {
  std::string dir = RootDataDir();
  return dir.empty() ? "" : dir + "/" + name;
}

std::vector<std::string> AllRootDataFiles() {
  return RootFilesIn(RootDataDir());
}

std::string RntupleDataDir() {
  return DataDir("FERRY_RNTUPLE_DATA_DIR", FERRY_RNTUPLE_DATA_DIR_DEFAULT);
}

std::string RntupleDataFile(const std::string& name) {
  std::string dir = RntupleDataDir();
  return dir.empty() ? "" : dir + "/" + name;
}

std::vector<std::string> AllRntupleDataFiles() {
  return RootFilesIn(RntupleDataDir());
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/ferry-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteWholeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

std::vector<uint8_t> PseudoRandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

}  // namespace ferry::testing
