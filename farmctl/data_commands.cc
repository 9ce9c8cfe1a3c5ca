#include "farmctl/commands.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "common/log.h"
#include "common/files.h"
#include "dataset/dataset.h"
#include "farmctl/curves.h"
#include "farmctl/noise_floor.h"
#include "farmctl/runner.h"
#include "storage/export.h"

namespace schedfarm {

// The campaign's status first (an unknown campaign fails before a file is made): its
// pipelines' FLOPs and bytes, for each row's GFLOP/s and GB/s; then its measurements, page
// by page.
int RunExport(Runner& r) {
  const std::string format_name = r.inv().Get("--format", "csv");
  if (format_name != "csv" && format_name != "jsonl") {
    return r.Fail(kExitUsage, "flag --format: expected csv or jsonl, got '" + format_name + "'");
  }
  const ExportFormat format = format_name == "csv" ? ExportFormat::kCsv : ExportFormat::kJsonLines;
  std::map<std::string, PipelineWork> works;  // by pipeline id
  std::string campaign_id = r.inv().args[0];  // a name becomes the id it named
  {
    int code = kExitOk;
    const auto reply = r.CampaignStatus(r.inv().args[0], &code);
    if (!reply) return code;
    for (const CampaignStatus& campaign : reply->status().campaigns()) {
      campaign_id = campaign.campaign().id();
      for (const PipelineProgress& p : campaign.pipelines()) {
        works[p.pipeline_id()] = {p.flops(), p.bytes()};
      }
    }
  }
  const std::string output = r.inv().Get("--output", "-");
  // A file is written under a temporary name and renamed once complete.
  const std::string partial = output + ".partial";
  std::ofstream file;
  if (output != "-") {
    file.open(partial, std::ios::binary | std::ios::trunc);
    if (!file) return r.Fail(kExitFailed, "export: cannot write '" + partial + "'");
  }
  std::ostream& out = output == "-" ? r.out() : file;
  // Removes the partial file; prints `message` unless the failure was reported already.
  const auto fail = [&](int code, const std::string& message) {
    if (output != "-") {
      file.close();
      std::remove(partial.c_str());
    }
    return message.empty() ? code : r.Fail(code, message);
  };
  WriteExportHeader(format, out);
  int64_t rows = 0;
  const int code = ForEachMeasurement(r, campaign_id, [&](const StoredMeasurementRecord& record) {
    const auto pipeline = works.find(record.measurement().candidate().pipeline_id());
    SCHEDFARM_RETURN_IF_ERROR(
        WriteExportRow({record.seq(), record.measurement()},
                       pipeline == works.end() ? PipelineWork{} : pipeline->second, format, out));
    if (!out) return Status::Error("writing '" + output + "' failed");
    ++rows;
    return Status::Ok();
  });
  if (code != kExitOk) return fail(code, "");
  out.flush();
  if (output != "-") {
    file.close();
    if (!file || std::rename(partial.c_str(), output.c_str()) != 0) {
      return fail(kExitFailed, "export: cannot write '" + output + "'");
    }
    r.out() << "exported " << rows << " measurements to " << output << "\n";
  }
  return kExitOk;
}

int RunBackup(Runner& r) {
  const std::string& dir = r.inv().args[0];
  if (dir[0] != '/') {
    return r.Fail(kExitUsage,
                  "backup: DIR '" + dir +
                      "' must be an absolute path (it is a path on the coordinator's host)");
  }
  ClientRequest request;
  request.mutable_backup()->set_dir(dir);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_backup, "backup", &code);
  if (!reply) return code;
  const BackupReply& b = reply->backup();
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.2f", b.seconds());
  return Print(r, *reply,
               "backed up to " + b.dir() + ": " + std::to_string(b.campaigns()) + " campaigns, " +
                   std::to_string(b.measurements()) + " measurements (last seq " +
                   std::to_string(b.last_measurement_seq()) + ") in " + seconds +
                   " s; restore with farm-coordinator --store " + b.dir() + "\n");
}

// dataset show FILE, and dataset pack CAMPAIGN: the campaign record (its file and
// name), its pipelines and every measurement, read from the coordinator.
int RunDataset(Runner& r) {
  const std::string& action = r.inv().args[0];
  const std::string& target = r.inv().args[1];
  if (action == "show") {
    StatusOr<LoadedDataset> loaded = ReadDataset(target);
    if (!loaded.ok()) return r.Fail(kExitInvalidInput, loaded.status().message());
    r.out() << DescribeDataset(*loaded);
    return kExitOk;
  }
  if (action == "noise") {
    StatusOr<LoadedDataset> loaded = ReadDataset(target);
    if (!loaded.ok()) return r.Fail(kExitInvalidInput, loaded.status().message());
    // The learner's default split (farm-learner --held-out, --seed).
    StatusOr<std::string> table = RenderNoiseFloor(*loaded, 0.2, 1);
    if (!table.ok()) return r.Fail(kExitFailed, "dataset noise: " + table.status().message());
    r.out() << *table;
    return kExitOk;
  }
  if (action != "pack") {
    return r.Fail(kExitUsage,
                  "dataset: unknown action '" + action + "' (known: pack, show, noise)");
  }
  if (!r.inv().Has("--output")) return r.Fail(kExitUsage, "dataset pack needs --output FILE");
  Dataset dataset;
  if (r.inv().Has("--into")) {
    StatusOr<LoadedDataset> into = ReadDataset(r.inv().Get("--into"));
    if (!into.ok()) return r.Fail(kExitInvalidInput, "--into: " + into.status().message());
    dataset = std::move(into->data);
  }
  int code = kExitOk;
  const std::optional<std::vector<CampaignStatus>> named = CampaignsNamed(r, {target}, &code);
  if (!named) return code;
  const Campaign& campaign = named->front().campaign();
  const std::optional<std::vector<PipelineSpec>> specs = CampaignPipelines(r, campaign.id(), &code);
  if (!specs) return code;
  std::optional<std::vector<Measurement>> measurements =
      CampaignMeasurements(r, campaign.id(), &code);
  if (!measurements) return code;
  Status added = AddDatasetPart(campaign, *specs, *measurements, UnixMillis(), &dataset);
  if (!added.ok()) return r.Fail(kExitFailed, "dataset pack: " + added.message());
  const std::string output = r.inv().Get("--output");
  Status written = WriteDataset(output, dataset);
  if (!written.ok()) return r.Fail(kExitFailed, "dataset pack: " + written.message());
  StatusOr<LoadedDataset> loaded = ReadDataset(output);
  if (!loaded.ok()) return r.Fail(kExitFailed, "dataset pack: " + loaded.status().message());
  r.out() << DescribeDataset(*loaded);
  return kExitOk;
}

// Each campaign's status, models and measurements from the coordinator; the dataset
// (for each pipeline's best) from the file the campaigns replay.
int RunCurves(Runner& r) {
  std::vector<CurveCampaign> campaigns;
  std::string dataset_path, dataset_id;
  int code = kExitOk;
  std::optional<std::vector<CampaignStatus>> named = CampaignsNamed(r, r.inv().args, &code);
  if (!named) return code;
  for (size_t i = 0; i < named->size(); ++i) {
    const std::string& id = r.inv().args[i];
    CurveCampaign campaign;
    campaign.status = std::move((*named)[i]);
    StatusOr<CampaignConfig> config =
        CampaignConfigFromJson(campaign.status.campaign().config_json());
    if (!config.ok())
      return r.Fail(kExitFailed, "curves: " + id + ": " + config.status().message());
    if (!config->has_replay()) {
      return r.Fail(kExitFailed, "curves: campaign " + id + " is not a replay campaign");
    }
    if (dataset_id.empty()) {
      dataset_path = config->replay().dataset();
      dataset_id = config->replay().dataset_id();
    } else if (config->replay().dataset_id() != dataset_id) {
      return r.Fail(kExitFailed, "curves: campaign " + id + " replays dataset " +
                                     config->replay().dataset_id() + ", the first one " +
                                     dataset_id);
    }
    std::optional<std::vector<Model>> models =
        CampaignModels(r, campaign.status.campaign().id(), &code);
    if (!models) return code;
    campaign.models = std::move(*models);
    std::optional<std::vector<Measurement>> measurements =
        CampaignMeasurements(r, campaign.status.campaign().id(), &code);
    if (!measurements) return code;
    campaign.measurements = std::move(*measurements);
    campaigns.push_back(std::move(campaign));
  }
  StatusOr<LoadedDataset> dataset = ReadDataset(dataset_path);
  if (!dataset.ok()) return r.Fail(kExitInvalidInput, "curves: " + dataset.status().message());
  if (dataset->id != dataset_id) {
    return r.Fail(kExitInvalidInput, "curves: '" + dataset_path + "' is now dataset " +
                                         dataset->id + ", the campaigns replayed " + dataset_id);
  }
  const CurveReport report = RenderLearningCurves(campaigns, DatasetBestRuntimes(dataset->data));
  r.out() << report.text;
  if (!r.inv().Has("--output")) return kExitOk;
  const std::string dir = r.inv().Get("--output");
  Status written = WriteFileAtomically(dir + "/curves.md", report.text);
  for (const auto& [name, svg] : report.charts) {
    if (written.ok()) written = WriteFileAtomically(dir + "/" + name, svg);
  }
  if (!written.ok()) return r.Fail(kExitFailed, "curves: " + written.message());
  r.out() << "wrote " << dir << "/curves.md and " << report.charts.size() << " charts\n";
  return kExitOk;
}

}  // namespace schedfarm
