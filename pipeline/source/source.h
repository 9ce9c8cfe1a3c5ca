// Pipelines named on a command line, the SOURCE argument of farm-pipeline and
// farm-baselines: a zoo block ("zoo:NAME" or "NAME"), a generated pipeline
// ("random:SEED"), or a YAML (.yaml, .yml), ONNX (.onnx) or binary PipelineSpec (.pb) file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "pipeline/graph.h"
#include "schedfarm.pb.h"

namespace schedfarm {

struct PipelineSourceOptions {
  // Zoo blocks, random pipelines and ONNX models are built in this mode (default EXACT);
  // when given, it also replaces the mode of the YAML or .pb file's stages that read it.
  std::optional<MathMode> math;
  // Zoo blocks only (ZooOptions); an error for any other source when given.
  std::optional<DataType> dtype;
  std::optional<double> spatial_scale;
  std::optional<double> channel_scale;
  std::optional<int64_t> batch;
  // Random pipelines only (RandomPipelineOptions); an error for any other source.
  std::optional<int> max_ops;
  std::optional<int64_t> max_elements;
  std::optional<double> max_flops;
};

// Errors of the command line itself, found without building anything: a SOURCE of
// no known kind, an unknown zoo block, a malformed seed, zoo options for a non-zoo
// source, generator options for a non-random one. Callers report these as usage errors.
Status CheckPipelineSource(const std::string& source, const PipelineSourceOptions& options);

// Builds and validates the pipeline. Errors: those of CheckPipelineSource, unreadable
// files, and the parser's, generator's or validator's errors (prefixed by the source).
StatusOr<PipelineGraph> LoadPipelineSource(const std::string& source,
                                           const PipelineSourceOptions& options = {});

}  // namespace schedfarm
