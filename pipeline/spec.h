// Canonical form and content id of a pipeline. The canonical form is a text that
// depends only on what the pipeline computes: stages in a deterministic topological
// order, references by position, attributes by field name, and the layout of its 4-D
// inputs and outputs when it is not the natural one, how many outputs are checked when
// not all (PipelineSpec.checked_outputs); names, labels, source and the
// declaration order of independent stages do not enter it. Its SHA-256 is the pipeline
// id, the same on every machine and run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipeline/graph.h"

namespace schedfarm {

// Version tag written at the head of the canonical form; bump if the form changes
// (every stored pipeline id changes with it).
inline constexpr const char* kCanonicalFormVersion = "schedfarm.pipeline.v1";

std::string CanonicalForm(const PipelineGraph& graph);

// The stages in the order the canonical form lists them. Two graphs with the same
// id have their stages in correspondence by this order (stages whose encodings tie
// compute the same values from the same inputs).
std::vector<int> CanonicalStageOrder(const PipelineGraph& graph);

// First 32 hex digits (128 bits) of the SHA-256 of CanonicalForm(graph).
std::string PipelineId(const PipelineGraph& graph);

// The layouts as campaign files and command lines name them: "nchw" (LAYOUT_NATURAL)
// and "channels_last". BoundaryLayoutNamed gives nullopt for any other name.
const std::vector<std::string>& BoundaryLayoutNames();
std::optional<BoundaryLayout> BoundaryLayoutNamed(const std::string& name);

// Whether an input or output of `rank` dims is stored channels innermost (NHWC): a
// 4-D tensor of a pipeline whose boundary_layout is LAYOUT_CHANNELS_LAST.
bool BoundaryChannelsLast(const PipelineSpec& spec, size_t rank);

// The pipeline a run of `graph` is checked on: `graph`'s spec cut to its checked
// outputs (PipelineSpec.checked_outputs), the spec unchanged when they are all. An
// assembled network's is its network, up to the name.
PipelineSpec CheckedPipeline(const PipelineGraph& graph);

// Parses a serialized PipelineSpec (binary protobuf) and validates it. A truncated
// or corrupt message, or an invalid pipeline, is an error naming `what` (the
// source, e.g. a file name or "lease 42").
StatusOr<PipelineGraph> ParsePipelineSpec(const std::string& bytes, const std::string& what);

}  // namespace schedfarm
