// The key encoding of the store's column families (layout version 1), shared by the
// store and by tests that inspect the raw database. Keys are byte strings compared
// bytewise: ids end with a 0 byte (ids may not contain one), sequence numbers are
// 8-byte big-endian, runtimes are 8-byte order-preserving doubles.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace schedfarm {
namespace store_keys {

// The layout version stored under kLayoutVersionKey in the default column family.
// Open refuses a database written with another version.
inline constexpr uint64_t kLayoutVersion = 1;
inline constexpr char kLayoutVersionKey[] = "layout_version";
// The next measurement and event sequence numbers (8-byte big-endian), written in the
// same batch as the records that use them, so they survive a crash with those records.
inline constexpr char kNextMeasurementSeqKey[] = "next_measurement_seq";
inline constexpr char kNextEventSeqKey[] = "next_event_seq";

// An error unless `id` is non-empty and free of 0 bytes (`what` names it).
Status CheckId(const char* what, const std::string& id);

void AppendU64(std::string* out, uint64_t v);
// REQUIRES: bytes.size() >= 8
uint64_t DecodeU64(const std::string& bytes, size_t offset = 0);
// Eight bytes that sort as the doubles do (negative values first, NaN last).
void AppendOrderedDouble(std::string* out, double v);

// The ids, each followed by a 0 byte: the prefix of the keys under those ids.
std::string IdPrefix(const std::string& a);
std::string IdPrefix(const std::string& a, const std::string& b);

// A candidate's place among its pipeline's: the schedule hash, followed by "+N" for the
// schedule's re-measurement N (Candidate.repeat), so that each measurement of one
// schedule is a candidate of its own.
std::string CandidateSlot(const std::string& schedule_hash, int repeat);
std::string CandidateKey(const std::string& campaign, const std::string& pipeline_id,
                         const std::string& slot);
std::string MeasurementKey(const std::string& campaign, uint64_t seq);
std::string ModelKey(const std::string& kind, const std::string& version);
std::string EventKey(uint64_t seq);
std::string ValueRoundKey(const std::string& campaign, int32_t round);  // REQUIRES: round >= 0
std::string BestByPipelineKey(const std::string& pipeline_id, double median_seconds, uint64_t seq);
std::string BestByCampaignKey(const std::string& campaign, const std::string& pipeline_id,
                              double median_seconds, uint64_t seq);

// The key with bytes outside printable ASCII written as \xNN (for error messages).
std::string PrintableKey(const std::string& key);

}  // namespace store_keys
}  // namespace schedfarm
