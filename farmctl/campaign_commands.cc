#include "farmctl/commands.h"

#include <chrono>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "common/files.h"
#include "farmctl/compare.h"
#include "farmctl/render.h"
#include "farmctl/report.h"
#include "farmctl/rounds.h"
#include "farmctl/runner.h"
#include "farmctl/submission.h"
#include "farmctl/watch_log.h"

namespace schedfarm {
namespace {

constexpr int kStatusPipelinesPerCampaign = 10;
constexpr auto kWatchInterval = std::chrono::seconds(1);

}  // namespace

int RunSubmit(Runner& r) {
  StatusOr<SubmitCampaign> submit = BuildSubmission(r.inv().args[0]);
  if (!submit.ok()) return r.Fail(kExitInvalidInput, submit.status().message());
  ClientRequest request;
  *request.mutable_submit() = std::move(*submit);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_submitted, "campaign", &code);
  if (!reply) return code;
  return Print(r, *reply, "submitted " + RenderCampaignLine(reply->submitted()));
}

// Checks the campaign file as submit does and prints it as it would run; needs no
// coordinator.
int RunCheck(Runner& r) {
  CampaignConfig config;
  StatusOr<SubmitCampaign> submit = BuildSubmission(r.inv().args[0], &config);
  if (!submit.ok()) return r.Fail(kExitInvalidInput, submit.status().message());
  r.out() << (r.json() ? ToJsonLine(config) + "\n" : RenderCampaignCheck(config, *submit));
  return kExitOk;
}

int RunStatus(Runner& r) {
  ClientRequest request;
  const bool one = !r.inv().args.empty();
  request.mutable_status()->set_campaign(one ? r.inv().args[0] : "");
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_status, "status", &code);
  if (!reply) return code;
  return Print(r, *reply, RenderStatus(reply->status(), one ? 0 : kStatusPipelinesPerCampaign));
}

int RunWatch(Runner& r) {
  std::string campaign = r.inv().args.empty() ? "" : r.inv().args[0];
  WatchLog log;  // output that is not a terminal: one line per change
  const auto watch_started = std::chrono::steady_clock::now();
  while (true) {
    const auto started = std::chrono::steady_clock::now();
    ClientRequest request;
    request.mutable_status()->set_campaign(campaign);
    int code = kExitOk;
    const auto reply = r.Call(request, &ClientReply::has_status, "status", &code);
    if (!reply) return code;
    const StatusReply& status = reply->status();
    if (status.campaigns().empty()) return r.Fail(kExitFailed, "watch: no campaign to watch");
    if (campaign.empty()) campaign = status.campaigns(0).campaign().id();
    if (r.json()) {
      r.out() << ToJsonLine(*reply) << "\n";
    } else if (r.out_is_tty()) {
      r.out() << "\x1b[H\x1b[2J" << RenderWatch(status);
    } else if (r.inv().Has("--once")) {
      r.out() << RenderWatch(status);
    } else {
      const std::chrono::duration<double> seconds = started - watch_started;
      for (const std::string& line : log.Update(status.campaigns(0), seconds.count())) {
        r.out() << line << "\n";
      }
    }
    r.out().flush();
    switch (status.campaigns(0).campaign().state()) {
      case CAMPAIGN_DONE:
        return kExitOk;
      case CAMPAIGN_CANCELLED:
      case CAMPAIGN_FAILED:
        return kExitCampaignUnsuccessful;
      default:
        break;
    }
    if (r.inv().Has("--once")) return kExitOk;
    std::this_thread::sleep_until(started + kWatchInterval);
  }
}

int RunBest(Runner& r) {
  ClientRequest request;
  BestRequest* best = request.mutable_best();
  best->set_campaign(r.inv().args[0]);
  best->set_pipeline_id(r.inv().Get("--pipeline"));
  best->set_k(1);
  if (r.inv().Has("-k")) {
    StatusOr<int> k = ParsePositiveInt("-k", r.inv().Get("-k"));
    if (!k.ok()) return r.Fail(kExitUsage, k.status().message());
    best->set_k(*k);
  }
  if (!r.inv().Has("--pipeline")) {
    // A network campaign's best is the whole network's: its assembly pipeline's.
    int code = kExitOk;
    const auto reply = r.CampaignStatus(r.inv().args[0], &code);
    if (!reply) return code;
    for (const CampaignStatus& campaign : reply->status().campaigns()) {
      StatusOr<CampaignConfig> config = CampaignConfigFromJson(campaign.campaign().config_json());
      if (config.ok() && config->has_network() && campaign.campaign().pipeline_ids_size() > 1) {
        best->set_pipeline_id(campaign.campaign().pipeline_ids(1));
      }
    }
  }
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_best, "best schedules", &code);
  if (!reply) return code;
  if (r.json()) return Print(r, *reply, "");
  StatusOr<std::string> text = RenderBest(reply->best());
  if (!text.ok()) return r.Fail(kExitFailed, "best: " + text.status().message());
  return Print(r, *reply, *text);
}

// pause, resume and cancel: one CampaignRef each.
int RunCampaignAction(Runner& r) {
  ClientRequest request;
  CampaignRef* ref = r.inv().command == "pause"    ? request.mutable_pause()
                     : r.inv().command == "resume" ? request.mutable_resume()
                                                   : request.mutable_cancel();
  ref->set_campaign(r.inv().args[0]);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_campaign, "campaign", &code);
  if (!reply) return code;
  return Print(r, *reply, RenderCampaignLine(reply->campaign()));
}

// Every campaign's status first (so an unknown one fails before any long read), then
// the tally of each one's measurements, then the comparison.
int RunCompare(Runner& r) {
  std::set<std::string> named;
  for (const std::string& id : r.inv().args) {
    if (!named.insert(id).second) {
      return r.Fail(kExitUsage, "CAMPAIGN " + id + " of 'compare' given twice");
    }
  }
  ComparisonCut cut;
  if (r.inv().Has("--first")) {
    StatusOr<int> n = ParsePositiveInt("--first", r.inv().Get("--first"));
    if (!n.ok()) return r.Fail(kExitUsage, n.status().message());
    cut.first = *n;
  }
  if (r.inv().Has("--time")) {
    const StatusOr<double> seconds = ParsePositiveDuration("--time", r.inv().Get("--time"), "7.5m");
    if (!seconds.ok()) return r.Fail(kExitUsage, seconds.status().message());
    cut.seconds = *seconds;
  }
  std::vector<ComparedCampaign> campaigns;
  for (const std::string& id : r.inv().args) {
    int code = kExitOk;
    std::optional<CampaignStatus> status = OneCampaignStatus(r, id, &code);
    if (!status) return code;
    const int64_t submitted = status->campaign().submitted_unix_ms();
    campaigns.push_back({std::move(*status), MeasurementTally(cut, submitted)});
  }
  for (ComparedCampaign& campaign : campaigns) {
    const int code = ForEachMeasurement(r, campaign.status.campaign().id(),
                                        [&](const StoredMeasurementRecord& record) {
                                          campaign.tally.Add(record.measurement());
                                          return Status::Ok();
                                        });
    if (code != kExitOk) return code;
  }
  const Comparison comparison = CompareCampaigns(std::move(campaigns));
  r.out() << (r.json() ? ToJsonLine(ComparisonToJson(comparison)) + "\n"
                       : RenderComparison(comparison));
  return kExitOk;
}

int RunRounds(Runner& r) {
  const std::string& campaign = r.inv().args[0];
  ValueIterationReport report;
  int code = kExitOk;
  std::optional<CampaignStatus> status = OneCampaignStatus(r, campaign, &code);
  if (!status) return code;
  report.status = std::move(*status);
  ClientRequest rounds;
  rounds.mutable_value_rounds()->set_campaign(campaign);
  const auto rounds_reply = r.Call(rounds, &ClientReply::has_value_rounds, "value rounds", &code);
  if (!rounds_reply) return code;
  if (r.json()) return Print(r, *rounds_reply, "");
  report.rounds.assign(rounds_reply->value_rounds().rounds().begin(),
                       rounds_reply->value_rounds().rounds().end());
  std::optional<std::vector<Model>> models = CampaignModels(r, campaign, &code);
  if (!models) return code;
  report.models = std::move(*models);
  std::optional<std::vector<Measurement>> measurements = CampaignMeasurements(r, campaign, &code);
  if (!measurements) return code;
  report.measurements = std::move(*measurements);
  const std::optional<std::vector<PipelineSpec>> pipelines = CampaignPipelines(r, campaign, &code);
  if (!pipelines) return code;
  const auto& ids = report.status.campaign().pipeline_ids();
  for (int i = 0; i < ids.size() && i < static_cast<int>(pipelines->size()); ++i) {
    report.sources[ids[i]] = (*pipelines)[i].source();
  }
  r.out() << RenderValueRounds(report);
  return kExitOk;
}

// The campaign's status first (an unknown campaign fails before any long read), its
// models, then its measurements; the page is written whole or not at all.
int RunReport(Runner& r) {
  ReportInput input;
  int code = kExitOk;
  std::optional<CampaignStatus> status = OneCampaignStatus(r, r.inv().args[0], &code);
  if (!status) return code;
  input.status = std::move(*status);
  const std::string& id = input.status.campaign().id();
  std::optional<std::vector<Model>> models = CampaignModels(r, id, &code);
  if (!models) return code;
  input.models = std::move(*models);
  std::optional<std::vector<Measurement>> measurements = CampaignMeasurements(r, id, &code);
  if (!measurements) return code;
  input.measurements = std::move(*measurements);
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  input.generated = std::string("farmctl report, ") + when;
  const std::string page = RenderCampaignReport(input);
  if (!r.inv().Has("--output")) {
    r.out() << page;
    return kExitOk;
  }
  const std::string output = r.inv().Get("--output");
  const Status written = WriteFileAtomically(output, page);
  if (!written.ok()) return r.Fail(kExitFailed, "report: " + written.message());
  r.out() << "wrote " << output << " (" << input.measurements.size() << " results, "
          << input.models.size() << " models)\n";
  return kExitOk;
}

}  // namespace schedfarm
