// Truncated and bit-flipped copies of every real file: the reader reports an error or reads
// something, and never crashes (this test also runs under ASan+UBSan).
#include <gtest/gtest.h>

#include "io/local_source.h"
#include "rootio/root_file.h"
#include "rootio/verify.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

// Opens and reads everything; returns the error, if any.
Status OpenAndReadAll(std::vector<uint8_t> bytes) {
  io::MemorySource src(std::move(bytes), "corrupt.root");
  auto f = RootFile::Open(src);
  if (!f.has_value()) {
    return std::move(f).error();
  }
  auto s = ReadAllTrees(**f, 64);
  if (!s.has_value()) {
    return std::move(s).error();
  }
  return OkStatus();
}

bool IsInputError(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kCorruption:
    case ErrorCode::kShortRead:
    case ErrorCode::kUnsupported:
    case ErrorCode::kNotFound:
    case ErrorCode::kInvalidArgument:
      return true;
    default:
      return false;
  }
}

TEST(CorruptInput, TruncatedFilesGiveErrors) {
  FERRY_REQUIRE_ROOT_DATA();
  for (const std::string& path : testing::AllRootDataFiles()) {
    SCOPED_TRACE(path);
    auto bytes = testing::ReadWholeFile(path);
    // The end of the last byte a full read needs: every key and every basket record.
    auto f = RootFile::OpenPath(path);
    ASSERT_TRUE(f.has_value());
    uint64_t needed = 0;
    auto objects = (*f)->ListObjects();
    ASSERT_TRUE(objects.has_value());
    for (const auto& o : *objects) {
      needed = std::max<uint64_t>(needed, o.key.seek_key + static_cast<uint64_t>(o.key.nbytes));
      if (o.key.class_name == "TTree") {
        auto t = (*f)->OpenTree(o.path);
        ASSERT_TRUE(t.has_value());
        for (const Branch& b : (*t)->info().branches) {
          for (const BasketRef& r : b.baskets) {
            needed = std::max<uint64_t>(needed, r.seek + r.bytes);
          }
        }
      }
    }
    for (size_t i = 0; i < 12; ++i) {
      size_t cut = bytes.size() * i / 12;
      std::vector<uint8_t> part(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(cut));
      Status st = OpenAndReadAll(std::move(part));
      if (cut < needed) {
        ASSERT_FALSE(st.has_value()) << "truncated at " << cut << " of " << bytes.size();
        EXPECT_TRUE(IsInputError(st.error())) << st.error().ToString();
        EXPECT_FALSE(st.error().ToString().empty());
      }
    }
  }
}

TEST(CorruptInput, BitFlipsNeverCrash) {
  FERRY_REQUIRE_ROOT_DATA();
  int errors = 0;
  int runs = 0;
  uint64_t seed = 1;
  for (const std::string& path : testing::AllRootDataFiles()) {
    SCOPED_TRACE(path);
    auto bytes = testing::ReadWholeFile(path);
    for (int i = 0; i < 16; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      // Half the flips land in the first 4 KiB (header, directory), half anywhere.
      size_t span = i % 2 == 0 ? std::min<size_t>(bytes.size(), 4096) : bytes.size();
      size_t pos = static_cast<size_t>((seed >> 33) % span);
      auto copy = bytes;
      copy[pos] ^= static_cast<uint8_t>(1u << ((seed >> 20) % 8));
      Status st = OpenAndReadAll(std::move(copy));
      ++runs;
      if (!st.has_value()) {
        ++errors;
        EXPECT_TRUE(IsInputError(st.error())) << st.error().ToString();
      }
    }
  }
  // A flip in compressed data or structure is usually caught; values may change silently.
  EXPECT_GT(errors, 0);
  EXPECT_GT(runs, errors);
}

TEST(CorruptInput, NotARootFile) {
  Status st = OpenAndReadAll({'n', 'o', 't', ' ', 'r', 'o', 'o', 't'});
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().ToString().find("not a ROOT file"), std::string::npos);
  EXPECT_FALSE(OpenAndReadAll({}).has_value());
}

}  // namespace
}  // namespace ferry::rootio
