#include "agent/signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/util/error.hpp"
#include "common/util/strings.hpp"

namespace jobctl::agent {

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len))
    throw Error(ExitCode::internal, "HMAC-SHA256 failed");
  return util::hex(std::string_view(reinterpret_cast<const char*>(mac), len));
}

std::string signature_value(std::string_view secret, int64_t unix_seconds, std::string_view body) {
  std::string t = std::to_string(unix_seconds);
  std::string message = t + "." + std::string(body);
  return "t=" + t + ",v1=" + hmac_sha256_hex(secret, message);
}

}  // namespace jobctl::agent
