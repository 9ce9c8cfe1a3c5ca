// SHA-256 of a byte string, for content ids that must be the same on every machine
// and run (pipeline ids, schedule hashes). Not for security.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace schedfarm {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> Digest();
  // Lower-case hex of the digest.
  std::string HexDigest();

 private:
  void ProcessBlock(const uint8_t* block);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffer_len_ = 0;
  uint64_t total_len_ = 0;
};

// Hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace schedfarm
