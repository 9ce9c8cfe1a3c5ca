// The measurement settings of a campaign (docs/MEASUREMENT.md): their defaults and
// the limits every reader (campaign YAML, the wire, the worker) checks them against.
#pragma once

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// `settings` with every zero field replaced by its default: 10 samples, 0.01 s
// minimum sample time, 1 thread, target CV 0.03, at most 30 samples, compile timeout
// 120 s, run timeout 60 s.
MeasurementSettings WithDefaults(MeasurementSettings settings);

// Refuses impossible values (negative counts or times, max_samples below samples,
// more than 1000 samples, threads beyond 1024), naming the field.
Status ValidateMeasurementSettings(const MeasurementSettings& settings);

}  // namespace schedfarm
