#include "coordinator/host_audit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace schedfarm {

namespace {

bool Contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Whether the result has a time to compare: OK with a positive fastest sample.
bool Timed(const AuditedResult& result) { return result.status() == OK && result.seconds() > 0; }

// Whether `seconds` is within `tolerance` of `reference`, either way.
bool Within(double seconds, double reference, double tolerance) {
  const double ratio = seconds / reference;
  return ratio < 1 + tolerance && ratio > 1 / (1 + tolerance);
}

}  // namespace

bool AuditsResult(const AuditOptions& options, int64_t results_ok) {
  return options.every > 0 && results_ok > 0 && (results_ok - 1) % options.every == 0;
}

bool AuditComparable(MeasurementStatus status) { return status == OK || status == WRONG_ANSWER; }

AuditVerdict JudgeAudit(const Audit& audit, double tolerance) {
  AuditVerdict verdict;
  const auto& results = audit.results();
  if (results.size() < 2) return verdict;
  if (results.size() == 2) {
    const AuditedResult& a = results[0];
    const AuditedResult& b = results[1];
    const bool timed = Timed(a) && Timed(b);
    if (a.status() != b.status() ||
        (timed && !Within(a.seconds(), b.seconds(), tolerance))) {
      verdict.needs_another_host = true;
      return verdict;
    }
    verdict.agreed = {a.worker_id(), b.worker_id()};
    if (timed) {
      const double log_ratio = std::log(a.seconds() / b.seconds());
      verdict.log_ratios = {{a.worker_id(), log_ratio}, {b.worker_id(), -log_ratio}};
    }
    return verdict;
  }
  std::map<MeasurementStatus, int> votes;
  for (const AuditedResult& r : results) ++votes[r.status()];
  MeasurementStatus majority = MEASUREMENT_STATUS_UNSPECIFIED;
  int most = 0;
  bool tie = false;
  for (const auto& [status, count] : votes) {
    if (count > most) {
      majority = status;
      most = count;
      tie = false;
    } else if (count == most) {
      tie = true;
    }
  }
  if (tie) {
    for (const AuditedResult& r : results) verdict.inconclusive.push_back(r.worker_id());
    return verdict;
  }
  std::vector<double> times;
  for (const AuditedResult& r : results) {
    if (majority == OK && Timed(r)) times.push_back(r.seconds());
  }
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const double reference =
      n == 0 ? 0 : n % 2 ? times[n / 2] : std::sqrt(times[n / 2 - 1] * times[n / 2]);
  for (const AuditedResult& r : results) {
    const bool timed = reference > 0 && Timed(r);
    if (timed) verdict.log_ratios.push_back({r.worker_id(), std::log(r.seconds() / reference)});
    const bool agrees =
        r.status() == majority && (!timed || Within(r.seconds(), reference, tolerance));
    (agrees ? verdict.agreed : verdict.deviated).push_back(r.worker_id());
    if (r.status() != majority) verdict.deviated_status.push_back(r.worker_id());
  }
  return verdict;
}

bool CountAudit(const AuditOptions& options, const AuditVerdict& verdict,
                const std::string& worker_id, int64_t now_ms, WorkerRecord* record) {
  if (Contains(verdict.agreed, worker_id)) record->set_audits_agreed(record->audits_agreed() + 1);
  if (Contains(verdict.deviated, worker_id)) {
    record->set_audits_deviated(record->audits_deviated() + 1);
  }
  if (Contains(verdict.deviated_status, worker_id)) {
    record->set_audits_deviated_status(record->audits_deviated_status() + 1);
  }
  if (Contains(verdict.inconclusive, worker_id)) {
    record->set_audits_inconclusive(record->audits_inconclusive() + 1);
  }
  for (const auto& [id, log_ratio] : verdict.log_ratios) {
    if (id != worker_id) continue;
    record->set_audit_log_ratio_sum(record->audit_log_ratio_sum() + log_ratio);
    record->set_audits_timed(record->audits_timed() + 1);
  }
  // Noise on a busy host makes an honest host deviate now and then, by a lot; over its
  // audits the noise averages out, while a host that scales its times stays off.
  const double ratio = AuditTimeRatio(*record);
  const bool times_off = ratio > 0 && !Within(ratio, 1, options.tolerance);
  const bool outputs_off = record->audits_deviated_status() >= options.min_deviations;
  if (record->flagged() || record->audits_deviated() < options.min_deviations ||
      !(times_off || outputs_off)) {
    return false;
  }
  record->set_flagged(true);
  record->set_flagged_unix_ms(now_ms);
  char reason[160];
  snprintf(reason, sizeof(reason),
           "deviated from other hosts in %lld of %lld audits (%lld by status); its times "
           "%.2fx theirs",
           static_cast<long long>(record->audits_deviated()),
           static_cast<long long>(record->audits_deviated() + record->audits_agreed()),
           static_cast<long long>(record->audits_deviated_status()), ratio);
  record->set_flag_reason(reason);
  return true;
}

double AuditTimeRatio(const WorkerRecord& record) {
  if (record.audits_timed() == 0) return 0;
  return std::exp(record.audit_log_ratio_sum() / record.audits_timed());
}

}  // namespace schedfarm
