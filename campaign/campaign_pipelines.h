// The pipelines a campaign's configuration names, for farmctl to build before it
// submits and for the coordinator to check what was submitted. Zoo blocks and random
// pipelines are built from their settings alone; ONNX and YAML files are read by
// farmctl only, where the files are.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "network/tasks.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The zoo block of an entry at its sizes.
StatusOr<PipelineSpec> BuildZooPipeline(const ZooPipeline& zoo);
// The random pipeline of `seed` with the entry's size knobs.
StatusOr<PipelineSpec> BuildRandomPipeline(const RandomPipelines& random, uint64_t seed);

// How many pipelines the configuration names (each random range counts its seeds; a
// replay campaign, the pipelines of its split; a network campaign: -1, known once the
// network is split).
int64_t CampaignPipelineCount(const CampaignConfig& config);

// A network campaign's pipelines, in the order the campaign holds them: the network,
// its assembly pipeline, then its distinct tasks (network/tasks.h).
std::vector<PipelineSpec> NetworkCampaignPipelines(const PipelineSpec& network,
                                                   const NetworkPartition& partition);

// Checks pipelines submitted with `config`, in the order of its pipeline list: their
// number, that each builds, and that zoo blocks and random pipelines are exactly the
// ones their settings give (a replay campaign's, the ids of its split; a network
// campaign's, the network and then exactly its split). Errors name the entry.
Status CheckCampaignPipelines(const CampaignConfig& config,
                              const std::vector<PipelineSpec>& pipelines);

}  // namespace schedfarm
