#include "observer/ckpt/sha256.h"

#include <openssl/evp.h>

#include "common/hex.h"

namespace scout::ckpt {

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return shm::bytes_hex(md, len);
}

}  // namespace scout::ckpt
