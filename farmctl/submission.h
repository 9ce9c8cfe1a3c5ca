// A campaign submission as farmctl sends it: the campaign file's text, checked with the
// campaign reader (errors with file:line:column), and every pipeline it names built here,
// in the order of its pipeline list, so ONNX and YAML files are read where farmctl runs.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The pipelines of `config` in order: each zoo block at its sizes, each ONNX model, each
// YAML pipeline, and for each random item the pipelines of seeds first_seed ..
// first_seed + count - 1 with its knobs (zoo and random through campaign_pipelines.h, as
// the coordinator checks them); a network campaign's network, its assembly and its
// distinct tasks (NetworkCampaignPipelines). Each is validated (PipelineGraph::Build).
// An error names the item (`pipelines[i]`, `network`), what it is and why it failed.
StatusOr<std::vector<PipelineSpec>> BuildCampaignPipelines(const CampaignConfig& config);

// Reads and checks the campaign file at `path` and builds its pipelines:
// yaml_source = the file's text, file_name = `path`. Errors are the campaign reader's
// (file:line:column), BuildCampaignPipelines' prefixed with `path`, or a submission too
// large for one protocol message. When `config` is not null it receives the checked
// config, every default filled in (what `farmctl check` prints).
StatusOr<SubmitCampaign> BuildSubmission(const std::string& path,
                                         CampaignConfig* config = nullptr);

}  // namespace schedfarm
