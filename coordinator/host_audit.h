// Hosts that lie (times scaled, outputs not checked): a sample of each host's OK
// results is measured again on other hosts of the same CPU model, its first result
// and every `every`-th after it (farm-coordinator --audit-every). Two hosts that agree
// settle an audit: the same status, and for OK times within `tolerance` of each other.
// When they disagree a third host measures the schedule as well, and each host is
// judged against the majority's status and the median time; with no third host the
// audit is inconclusive, since two hosts alone cannot tell which of them lies. A host
// is flagged once it deviated in `min_deviations` audits and either its times over the
// others' (a geometric mean over all its timed audits, which averages out the noise of
// a busy host) are off by `tolerance` or more, or `min_deviations` of its deviations
// were of status (outputs). A flagged host's results count neither in the best nor in
// training until a person clears it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

// An audit of the result of repeat r is repeat kAuditRepeatBase + 2r; the third host's
// measurement of a disputed audit the next one.
constexpr int kAuditRepeatBase = 1 << 20;
// The origin of an audit's candidate.
inline constexpr char kAuditOrigin[] = "audit";

struct AuditOptions {
  int every = 0;  // 0: no audits
  double tolerance = 0.2;
  int min_deviations = 3;
};

// Whether a host's OK result number `results_ok` (1: its first) is audited.
bool AuditsResult(const AuditOptions& options, int64_t results_ok);
// Whether the result's status is one an audit compares: OK (times), or a wrong answer
// (outputs). Other failures say nothing about the host's honesty.
bool AuditComparable(MeasurementStatus status);

struct AuditVerdict {
  bool needs_another_host = false;  // two hosts disagree: a third one settles it
  std::vector<std::string> agreed;
  std::vector<std::string> deviated;
  std::vector<std::string> deviated_status;  // those of `deviated` whose status differed
  std::vector<std::string> inconclusive;     // no majority
  // Per host with an OK time: log(its time / the reference time), the reference being
  // the other host's time (two hosts) or the median of the majority's times.
  std::vector<std::pair<std::string, double>> log_ratios;
};

// The verdict on an audit's results (two or more, each of a comparable status).
AuditVerdict JudgeAudit(const Audit& audit, double tolerance);

// Counts one audit's verdict for a host in its record; true when this made the host
// flagged (the reason says by how much and how often it deviated).
bool CountAudit(const AuditOptions& options, const AuditVerdict& verdict, const std::string& worker_id,
                int64_t now_ms, WorkerRecord* record);

// The host's times over the other hosts' in its audits (geometric mean), 0 when none.
double AuditTimeRatio(const WorkerRecord& record);

}  // namespace schedfarm
