// Test helpers shared by every ferry test binary: a scratch directory per test and the
// location of the real ROOT files (data/root in the repository; $FERRY_ROOT_DATA_DIR) and of the
// real RNTuple files (data/rntuple; $FERRY_RNTUPLE_DATA_DIR).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::testing {

// Directory of the real ROOT files, or "" when it is absent (tests then GTEST_SKIP, which ctest
// reports as skipped). Taken from $FERRY_ROOT_DATA_DIR, set by CMake.
std::string RootDataDir();
// Path of one real file; "" when the data folder is absent.
std::string RootDataFile(const std::string& name);
// Every *.root file in the data folder, sorted.
std::vector<std::string> AllRootDataFiles();

// The same for the real RNTuple files: $FERRY_RNTUPLE_DATA_DIR, else the folder CMake's
// FERRY_RNTUPLE_DATA_DIR named at build time (data/rntuple).
std::string RntupleDataDir();
std::string RntupleDataFile(const std::string& name);
std::vector<std::string> AllRntupleDataFiles();

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::vector<uint8_t> ReadWholeFile(const std::string& path);
void WriteWholeFile(const std::string& path, const std::vector<uint8_t>& bytes);
// Deterministic pseudo-random bytes (xorshift) for tests.
std::vector<uint8_t> PseudoRandomBytes(size_t n, uint64_t seed);

}  // namespace ferry::testing

#define FERRY_REQUIRE_ROOT_DATA()                  \
  do {                                             \
    if (::ferry::testing::RootDataDir().empty()) { \
      GTEST_SKIP() << "data/root not present";     \
    }                                              \
  } while (0)
