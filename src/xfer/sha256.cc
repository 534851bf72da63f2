#include "xfer/sha256.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <cerrno>
#include <memory>
#include <string>

namespace ferry::xfer {
namespace {

// The newest libcrypto error as text, for a message a user can search for.
Error CryptoError(const char* what) {
  char text[256] = "no detail";
  if (unsigned long code = ::ERR_get_error(); code != 0) {
    ::ERR_error_string_n(code, text, sizeof text);
  }
  ::ERR_clear_error();
  return {ErrorCode::kUnsupported, std::string("libcrypto: ") + what + " failed (" + text + ")"};
}

struct MacDeleter {
  void operator()(EVP_MAC* m) const { ::EVP_MAC_free(m); }
  void operator()(EVP_MAC_CTX* c) const { ::EVP_MAC_CTX_free(c); }
};

}  // namespace

Result<Digest256> Sha256Of(std::span<const uint8_t> data) {
  Digest256 out{};
  unsigned int size = 0;
  if (::EVP_Digest(data.data(), data.size(), out.data(), &size, ::EVP_sha256(), nullptr) != 1
      || size != out.size()) {
    return CryptoError("SHA-256");
  }
  return out;
}

Result<Digest256> HmacSha256(std::span<const uint8_t> key,
                             std::span<const std::span<const uint8_t>> parts) {
  std::unique_ptr<EVP_MAC, MacDeleter> mac(::EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  if (!mac) {
    return CryptoError("fetching HMAC");
  }
  std::unique_ptr<EVP_MAC_CTX, MacDeleter> ctx(::EVP_MAC_CTX_new(mac.get()));
  if (!ctx) {
    return CryptoError("a MAC context");
  }
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      ::OSSL_PARAM_construct_utf8_string("digest", digest_name, 0),
      ::OSSL_PARAM_construct_end(),
  };
  // An empty key is legal for HMAC; libcrypto wants a non-null pointer for it.
  static const uint8_t kNoKey = 0;
  if (::EVP_MAC_init(ctx.get(), key.empty() ? &kNoKey : key.data(), key.size(), params) != 1) {
    return CryptoError("HMAC-SHA256 init");
  }
  for (std::span<const uint8_t> p : parts) {
    if (!p.empty() && ::EVP_MAC_update(ctx.get(), p.data(), p.size()) != 1) {
      return CryptoError("HMAC-SHA256 update");
    }
  }
  Digest256 out{};
  size_t size = 0;
  if (::EVP_MAC_final(ctx.get(), out.data(), &size, out.size()) != 1 || size != out.size()) {
    return CryptoError("HMAC-SHA256 final");
  }
  return out;
}

bool MacEqual(const Digest256& a, const Digest256& b) {
  return ::CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Status RandomBytes(std::span<uint8_t> out) {
  size_t done = 0;
  for (int attempt = 0; done < out.size() && attempt < 64; ++attempt) {
    ssize_t n = ::getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return IoError("getrandom failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  if (done < out.size()) {
    return IoError("getrandom returned too few bytes", 0);
  }
  return OkStatus();
}

}  // namespace ferry::xfer
