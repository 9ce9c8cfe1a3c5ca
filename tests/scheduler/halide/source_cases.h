// The cases of the schedule-source test: (pipeline, schedule) pairs whose exported
// Halide source schedule_source_gen compiles into a header at build time, and which
// schedule_source_test applies both ways. Hand-written schedules cover every
// directive and awkward names (C++ keywords, Funcs named like split Vars); random
// schedules of zoo blocks and random pipelines cover the space.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {
namespace source_cases {

struct SourceCase {
  std::string name;
  PipelineSpec pipeline;
  ScheduleSpec schedule;
};

// The same cases, in the same order, on every call.
StatusOr<std::vector<SourceCase>> SourceCases();

}  // namespace source_cases
}  // namespace schedfarm
