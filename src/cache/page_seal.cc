#include "cache/page_seal.h"

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/endian.h"
#include "base/fd.h"
#include "cache/key_ring.h"

namespace ferry::cache {
namespace {

constexpr char kKeyIdLabel[] = "ferry cache master key id";  // the trailing NUL is hashed too
constexpr char kNonceKeyLabel[] = "ferry cache nonce key";
constexpr size_t kAadBytes = 32;
constexpr size_t kNonceBytes = 12;

// The associated data of a sealed page or fragment (docs/format/page-store.md): byte offsets.
namespace aad {
constexpr size_t kEntryKey = 0;  // u64
constexpr size_t kEpoch = 8;     // u64
constexpr size_t kPage = 16;     // u64
constexpr size_t kLo = 24;       // u32
constexpr size_t kHi = 28;       // u32
}  // namespace aad

// SHA-256(label including its NUL || key).
std::array<uint8_t, 32> LabelledHash(const char* label, size_t label_bytes, const KeyBytes& key) {
  std::array<uint8_t, 32> out{};
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  unsigned n = 0;
  if (md == nullptr || EVP_DigestInit_ex(md, EVP_sha256(), nullptr) != 1
      || EVP_DigestUpdate(md, label, label_bytes) != 1
      || EVP_DigestUpdate(md, key.data(), key.size()) != 1
      || EVP_DigestFinal_ex(md, out.data(), &n) != 1) {
    std::abort();  // libcrypto without SHA-256: nothing sensible to do
  }
  EVP_MD_CTX_free(md);
  return out;
}

// The AES-256-GCM implementation, fetched from the default provider once per process: an
// EVP_CipherInit_ex given EVP_aes_256_gcm() looks it up again (method store, locks) and resets
// the context, about 1 us, which a thread switching between entries would pay per page.
EVP_CIPHER* GcmCipher() {
  static EVP_CIPHER* const cipher = [] {
    EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
    if (c == nullptr) {
      std::abort();  // libcrypto without AES-256-GCM
    }
    return c;
  }();
  return cipher;
}

// Unique per PageSealer of the process: the thread contexts below know which sealer they are
// keyed for without keeping a copy of its key (an address could be reused by a later one).
std::atomic<uint64_t> next_sealer_id{1};

// One thread's GCM contexts, each keyed for one sealer's data key, least recently used
// replaced: a thread that serves pages of several entries in turn (a proxy worker, a reader
// with files open side by side) finds each entry's key schedule and GHASH table ready, and a
// page only sets the nonce. Sealing and opening share them (the direction is set per page).
class GcmContexts {
 public:
  GcmContexts() = default;
  GcmContexts(const GcmContexts&) = delete;
  GcmContexts& operator=(const GcmContexts&) = delete;
  GcmContexts(GcmContexts&&) = delete;
  GcmContexts& operator=(GcmContexts&&) = delete;
  ~GcmContexts() {
    for (Slot& s : slots_) {
      EVP_CIPHER_CTX_free(s.ctx);  // frees (and cleanses) the key schedule
    }
  }

  // The context for `sealer_id` (data key `key`), started for one page with `nonce`; null when
  // libcrypto fails.
  EVP_CIPHER_CTX* Start(uint64_t sealer_id,
                        const KeyBytes& key,
                        const uint8_t* nonce,
                        int encrypt) {
    ++clock_;
    Slot* lru = &slots_[0];
    for (Slot& s : slots_) {
      if (s.sealer_id == sealer_id) {
        s.used = clock_;
        return EVP_CipherInit_ex(s.ctx, nullptr, nullptr, nullptr, nonce, encrypt) == 1 ? s.ctx
                                                                                        : nullptr;
      }
      if (s.used < lru->used) {
        lru = &s;
      }
    }
    if (lru->ctx == nullptr) {
      lru->ctx = EVP_CIPHER_CTX_new();
      if (lru->ctx == nullptr
          || EVP_CipherInit_ex(lru->ctx, GcmCipher(), nullptr, nullptr, nullptr, encrypt) != 1) {
        return nullptr;
      }
    }
    // Another key on a context that has the cipher: the key schedule and GHASH table only.
    lru->sealer_id = 0;
    if (EVP_CipherInit_ex(lru->ctx, nullptr, nullptr, key.data(), nonce, encrypt) != 1) {
      return nullptr;
    }
    lru->sealer_id = sealer_id;
    lru->used = clock_;
    return lru->ctx;
  }

 private:
  struct Slot {
    EVP_CIPHER_CTX* ctx = nullptr;
    uint64_t sealer_id = 0;  // 0: keyed for none
    uint64_t used = 0;
  };
  static constexpr size_t kSlots = 8;
  std::array<Slot, kSlots> slots_{};
  uint64_t clock_ = 0;
};

thread_local GcmContexts tls_gcm;

// HMAC-SHA256 context of one thread (the synthetic nonce), keyed for the sealer it last
// served: a page of the same sealer only restarts it (EVP_MAC_init without a key keeps the
// key's inner and outer pads, and without parameters does not look SHA-256 up again).
struct MacContext {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
  uint64_t sealer_id = 0;
  MacContext() = default;
  MacContext(const MacContext&) = delete;
  MacContext& operator=(const MacContext&) = delete;
  MacContext(MacContext&&) = delete;
  MacContext& operator=(MacContext&&) = delete;
  ~MacContext() {
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
  }
};

void MakeAad(
    uint8_t* a, uint64_t entry_key, uint64_t epoch, uint64_t page, uint32_t lo, uint32_t hi) {
  StoreLE<uint64_t>(a + aad::kEntryKey, entry_key);
  StoreLE<uint64_t>(a + aad::kEpoch, epoch);
  StoreLE<uint64_t>(a + aad::kPage, page);
  StoreLE<uint32_t>(a + aad::kLo, lo);
  StoreLE<uint32_t>(a + aad::kHi, hi);
}

void MakeNonce(uint8_t* n, uint64_t nonce_id, uint64_t page) {
  StoreLE<uint64_t>(n, nonce_id);
  StoreLE<uint32_t>(n + 8, static_cast<uint32_t>(page));
}

// Feeds `in` to a started GCM context in pieces an int counts (extents may pass 2 GiB).
bool GcmUpdate(EVP_CIPHER_CTX* ctx, const uint8_t* in, size_t size, uint8_t* out, int encrypt) {
  constexpr size_t kPiece = size_t{1} << 30;
  for (size_t at = 0; at < size; at += kPiece) {
    const int len = static_cast<int>(std::min(kPiece, size - at));
    int n = 0;
    const int ok = encrypt != 0 ? EVP_EncryptUpdate(ctx, out + at, &n, in + at, len)
                                : EVP_DecryptUpdate(ctx, out + at, &n, in + at, len);
    if (ok != 1 || n != len) {
      return false;
    }
  }
  return true;
}

// First 8 bytes of HMAC-SHA256(nonce_key, aad || bytes); sealer_id names nonce_key's sealer.
uint64_t SyntheticNonce(uint64_t sealer_id,
                        const KeyBytes& nonce_key,
                        const uint8_t* a,
                        std::span<const uint8_t> in) {
  thread_local MacContext m;
  if (m.ctx != nullptr && m.sealer_id != sealer_id) {
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    m.sealer_id = 0;
    if (EVP_MAC_init(m.ctx, nonce_key.data(), nonce_key.size(), params) != 1) {
      std::abort();  // libcrypto without HMAC-SHA256
    }
    m.sealer_id = sealer_id;
  } else if (m.ctx == nullptr || EVP_MAC_init(m.ctx, nullptr, 0, nullptr) != 1) {
    std::abort();
  }
  uint8_t out[32];
  size_t n = 0;
  if (EVP_MAC_update(m.ctx, a, kAadBytes) != 1 || EVP_MAC_update(m.ctx, in.data(), in.size()) != 1
      || EVP_MAC_final(m.ctx, out, &n, sizeof out) != 1) {
    std::abort();  // libcrypto without HMAC-SHA256
  }
  return LoadLE<uint64_t>(out);
}

}  // namespace

// ---- MasterKey ----

MasterKey::~MasterKey() {
  OPENSSL_cleanse(key_.data(), key_.size());
}

MasterKey MasterKey::FromBytes(const KeyBytes& bytes) {
  MasterKey k;
  k.key_ = bytes;
  const auto h = LabelledHash(kKeyIdLabel, sizeof kKeyIdLabel, bytes);
  k.id_ = LoadLE<uint64_t>(h.data());
  return k;
}

Result<MasterKey> MasterKey::Load(const std::string& path) {
  if (IsKeyringSource(path)) {
    KeyBytes bytes = FERRY_TRY(ReadKeyringKey(path.substr(kKeyringPrefix.size())));
    MasterKey k = FromBytes(bytes);
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return k;
  }
  auto fd = Fd::Open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (!fd) {
    return InvalidArgumentError("encryption key file " + path + ": " + fd.error().ToString());
  }
  struct stat st = {};
  if (::fstat(fd->get(), &st) != 0) {
    return IoError("stat of encryption key file " + path, errno);
  }
  // A key others can read protects nothing; insist before reading a byte of it.
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgumentError("encryption key file " + path + " must be a regular file of uid "
                                + std::to_string(::geteuid()) + " with mode 0600 (it has mode "
                                + mode + ", uid " + std::to_string(st.st_uid)
                                + "): chown it and chmod 600 it");
  }
  if (st.st_size != static_cast<off_t>(kKeyBytes)) {
    return InvalidArgumentError(
        "encryption key file " + path + " must hold exactly 32 bytes (it has "
        + std::to_string(st.st_size) + "); make one with: head -c 32 /dev/urandom > FILE");
  }
  KeyBytes bytes{};
  if (::pread(fd->get(), bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    return IoError("read of encryption key file " + path, errno);
  }
  MasterKey k = FromBytes(bytes);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return k;
}

WrappedKey MasterKey::Wrap(const KeyBytes& data_key) const {
  WrappedKey out{};
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int n = 0;
  int tail = 0;
  EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
  if (EVP_EncryptInit_ex(ctx, EVP_aes_256_wrap(), nullptr, key_.data(), nullptr) != 1
      || EVP_EncryptUpdate(ctx, out.data(), &n, data_key.data(), static_cast<int>(data_key.size()))
             != 1
      || EVP_EncryptFinal_ex(ctx, out.data() + n, &tail) != 1
      || n + tail != static_cast<int>(out.size())) {
    std::abort();  // libcrypto without AES key wrap
  }
  EVP_CIPHER_CTX_free(ctx);
  return out;
}

Result<KeyBytes> MasterKey::Unwrap(const WrappedKey& wrapped) const {
  KeyBytes out{};
  std::array<uint8_t, kWrappedKeyBytes> buf{};  // the cipher may write up to the input's size
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int n = 0;
  int tail = 0;
  EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
  const bool ok =
      EVP_DecryptInit_ex(ctx, EVP_aes_256_wrap(), nullptr, key_.data(), nullptr) == 1
      && EVP_DecryptUpdate(ctx, buf.data(), &n, wrapped.data(), static_cast<int>(wrapped.size()))
             == 1
      && EVP_DecryptFinal_ex(ctx, buf.data() + n, &tail) == 1
      && n + tail == static_cast<int>(kKeyBytes);
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) {
    OPENSSL_cleanse(buf.data(), buf.size());
    return CorruptionError("data key does not unwrap with master key " + KeyIdHex(id_));
  }
  std::memcpy(out.data(), buf.data(), out.size());
  OPENSSL_cleanse(buf.data(), buf.size());
  return out;
}

KeyBytes RandomDataKey() {
  KeyBytes k{};
  if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1) {
    std::abort();  // no randomness: never make a guessable key
  }
  return k;
}

void WipeKey(KeyBytes& key) {
  OPENSSL_cleanse(key.data(), key.size());
}

std::string KeyIdHex(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

// ---- PageSealer ----

PageSealer::PageSealer(const KeyBytes& data_key, uint64_t entry_key, uint64_t epoch)
    : key_(data_key),
      nonce_key_(LabelledHash(kNonceKeyLabel, sizeof kNonceKeyLabel, data_key)),
      entry_key_(entry_key),
      epoch_(epoch),
      id_(next_sealer_id.fetch_add(1, std::memory_order_relaxed)) {}

KeyBytes PageSealer::DeriveKey(std::string_view label, std::span<const uint8_t> context) const {
  std::vector<uint8_t> input(label.begin(), label.end());
  input.insert(input.end(), context.begin(), context.end());
  KeyBytes out{};
  size_t n = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key_.data(), key_.size(), input.data(),
                input.size(), out.data(), out.size(), &n)
          == nullptr
      || n != out.size()) {
    std::abort();  // libcrypto without HMAC-SHA256
  }
  return out;
}

PageSealer::~PageSealer() {
  OPENSSL_cleanse(key_.data(), key_.size());
  OPENSSL_cleanse(nonce_key_.data(), nonce_key_.size());
}

Seal PageSealer::SealBytes(uint64_t page,
                           uint32_t lo,
                           std::span<const uint8_t> in,
                           uint8_t* out) const {
  uint8_t a[kAadBytes];
  MakeAad(a, entry_key_, epoch_, page, lo, lo + static_cast<uint32_t>(in.size()));
  Seal seal;
  seal.nonce = SyntheticNonce(id_, nonce_key_, a, in);
  uint8_t nonce[kNonceBytes];
  MakeNonce(nonce, seal.nonce, page);
  EVP_CIPHER_CTX* ctx = tls_gcm.Start(id_, key_, nonce, 1);
  int n = 0;
  int tail = 0;
  if (ctx == nullptr || EVP_EncryptUpdate(ctx, nullptr, &n, a, sizeof a) != 1
      || EVP_EncryptUpdate(ctx, out, &n, in.data(), static_cast<int>(in.size())) != 1
      || EVP_EncryptFinal_ex(ctx, out + n, &tail) != 1
      || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, seal.tag.data()) != 1) {
    std::abort();  // libcrypto without AES-256-GCM
  }
  return seal;
}

bool PageSealer::OpenBytes(uint64_t page,
                           uint32_t lo,
                           std::span<uint8_t> bytes,
                           const Seal& seal) const {
  uint8_t a[kAadBytes];
  MakeAad(a, entry_key_, epoch_, page, lo, lo + static_cast<uint32_t>(bytes.size()));
  uint8_t nonce[kNonceBytes];
  MakeNonce(nonce, seal.nonce, page);
  auto tag = seal.tag;  // the ctrl call takes a non-const pointer
  EVP_CIPHER_CTX* ctx = tls_gcm.Start(id_, key_, nonce, 0);
  int n = 0;
  int tail = 0;
  const bool ok =
      ctx != nullptr && EVP_DecryptUpdate(ctx, nullptr, &n, a, sizeof a) == 1
      && EVP_DecryptUpdate(ctx, bytes.data(), &n, bytes.data(), static_cast<int>(bytes.size())) == 1
      && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1
      && EVP_DecryptFinal_ex(ctx, bytes.data() + n, &tail) == 1;
  if (!ok) {
    // Decrypted but unauthenticated bytes must not linger in a buffer a reader may look at.
    std::memset(bytes.data(), 0, bytes.size());
  }
  return ok;
}

// ---- GcmKey ----

GcmKey::GcmKey(const KeyBytes& key)
    : key_(key), id_(next_sealer_id.fetch_add(1, std::memory_order_relaxed)) {}

GcmKey::~GcmKey() {
  OPENSSL_cleanse(key_.data(), key_.size());
}

GcmKey::Tag GcmKey::Seal(const Nonce& nonce,
                         std::span<const uint8_t> aad,
                         std::span<const uint8_t> in,
                         uint8_t* out) const {
  Tag tag{};
  EVP_CIPHER_CTX* ctx = tls_gcm.Start(id_, key_, nonce.data(), 1);
  int n = 0;
  if (ctx == nullptr || aad.size() > INT_MAX
      || EVP_EncryptUpdate(ctx, nullptr, &n, aad.data(), static_cast<int>(aad.size())) != 1
      || !GcmUpdate(ctx, in.data(), in.size(), out, 1)
      || EVP_EncryptFinal_ex(ctx, out + in.size(), &n) != 1
      || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, tag.data()) != 1) {
    std::abort();  // libcrypto without AES-256-GCM
  }
  return tag;
}

bool GcmKey::Open(const Nonce& nonce,
                  std::span<const uint8_t> aad,
                  std::span<uint8_t> bytes,
                  const Tag& tag) const {
  return Open(nonce, aad, std::span<const std::span<uint8_t>>(&bytes, 1), tag);
}

bool GcmKey::Open(const Nonce& nonce,
                  std::span<const uint8_t> aad,
                  std::span<const std::span<uint8_t>> pieces,
                  const Tag& tag) const {
  Tag want = tag;  // the ctrl call takes a non-const pointer
  EVP_CIPHER_CTX* ctx = tls_gcm.Start(id_, key_, nonce.data(), 0);
  int n = 0;
  bool ok = ctx != nullptr && aad.size() <= INT_MAX
            && EVP_DecryptUpdate(ctx, nullptr, &n, aad.data(), static_cast<int>(aad.size())) == 1;
  // GCM is a stream: a piece may end inside a block, libcrypto carries the rest to the next.
  for (size_t i = 0; ok && i < pieces.size(); ++i) {
    ok = GcmUpdate(ctx, pieces[i].data(), pieces[i].size(), pieces[i].data(), 0);
  }
  uint8_t none = 0;  // GCM's final writes nothing
  ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, want.data()) == 1
       && EVP_DecryptFinal_ex(ctx, &none, &n) == 1;
  if (!ok) {
    for (std::span<uint8_t> p : pieces) {
      std::memset(p.data(), 0, p.size());
    }
  }
  return ok;
}

}  // namespace ferry::cache
