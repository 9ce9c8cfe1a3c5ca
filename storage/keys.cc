#include "storage/keys.h"

#include <cstdio>
#include <cstring>

namespace schedfarm {
namespace store_keys {

Status CheckId(const char* what, const std::string& id) {
  if (id.empty()) return Status::Error(std::string(what) + " is empty");
  if (id.find('\0') != std::string::npos) {
    return Status::Error(std::string(what) + " '" + PrintableKey(id) + "' contains a 0 byte");
  }
  return Status::Ok();
}

void AppendU64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

uint64_t DecodeU64(const std::string& bytes, size_t offset) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return v;
}

void AppendOrderedDouble(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  const uint64_t sign = uint64_t{1} << 63;
  AppendU64(out, (bits & sign) ? ~bits : bits | sign);
}

std::string IdPrefix(const std::string& a) {
  std::string key = a;
  key.push_back('\0');
  return key;
}

std::string IdPrefix(const std::string& a, const std::string& b) {
  std::string key = IdPrefix(a);
  key += b;
  key.push_back('\0');
  return key;
}

std::string CandidateSlot(const std::string& schedule_hash, int repeat) {
  return repeat > 0 ? schedule_hash + "+" + std::to_string(repeat) : schedule_hash;
}

std::string CandidateKey(const std::string& campaign, const std::string& pipeline_id,
                         const std::string& slot) {
  return IdPrefix(campaign, pipeline_id) + slot;
}

std::string MeasurementKey(const std::string& campaign, uint64_t seq) {
  std::string key = IdPrefix(campaign);
  AppendU64(&key, seq);
  return key;
}

std::string ModelKey(const std::string& kind, const std::string& version) {
  return IdPrefix(kind) + version;
}

std::string EventKey(uint64_t seq) {
  std::string key;
  AppendU64(&key, seq);
  return key;
}

std::string ValueRoundKey(const std::string& campaign, int32_t round) {
  return MeasurementKey(campaign, static_cast<uint64_t>(round));
}

std::string BestByPipelineKey(const std::string& pipeline_id, double median_seconds, uint64_t seq) {
  std::string key = IdPrefix(pipeline_id);
  AppendOrderedDouble(&key, median_seconds);
  AppendU64(&key, seq);
  return key;
}

std::string BestByCampaignKey(const std::string& campaign, const std::string& pipeline_id,
                              double median_seconds, uint64_t seq) {
  std::string key = IdPrefix(campaign, pipeline_id);
  AppendOrderedDouble(&key, median_seconds);
  AppendU64(&key, seq);
  return key;
}

std::string PrintableKey(const std::string& key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace store_keys
}  // namespace schedfarm
