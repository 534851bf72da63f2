#include "cache/page_seal.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

KeyBytes KeyOf(uint8_t fill) {
  KeyBytes k{};
  k.fill(fill);
  return k;
}

TEST(PageSealTest, RoundTripAndBinding) {
  const auto plain = testing::PseudoRandomBytes(4096, 3);
  const PageSealer sealer(KeyOf(1), 0x1234, 77);
  std::vector<uint8_t> sealed(plain.size());
  const Seal seal = sealer.SealBytes(5, 0, plain, sealed.data());
  EXPECT_NE(sealed, plain);
  // Deterministic: the same bytes of the same place seal alike (concurrent writers agree).
  std::vector<uint8_t> again(plain.size());
  EXPECT_EQ(sealer.SealBytes(5, 0, plain, again.data()), seal);
  EXPECT_EQ(again, sealed);

  auto open = [&](const PageSealer& s, uint64_t page, uint32_t lo, const Seal& with) {
    std::vector<uint8_t> b = sealed;
    const bool ok = s.OpenBytes(page, lo, b, with);
    EXPECT_TRUE(ok ? b == plain : b == std::vector<uint8_t>(b.size(), 0));
    return ok;
  };
  EXPECT_TRUE(open(sealer, 5, 0, seal));
  EXPECT_FALSE(open(sealer, 6, 0, seal));                            // another page
  EXPECT_FALSE(open(sealer, 5, 1, seal));                            // another interval
  EXPECT_FALSE(open(PageSealer(KeyOf(1), 0x1235, 77), 5, 0, seal));  // another entry
  EXPECT_FALSE(open(PageSealer(KeyOf(1), 0x1234, 78), 5, 0, seal));  // another epoch
  EXPECT_FALSE(open(PageSealer(KeyOf(2), 0x1234, 77), 5, 0, seal));  // another data key
  // An older seal of the same place (other bytes were there before) does not open these.
  auto older = plain;
  older[100] ^= 1;
  std::vector<uint8_t> older_sealed(plain.size());
  const Seal older_seal = sealer.SealBytes(5, 0, older, older_sealed.data());
  EXPECT_NE(older_seal.nonce, seal.nonce);
  EXPECT_FALSE(open(sealer, 5, 0, older_seal));
  // Every flipped bit is detected.
  for (size_t bit = 0; bit < plain.size() * 8; bit += 97) {
    std::vector<uint8_t> b = sealed;
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    ASSERT_FALSE(sealer.OpenBytes(5, 0, b, seal)) << bit;
  }
}

// A thread keeps a few keyed contexts (page_seal.h): pages of more entries than it keeps,
// opened in turn, and a sealer made where a destroyed one was (same address, another key), are
// each opened under their own key, never under a context keyed for another sealer.
TEST(PageSealTest, ManyEntriesInTurnOnOneThread) {
  const auto plain = testing::PseudoRandomBytes(4096, 4);
  constexpr size_t kEntries = 11;  // more than the contexts a thread keeps
  std::vector<std::unique_ptr<PageSealer>> sealers;
  std::vector<std::vector<uint8_t>> sealed(kEntries, std::vector<uint8_t>(plain.size()));
  std::vector<Seal> seals(kEntries);
  for (size_t e = 0; e < kEntries; ++e) {
    sealers.push_back(std::make_unique<PageSealer>(KeyOf(static_cast<uint8_t>(20 + e)), e, 1));
    seals[e] = sealers[e]->SealBytes(3, 0, plain, sealed[e].data());
  }
  for (int round = 0; round < 3; ++round) {
    for (size_t e = 0; e < kEntries; ++e) {
      std::vector<uint8_t> b = sealed[e];
      ASSERT_TRUE(sealers[e]->OpenBytes(3, 0, b, seals[e])) << round << " " << e;
      EXPECT_EQ(b, plain);
    }
  }
  for (size_t e = 0; e < kEntries; ++e) {
    // Replaced in place: the new sealer may get the old one's address.
    sealers[e].reset();
    sealers[e] = std::make_unique<PageSealer>(KeyOf(static_cast<uint8_t>(60 + e)), e, 1);
    std::vector<uint8_t> b = sealed[e];
    EXPECT_FALSE(sealers[e]->OpenBytes(3, 0, b, seals[e])) << e;
  }
}

// Ciphertext read into several buffers (a sealed replica extent straight into a caller's
// vector-read buffers) opens as one, pieces cut inside a 16-byte block included; a flipped bit
// in any piece fails it, and every piece is zeroed.
TEST(PageSealTest, GcmOpensAcrossPieces) {
  const auto plain = testing::PseudoRandomBytes(10000, 4);
  const GcmKey key(KeyOf(5));
  GcmKey::Nonce nonce{};
  nonce[0] = 9;
  const std::vector<uint8_t> aad = {1, 2, 3};
  std::vector<uint8_t> sealed(plain.size());
  const GcmKey::Tag tag = key.Seal(nonce, aad, plain, sealed.data());
  for (size_t flip : {size_t{0}, size_t{7}, size_t{4100}, plain.size() - 1, plain.size()}) {
    std::vector<uint8_t> b = sealed;
    if (flip < b.size()) {
      b[flip] ^= 0x04;
    }
    const std::span<uint8_t> all(b);
    const std::span<uint8_t> pieces[] = {all.first(7), all.subspan(7, 4096), all.subspan(4103, 1),
                                         all.subspan(4104)};
    const bool ok = key.Open(nonce, aad, pieces, tag);
    EXPECT_EQ(ok, flip == plain.size()) << flip;
    EXPECT_TRUE(ok ? b == plain : b == std::vector<uint8_t>(b.size(), 0)) << flip;
  }
}

TEST(PageSealTest, WrapUnwrapAndKeyIds) {
  const MasterKey a = MasterKey::FromBytes(KeyOf(9));
  const MasterKey b = MasterKey::FromBytes(KeyOf(10));
  EXPECT_NE(a.id(), b.id());
  const KeyBytes data_key = RandomDataKey();
  const WrappedKey w = a.Wrap(data_key);
  auto back = a.Unwrap(w);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, data_key);
  auto wrong = b.Unwrap(w);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), ErrorCode::kCorruption);
}

TEST(PageSealTest, KeyFileMustBePrivateAndExact) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/key";
  const KeyBytes bytes = KeyOf(42);
  {
    auto fd = Fd::Open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_TRUE(fd);
    ASSERT_TRUE(PwriteFull(fd->get(), bytes.data(), bytes.size(), 0));
  }
  ::chmod(path.c_str(), 0600);
  auto k = MasterKey::Load(path);
  ASSERT_TRUE(k) << k.error().ToString();
  EXPECT_EQ(k->id(), MasterKey::FromBytes(bytes).id());
  ::chmod(path.c_str(), 0640);
  auto open_to_group = MasterKey::Load(path);
  ASSERT_FALSE(open_to_group);
  EXPECT_NE(open_to_group.error().message().find("mode 0600"), std::string::npos);
  ::chmod(path.c_str(), 0600);
  ASSERT_EQ(::truncate(path.c_str(), 31), 0);
  EXPECT_FALSE(MasterKey::Load(path));
  EXPECT_FALSE(MasterKey::Load(dir.path() + "/missing"));
}

}  // namespace
}  // namespace ferry::cache
