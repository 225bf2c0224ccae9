#include "node/frame_auth.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "node/frame.h"
#include "utils/coding.h"

namespace chorus {

namespace {

constexpr char kDomain[] = "chorus frame v1";

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "chorus frame auth: libcrypto failed: %s\n", what);
  std::abort();
}

}  // namespace

// The keyed HMAC-SHA256 context. EVP_MAC_init without a key starts a new
// MAC with the key set first, so one context serves every frame.
class HmacContext {
 public:
  HmacContext() = default;
  HmacContext(const HmacContext&) = delete;
  HmacContext& operator=(const HmacContext&) = delete;
  ~HmacContext() {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  bool Init(const std::string& key) {
    mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac_ == nullptr) return false;
    ctx_ = EVP_MAC_CTX_new(mac_);
    if (ctx_ == nullptr) return false;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    return EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                        params) == 1;
  }
  void Begin() {
    if (EVP_MAC_init(ctx_, nullptr, 0, nullptr) != 1) Die("EVP_MAC_init");
  }
  void Add(const void* data, size_t n) {
    if (EVP_MAC_update(ctx_, static_cast<const unsigned char*>(data), n) != 1) {
      Die("EVP_MAC_update");
    }
  }
  void Finish(char* out) {
    size_t len = 0;
    if (EVP_MAC_final(ctx_, reinterpret_cast<unsigned char*>(out), &len, kFrameTagSize) != 1 ||
        len != kFrameTagSize) {
      Die("EVP_MAC_final");
    }
  }

 private:
  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* ctx_ = nullptr;
};

Status ValidateClusterSecret(const std::string& secret) {
  if (secret.empty() || secret.size() >= kMinClusterSecretBytes) return Status::OK();
  return Status::InvalidArgument("cluster_secret has " + std::to_string(secret.size()) +
                                 " bytes; it needs at least " +
                                 std::to_string(kMinClusterSecretBytes) +
                                 " (or leave it empty: no authentication)");
}

Status NewAuthNonce(AuthNonce* nonce) {
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce->data()),
                 static_cast<int>(nonce->size())) != 1) {
    return Status::IOError("RAND_bytes failed: no connection nonce");
  }
  return Status::OK();
}

std::string EncodeChallenge(const AuthNonce& nonce) {
  char buf[kChallengeSize];
  EncodeFixed32(buf, kChallengeMagic);
  std::copy(nonce.begin(), nonce.end(), buf + 4);
  return std::string(buf, sizeof(buf));
}

Status DecodeChallenge(const char* data, AuthNonce* nonce) {
  if (DecodeFixed32(data) != kChallengeMagic) {
    return Status::Corruption("bad challenge magic: the peer does not authenticate frames");
  }
  std::copy(data + 4, data + kChallengeSize, nonce->begin());
  return Status::OK();
}

Status FrameAuthenticator::New(const std::string& secret,
                               std::unique_ptr<FrameAuthenticator>* out) {
  if (secret.empty()) return Status::InvalidArgument("cluster_secret is empty");
  Status s = ValidateClusterSecret(secret);
  if (!s.ok()) return s;
  auto hmac = std::make_unique<HmacContext>();
  if (!hmac->Init(secret)) return Status::IOError("libcrypto: cannot set up HMAC-SHA256");
  out->reset(new FrameAuthenticator(std::move(hmac)));
  return Status::OK();
}

FrameAuthenticator::FrameAuthenticator(std::unique_ptr<HmacContext> hmac)
    : hmac_(std::move(hmac)) {}

FrameAuthenticator::~FrameAuthenticator() = default;

FrameTag FrameAuthenticator::Sign(const AuthNonce& nonce, uint64_t receiver, uint64_t sequence,
                                  const char* header, const std::string& payload) {
  char numbers[16];
  EncodeFixed64(numbers, receiver);
  EncodeFixed64(numbers + 8, sequence);
  hmac_->Begin();
  hmac_->Add(kDomain, sizeof(kDomain) - 1);
  hmac_->Add(nonce.data(), nonce.size());
  hmac_->Add(numbers, sizeof(numbers));
  hmac_->Add(header, kFrameHeaderSize);
  hmac_->Add(payload.data(), payload.size());
  FrameTag tag;
  hmac_->Finish(tag.data());
  return tag;
}

bool FrameAuthenticator::Verify(const AuthNonce& nonce, uint64_t receiver, uint64_t sequence,
                                const char* header, const std::string& payload, const char* tag) {
  const FrameTag expected = Sign(nonce, receiver, sequence, header, payload);
  return CRYPTO_memcmp(expected.data(), tag, kFrameTagSize) == 0;
}

std::string HmacSha256(const std::string& key, const std::string& data) {
  HmacContext crypto;
  if (!crypto.Init(key)) Die("HMAC-SHA256 setup");
  crypto.Begin();
  crypto.Add(data.data(), data.size());
  std::string out(kFrameTagSize, '\0');
  crypto.Finish(&out[0]);
  return out;
}

}  // namespace chorus
