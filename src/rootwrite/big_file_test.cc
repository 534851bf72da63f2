// A file over 4 GiB written and read back (label long: `make test-long`): the big header, wide
// keys for records past 2,000,000,000 bytes, basket seeks past 2^32, the TTree record itself
// past 4 GiB, and every value read back.
#include <sys/statvfs.h>

#include <cstring>

#include <gtest/gtest.h>

#include "rootio/key.h"
#include "rootio/root_file.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/tree_writer.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

using rootio::LeafType;

constexpr int kDoubles = 4;
constexpr int64_t kEntries = 96'000'000;  // about 4.4 GB uncompressed and stored raw
constexpr int64_t kBatch = 1'000'000;

double X(int b, int64_t e) {
  return static_cast<double>(e) * (b + 1) + 0.25 * b;
}
uint32_t Count(int64_t e) {
  return static_cast<uint32_t>(e % 4);
}
float Y(int64_t e, uint32_t j) {
  return static_cast<float>(e % 100000) + static_cast<float>(j) * 0.5f;
}

TEST(BigFile, Over4GiBWrittenAndReadBack) {
  testing::TempDir dir;
  struct statvfs vfs {};
  if (::statvfs(dir.path().c_str(), &vfs) == 0
      && static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < (6ull << 30)) {
    GTEST_SKIP() << "less than 6 GiB free in " << dir.path();
  }
  const std::string path = dir.File("big.root");
  {
    FileOptions fo;
    fo.compression = {codec::Algorithm::kNone, 0};
    auto file = FileWriter::Create(path, fo);
    ASSERT_TRUE(file.has_value()) << file.error().ToString();
    TreeWriter tw(**file, TreeOptions{});
    for (int b = 0; b < kDoubles; ++b) {
      ASSERT_TRUE(tw.AddBranch({"x" + std::to_string(b), LeafType::kFloat64}).has_value());
    }
    ASSERT_TRUE(tw.AddBranch({"n", LeafType::kUInt32}).has_value());
    ASSERT_TRUE(tw.AddBranch({"y", LeafType::kFloat32, 1, "n"}).has_value());
    std::vector<rootio::Column> cols(kDoubles + 2);
    for (int64_t a = 0; a < kEntries; a += kBatch) {
      const int64_t n = std::min(kBatch, kEntries - a);
      for (int b = 0; b < kDoubles; ++b) {
        rootio::Column& c = cols[static_cast<size_t>(b)];
        c = rootio::Column{};
        c.type = LeafType::kFloat64;
        c.num_entries = n;
        c.bytes.resize(static_cast<size_t>(n) * 8);
        for (int64_t e = 0; e < n; ++e) {
          double v = X(b, a + e);
          std::memcpy(c.bytes.data() + 8 * e, &v, 8);
        }
      }
      rootio::Column& cn = cols[kDoubles];
      rootio::Column& cy = cols[kDoubles + 1];
      cn = rootio::Column{};
      cn.type = LeafType::kUInt32;
      cn.num_entries = n;
      cy = rootio::Column{};
      cy.type = LeafType::kFloat32;
      cy.num_entries = n;
      cy.jagged = true;
      cy.offsets.push_back(0);
      for (int64_t e = 0; e < n; ++e) {
        uint32_t k = Count(a + e);
        cn.bytes.insert(cn.bytes.end(), reinterpret_cast<uint8_t*>(&k),
                        reinterpret_cast<uint8_t*>(&k) + 4);
        for (uint32_t j = 0; j < k; ++j) {
          float y = Y(a + e, j);
          cy.bytes.insert(cy.bytes.end(), reinterpret_cast<uint8_t*>(&y),
                          reinterpret_cast<uint8_t*>(&y) + 4);
        }
        cy.offsets.push_back(cy.offsets.back() + k);
      }
      std::vector<const rootio::Column*> ptrs;
      for (const auto& c : cols) {
        ptrs.push_back(&c);
      }
      Status st = tw.WriteColumns(ptrs);
      ASSERT_TRUE(st.has_value()) << st.error().ToString();
    }
    ASSERT_TRUE(tw.Close().has_value());
    Status st = (*file)->Close();
    ASSERT_TRUE(st.has_value()) << st.error().ToString();
  }

  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_TRUE((*f)->header().big);
  EXPECT_EQ((*f)->header().units, 8);
  EXPECT_GT((*f)->header().end, 4ull << 30);
  EXPECT_GT((*f)->header().seek_info, 4ull << 30);
  auto key = (*f)->FindKey("Events");
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->version, 1004);
  EXPECT_GT(key->seek_key, 4ull << 30);
  auto t = (*f)->OpenTree("Events");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  ASSERT_EQ((*t)->entries(), kEntries);
  EXPECT_GT((*t)->info().branches[0].baskets.back().seek, 4ull << 30);
  constexpr int64_t kRange = 4'000'000;
  for (int64_t a = 0; a < kEntries; a += kRange) {
    rootio::EntryRange r{a, std::min(kEntries, a + kRange)};
    for (int b = 0; b < kDoubles; ++b) {
      auto c = (*t)->ReadLeaf("x" + std::to_string(b), r);
      ASSERT_TRUE(c.has_value()) << c.error().ToString();
      auto v = c->values<double>();
      for (int64_t e = r.begin; e < r.end; ++e) {
        ASSERT_EQ(v[static_cast<size_t>(e - a)], X(b, e)) << "x" << b << " entry " << e;
      }
    }
    auto y = (*t)->ReadLeaf("y", r);
    ASSERT_TRUE(y.has_value()) << y.error().ToString();
    auto yv = y->values<float>();
    for (int64_t e = r.begin; e < r.end; ++e) {
      auto [lo, hi] = y->EntryValues(e - a);
      ASSERT_EQ(hi - lo, Count(e)) << e;
      for (uint32_t j = 0; j < Count(e); ++j) {
        ASSERT_EQ(yv[lo + j], Y(e, j)) << e;
      }
    }
  }
}

}  // namespace
}  // namespace ferry::rootwrite
