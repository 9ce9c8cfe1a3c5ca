#include "coordinator/recovery.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "common/log.h"

namespace schedfarm {

Status RestoreFarm(Store& store, FarmState* farm) {
  std::vector<Campaign> stored;
  SCHEDFARM_RETURN_IF_ERROR(store.ScanCampaigns([&](const Campaign& campaign) {
    stored.push_back(campaign);
    return true;
  }));
  for (Campaign& campaign : stored) {
    const std::string id = campaign.id();
    StatusOr<CampaignConfig> config = CampaignConfigFromJson(campaign.config_json());
    if (!config.ok()) return config.status().WithContext("campaign " + id);
    std::vector<PipelineSpec> pipelines;
    for (const std::string& pipeline_id : campaign.pipeline_ids()) {
      SCHEDFARM_ASSIGN_OR_RETURN(std::optional<PipelineSpec> spec,
                                 store.GetPipeline(pipeline_id));
      if (!spec)
        return Status::Error("campaign " + id + ": pipeline " + pipeline_id + " is missing");
      pipelines.push_back(std::move(*spec));
    }
    StatusOr<std::unique_ptr<CampaignRun>> created =
        CampaignRun::Create(std::move(campaign), std::move(*config), std::move(pipelines));
    if (!created.ok()) return created.status().WithContext("campaign " + id);
    std::unique_ptr<CampaignRun> run = std::move(*created);
    SCHEDFARM_RETURN_IF_ERROR(store.ScanCandidates(id, [&](const CandidateRecord& record) {
      run->Restore(record);
      return true;
    }));
    SCHEDFARM_RETURN_IF_ERROR(store.ScanMeasurements(id, 0, [&](const StoredMeasurement& m) {
      run->RestoreMeasurement(m.measurement);
      return true;
    }));
    LogEvent("info", "campaign_restored",
             {{"campaign", id},
              {"state", CampaignState_Name(run->campaign().state())},
              {"finished", std::to_string(run->campaign().counters().finished())},
              {"waiting", std::to_string(run->waiting())}});
    farm->AddCampaign(std::move(run));
  }
  return store.ScanWorkers([&](const WorkerRecord& record) {
    WorkerEntry& worker = farm->workers[record.host().worker_id()];
    worker.id = record.host().worker_id();
    worker.record = record;
    return true;
  });
}

}  // namespace schedfarm
