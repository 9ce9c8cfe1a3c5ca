#include "protocol/measurement_settings.h"

#include <algorithm>
#include <string>

namespace schedfarm {

MeasurementSettings WithDefaults(MeasurementSettings s) {
  if (s.samples() == 0) s.set_samples(10);
  if (s.min_sample_seconds() == 0) s.set_min_sample_seconds(0.01);
  if (s.threads() == 0) s.set_threads(1);
  if (s.target_cv() == 0) s.set_target_cv(0.03);
  if (s.max_samples() == 0) s.set_max_samples(std::max(30, s.samples()));
  if (s.compile_timeout_ms() == 0) s.set_compile_timeout_ms(120000);
  if (s.run_timeout_ms() == 0) s.set_run_timeout_ms(60000);
  return s;
}

Status ValidateMeasurementSettings(const MeasurementSettings& s) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::Error("measurement settings: " + field + " " + why);
  };
  if (s.samples() < 0 || s.samples() > 1000) return bad("samples", "must be in [0, 1000]");
  if (s.max_samples() < 0 || s.max_samples() > 1000) {
    return bad("max_samples", "must be in [0, 1000]");
  }
  if (s.max_samples() != 0 && s.max_samples() < s.samples()) {
    return bad("max_samples", "must be at least samples (" + std::to_string(s.samples()) + ")");
  }
  if (!(s.min_sample_seconds() >= 0 && s.min_sample_seconds() <= 10)) {
    return bad("min_sample_seconds", "must be in [0, 10]");
  }
  if (s.threads() < 0 || s.threads() > 1024) return bad("threads", "must be in [0, 1024]");
  if (!(s.target_cv() >= 0 && s.target_cv() <= 1)) return bad("target_cv", "must be in [0, 1]");
  if (s.compile_timeout_ms() < 0) return bad("compile_timeout_ms", "must not be negative");
  if (s.run_timeout_ms() < 0) return bad("run_timeout_ms", "must not be negative");
  return Status::Ok();
}

}  // namespace schedfarm
