#include <fcntl.h>

#include <gtest/gtest.h>

#include "base/aligned_buffer.h"
#include "base/byte_swap.h"
#include "base/fd.h"
#include "base/hash.h"
#include "base/mapped_file.h"
#include "base/result.h"
#include "base/strings.h"
#include "testing/testing.h"

namespace ferry {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) {
    return InvalidArgumentError("odd value " + std::to_string(v));
  }
  return v / 2;
}

Result<int> Quarter(int v) {
  int h = FERRY_TRY_CTX(Half(v), "first halving");
  int q = FERRY_TRY_CTX(Half(h), "second halving");
  return q;
}

TEST(Result, ValueAndErrorPropagateWithContext) {
  auto ok = Quarter(8);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 2);

  auto bad = Quarter(6);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().ToString(), "second halving: odd value 3");
}

TEST(Result, StatusAndErrnoText) {
  Status s = IoError("read failed", ENOENT);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().ToString().find("No such file"), std::string::npos);
  EXPECT_TRUE(OkStatus().has_value());
}

TEST(Result, ContextChainOrderIsOutermostFirst) {
  Error e = CorruptionError("bad checksum");
  e.AddContext("basket 3");
  e.AddContext("branch Jet_pt");
  e.AddContext("file a.root");
  EXPECT_EQ(e.ToString(), "file a.root > branch Jet_pt > basket 3: bad checksum");
}

TEST(Fd, OpenMissingFileIsNotFound) {
  auto r = Fd::Open("/nonexistent/ferry/file", O_RDONLY);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
}

TEST(Fd, PreadPastEndIsShortRead) {
  testing::TempDir dir;
  testing::WriteWholeFile(dir.File("f"), {1, 2, 3, 4});
  Fd fd = *Fd::Open(dir.File("f"), O_RDONLY);
  uint8_t buf[8];
  ASSERT_TRUE(PreadFull(fd.get(), buf, 4, 0).has_value());
  EXPECT_EQ(buf[3], 4);
  auto s = PreadFull(fd.get(), buf, 8, 0);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kShortRead);
}

TEST(MappedFile, MapsContentsAndEmptyFiles) {
  testing::TempDir dir;
  auto bytes = testing::PseudoRandomBytes(10000, 7);
  testing::WriteWholeFile(dir.File("f"), bytes);
  auto m = MappedFile::Map(dir.File("f"));
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  ASSERT_EQ(m->size(), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), m->data().begin()));
  testing::WriteWholeFile(dir.File("e"), {});
  auto e = MappedFile::Map(dir.File("e"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->size(), 0u);
}

TEST(AlignedBuffer, IsAligned) {
  AlignedBuffer b(10000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 4096, 0u);
  EXPECT_EQ(b.size(), 10000u);
  AlignedBuffer moved = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(moved.size(), 10000u);
}

TEST(Hash, KnownVectors) {
  // XXH64 of the empty input with seed 0 (reference value from the xxHash specification).
  EXPECT_EQ(hash::Xxh64("", 0, 0), 0xEF46DB3751D8E999ull);
  hash::Xxh3Stream s;
  s.Update("hello ", 6);
  s.Update("world", 5);
  EXPECT_EQ(s.Digest(), hash::Xxh3("hello world", 11));
}

// Xxh3 takes xxHash's AVX2 kernels for long inputs where the CPU has them; the streaming
// digest always runs the shared library's. Both must agree at every length class.
TEST(Hash, Xxh3EqualsTheLibraryAtEveryLength) {
  auto data = testing::PseudoRandomBytes(5u << 20, 9);
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 1100; ++n) {
    sizes.push_back(n);
  }
  for (size_t n :
       {size_t{4095}, size_t{4096}, size_t{65537}, size_t{1} << 20, size_t{4} << 20, data.size()}) {
    sizes.push_back(n);
  }
  for (size_t n : sizes) {
    hash::Xxh3Stream s;
    s.Update(data.data() + 3, std::min(n, data.size() - 3));
    ASSERT_EQ(hash::Xxh3(data.data() + 3, std::min(n, data.size() - 3)), s.Digest()) << n;
  }
}

TEST(ByteSwap, EveryWidthAndTwiceIsIdentity) {
  auto in = testing::PseudoRandomBytes(8 * 37, 4);
  for (size_t width : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    ByteVector once;
    AppendByteSwapped(in.data(), in.size() / width, width, &once);
    ASSERT_EQ(once.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      size_t v = i / width;
      size_t b = i % width;
      ASSERT_EQ(once[i], in[v * width + (width - 1 - b)]) << "width " << width << " byte " << i;
    }
    ByteVector twice;
    AppendByteSwapped(once.data(), once.size() / width, width, &twice);
    EXPECT_TRUE(std::equal(twice.begin(), twice.end(), in.begin()));
  }
  ByteVector none;
  AppendByteSwapped(nullptr, 0, 4, &none);
  EXPECT_TRUE(none.empty());
}

TEST(ByteSwap, EveryLengthAndAlignmentMatchesTheScalarDefinition) {
  // Covers the vector loops (64 and 32 bytes at a time) and every tail length, from unaligned
  // sources and destinations.
  auto in = testing::PseudoRandomBytes(1024, 9);
  for (size_t width : {size_t{2}, size_t{4}, size_t{8}}) {
    for (size_t count = 0; count <= 80; ++count) {
      for (size_t shift : {size_t{0}, size_t{1}, size_t{3}}) {
        std::vector<uint8_t> out(count * width + 8, 0xAA);
        SwapCopy(out.data() + shift, in.data() + shift, count, width);
        for (size_t i = 0; i < count * width; ++i) {
          const size_t v = i / width;
          const size_t b = i % width;
          ASSERT_EQ(out[shift + i], in[shift + v * width + (width - 1 - b)])
              << "width " << width << " count " << count << " shift " << shift;
        }
        EXPECT_EQ(out[shift + count * width], 0xAA) << "wrote past the end";
      }
    }
  }
}

TEST(ByteVector, GrowsKeepingContentsCopiesAndMoves) {
  ByteVector v;
  EXPECT_TRUE(v.empty());
  for (int i = 0; i < 100000; ++i) {
    v.push_back(static_cast<uint8_t>(i * 7));
  }
  ASSERT_EQ(v.size(), 100000u);
  EXPECT_GE(v.capacity(), v.size());
  for (int i = 0; i < 100000; ++i) {
    ASSERT_EQ(v[static_cast<size_t>(i)], static_cast<uint8_t>(i * 7));
  }
  const uint8_t tail[] = {1, 2, 3};
  v.insert(v.end(), tail, tail + 3);
  EXPECT_EQ(v.size(), 100003u);
  EXPECT_EQ(v[v.size() - 1], 3);
  const uint8_t head[] = {9, 8};
  v.insert(v.begin(), head, head + 2);
  EXPECT_EQ(v[0], 9);
  EXPECT_EQ(v[1], 8);
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 7);
  ByteVector copy = v;
  EXPECT_TRUE(copy == v);
  ByteVector moved = std::move(copy);
  EXPECT_TRUE(moved == v);
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  const size_t cap = v.capacity();
  v.clear();
  EXPECT_EQ(v.capacity(), cap);  // clear keeps the buffer for reuse
  v.resize(10);
  EXPECT_EQ(v.capacity(), cap);  // and so does growing within it
  EXPECT_EQ(v[0], 9);            // resize leaves the old bytes in place
}

TEST(Strings, NoCase) {
  EXPECT_TRUE(EqualsNoCase("GenPart", "genpart"));
  EXPECT_FALSE(EqualsNoCase("GenPart", "genparts"));
  EXPECT_TRUE(EndsWithNoCase("/data/a.ROOT", ".root"));
  EXPECT_FALSE(EndsWithNoCase("/data/a.roo", ".root"));
  EXPECT_FALSE(EndsWithNoCase("oot", ".root"));
}

TEST(Strings, ParseDurationSeconds) {
  EXPECT_EQ(*ParseDurationSeconds("30d"), 30 * 86400);
  EXPECT_EQ(*ParseDurationSeconds("12h"), 12 * 3600);
  EXPECT_EQ(*ParseDurationSeconds("15m"), 900);
  EXPECT_EQ(*ParseDurationSeconds("60s"), 60);
  EXPECT_EQ(*ParseDurationSeconds("45"), 45);
  for (const char* bad : {"", "d", "0d", "-3h", "3w", "1.5h", "99999999999d"}) {
    EXPECT_FALSE(ParseDurationSeconds(bad).has_value()) << bad;
  }
}

TEST(Strings, ParseSize) {
  EXPECT_FALSE(ParseSize("28888888888888888888888888G").has_value());  // past 2^64 (fuzzed)
  EXPECT_FALSE(ParseSize("nan").has_value());
  EXPECT_FALSE(ParseSize("inf").has_value());
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("64K"), 65536u);
  EXPECT_EQ(*ParseSize("16M"), 16u << 20);
  EXPECT_EQ(*ParseSize("100G"), 100ull << 30);
  EXPECT_EQ(*ParseSize("1.5G"), 3ull << 29);
  EXPECT_EQ(*ParseSize("2GiB"), 2ull << 30);
  EXPECT_FALSE(ParseSize("12Q").has_value());
  EXPECT_FALSE(ParseSize("").has_value());
  EXPECT_FALSE(ParseSize("-5").has_value());
}

TEST(Strings, HumanBytesAndSplit) {
  EXPECT_EQ(HumanBytes(17), "17 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  auto parts = Split("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(*ParseInt("-12"), -12);
  EXPECT_FALSE(ParseInt("12x").has_value());
}

}  // namespace
}  // namespace ferry
