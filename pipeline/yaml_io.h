// Pipelines as YAML, for people: a readable description of inputs, parameters and
// stages that converts to and from PipelineSpec. Errors name the file, line and
// column, and what is wrong. The format is documented in docs/PIPELINE_YAML.md.
#pragma once

#include <string>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// Parses and validates a pipeline; `filename` is used in error messages.
StatusOr<PipelineSpec> PipelineFromYaml(const std::string& text, const std::string& filename);
StatusOr<PipelineSpec> PipelineFromYamlFile(const std::string& path);
// Writes a spec as YAML that PipelineFromYaml reads back to an equal spec (raw
// parameter data is written as a list of numbers).
std::string PipelineToYaml(const PipelineSpec& spec);

}  // namespace schedfarm
