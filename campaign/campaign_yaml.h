// Campaign files: the YAML a person writes to start a campaign (pipelines, search
// strategy, budget, measurement settings, baselines, worker requirements), validated
// into a CampaignConfig with every default filled in. farmctl checks a file before it
// submits it and the coordinator checks it again; errors read `file:line:column: what
// is wrong (hint)`. The format is documented in docs/CAMPAIGN_YAML.md.
#pragma once

#include <string>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The largest campaign file: its pipelines travel beside it, so a larger one is a
// mistake or an attack, refused before it is parsed (parsing 64 MiB takes seconds).
inline constexpr size_t kMaxCampaignFileBytes = size_t{1} << 20;

// Parses and validates a campaign. `filename` names the file in error messages, and
// relative paths in the campaign are resolved against its directory; the returned
// config holds absolute paths. With check_files false, the files a campaign names need
// not exist here (the coordinator checks a campaign whose files farmctl has read).
StatusOr<CampaignConfig> ParseCampaignYaml(const std::string& text, const std::string& filename,
                                           bool check_files = true);
// Reads `path` and parses it with ParseCampaignYaml.
StatusOr<CampaignConfig> LoadCampaignFile(const std::string& path);

// The most benchmarks a campaign file may ask for, and the coordinator's benchmark
// limit (Campaign.budget) of a campaign that only a wall time bounds.
inline constexpr int64_t kMaxBenchmarks = 1000000000;
// Campaign.budget of `budget`: its benchmarks, or kMaxBenchmarks when it has none.
int64_t BenchmarkLimit(const Budget& budget);

// Whether farm-learner proposes the campaign's candidates: a strategy that uses a model,
// or any strategy of a replay campaign (its schedules come from its dataset, which the
// learner reads) or of a network campaign (the learner spreads its rounds over the
// network's tasks and assembles the network's schedule); else the coordinator
// proposes random candidates itself.
bool LearnerProposes(const CampaignConfig& config);

// Whether a worker with this fingerprint meets the campaign's worker requirements
// (ISA flags, cores, labels); a replay worker serves only replay campaigns of its
// dataset, and only it serves them.
bool WorkerServes(const CampaignConfig& config, const HostFingerprint& host);

// The canonical JSON of a config (Campaign.config_json): proto field names, every
// field printed, fields in field-number order, so equal configs give equal text.
std::string CampaignConfigToJson(const CampaignConfig& config);
// Reads back CampaignConfigToJson's output.
StatusOr<CampaignConfig> CampaignConfigFromJson(const std::string& json);

}  // namespace schedfarm
