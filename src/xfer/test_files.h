// Test helpers for the xfer tests: fast whole-file reads and pseudo-random contents (the
// shared helpers go byte by byte, which is slow for the tens of MiB these tests move).
#pragma once

#include <sys/mount.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry::xfer::testing {

inline std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    throw std::runtime_error("cannot read " + path);
  }
  std::vector<uint8_t> out(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  return out;
}

inline void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

// Deterministic bytes, 8 at a time (splitmix64).
inline std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed;
  for (size_t at = 0; at < n; at += 8) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(out.data() + at, &z, std::min<size_t>(8, n - at));
  }
  return out;
}

// A small tmpfs as the receiver's disk (root only); unmounted even when the test fails.
class TmpfsMount {
 public:
  TmpfsMount(const std::string& dir, const char* size) : dir_(dir) {
    std::filesystem::create_directories(dir);
    std::string opts = std::string("size=") + size;
    ok_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) == 0;
  }
  ~TmpfsMount() {
    if (ok_) {
      ::umount2(dir_.c_str(), MNT_DETACH);
    }
  }
  bool ok() const { return ok_; }

 private:
  std::string dir_;
  bool ok_ = false;
};

}  // namespace ferry::xfer::testing
