#include "farmctl/runner.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>

#include "common/duration.h"
#include "common/text.h"
#include "farmctl/render.h"
#include "protocol/security.h"
#include "storage/export.h"

namespace schedfarm {
namespace {

constexpr int kTryTimeoutMs = 5000;
constexpr double kDefaultRetrySeconds = 30;
constexpr int kExportPageRows = 500;

// A positive number of seconds, for --retry-s.
StatusOr<double> ParseSeconds(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 86400) {
    return Status::Error("flag " + flag + ": expected seconds between 0 and 86400, got '" + text +
                         "'");
  }
  return v;
}

// The base path of a key pair given as PATH, PATH.key or PATH.pub.
std::string KeyPairBase(const std::string& path) {
  for (const std::string suffix : {".key", ".pub"}) {
    if (path.size() > suffix.size() && EndsWith(path, suffix)) {
      return path.substr(0, path.size() - suffix.size());
    }
  }
  return path;
}

}  // namespace

int Runner::Fail(int code, const std::string& message) {
  io_.err << "farmctl: " << message << "\n";
  if (code == kExitUsage) io_.err << "\n" << usage_;
  return code;
}

std::optional<ClientReply> Runner::CampaignStatus(const std::string& campaign, int* exit_code) {
  ClientRequest request;
  request.mutable_status()->set_campaign(campaign);
  return Call(request, &ClientReply::has_status, "status", exit_code);
}

std::optional<ClientReply> Runner::Call(const ClientRequest& request,
                                        bool (ClientReply::*has_body)() const,
                                        const char* body_name, int* exit_code) {
  if (!client_) {
    const int code = Connect();
    if (code != kExitOk) {
      *exit_code = code;
      return std::nullopt;
    }
  }
  CallFailure failure = CallFailure::kUnreachable;
  StatusOr<ClientReply> reply = client_->Call(request, &failure);
  if (!reply.ok()) {
    std::string message = reply.status().message();
    if (failure == CallFailure::kUnreachable) {
      message +=
          "; is farm-coordinator running there? (--coordinator or "
          "$SCHEDFARM_COORDINATOR name it, --retry-s sets how long to try)";
    }
    *exit_code = Fail(kExitUnreachable, message);
    return std::nullopt;
  }
  if (reply->code() != CLIENT_OK) {
    if (json()) out() << ToJsonLine(*reply) << "\n";
    *exit_code = Fail(kExitFailed, inv_.command + ": " + reply->error() + " (" +
                                       ClientErrorCode_Name(reply->code()) + ")");
    return std::nullopt;
  }
  if (!((*reply).*has_body)()) {
    *exit_code = Fail(
        kExitFailed, "the coordinator's reply to '" + inv_.command + "' carries no " + body_name);
    return std::nullopt;
  }
  return std::move(*reply);
}

int Runner::Connect() {
  FarmClientOptions options;
  const char* env = std::getenv("SCHEDFARM_COORDINATOR");
  options.endpoint = inv_.Get("--coordinator",
                              env != nullptr && *env != '\0' ? env : kDefaultCoordinatorEndpoint);
  double retry_seconds = kDefaultRetrySeconds;
  if (inv_.Has("--retry-s")) {
    StatusOr<double> parsed = ParseSeconds("--retry-s", inv_.Get("--retry-s"));
    if (!parsed.ok()) return Fail(kExitUsage, parsed.status().message());
    retry_seconds = *parsed;
  }
  options.total_timeout_ms = static_cast<int>(retry_seconds * 1000);
  options.try_timeout_ms = std::min(kTryTimeoutMs, options.total_timeout_ms);
  if (inv_.Has("--curve-key")) {
    StatusOr<CurveKeyPair> keys = ReadKeyPair(KeyPairBase(inv_.Get("--curve-key")));
    if (!keys.ok()) return Fail(kExitInvalidInput, "--curve-key: " + keys.status().message());
    StatusOr<std::string> server = ReadPublicKey(inv_.Get("--server-key"));
    if (!server.ok()) {
      return Fail(kExitInvalidInput, "--server-key: " + server.status().message());
    }
    options.own_keys = *keys;
    options.server_public_key = *server;
  }
  StatusOr<std::unique_ptr<FarmClient>> client = FarmClient::Create(options);
  if (!client.ok()) return Fail(kExitUsage, "--coordinator: " + client.status().message());
  client_ = std::move(*client);
  return kExitOk;
}

int Print(Runner& r, const ClientReply& reply, const std::string& text) {
  r.out() << (r.json() ? ToJsonLine(reply) + "\n" : text);
  return kExitOk;
}

int ForEachMeasurement(Runner& r, const std::string& campaign,
                       const std::function<Status(const StoredMeasurementRecord&)>& row) {
  uint64_t from_seq = 0;
  while (true) {
    ClientRequest request;
    ExportRequest* page = request.mutable_export_measurements();
    page->set_campaign(campaign);
    page->set_from_seq(from_seq);
    page->set_max_rows(kExportPageRows);
    int code = kExitOk;
    const auto reply = r.Call(request, &ClientReply::has_export_page, "export page", &code);
    if (!reply) return code;
    const ExportReply& got = reply->export_page();
    for (const StoredMeasurementRecord& record : got.rows()) {
      Status handled = row(record);
      if (!handled.ok()) return r.Fail(kExitFailed, r.inv().command + ": " + handled.message());
    }
    if (got.done()) return kExitOk;
    if (got.next_seq() <= from_seq && got.rows().empty()) {
      return r.Fail(kExitFailed, r.inv().command + ": the coordinator's page from seq " +
                                     std::to_string(from_seq) + " made no progress");
    }
    from_seq = got.next_seq();
  }
}

std::optional<std::vector<CampaignStatus>> CampaignsNamed(Runner& r,
                                                          const std::vector<std::string>& refs,
                                                          int* code) {
  std::vector<CampaignStatus> named;
  for (const std::string& ref : refs) {
    const auto reply = r.CampaignStatus(ref, code);
    if (!reply) return std::nullopt;
    if (reply->status().campaigns().empty()) {
      *code = r.Fail(kExitFailed, r.inv().command + ": no campaign '" + ref + "'");
      return std::nullopt;
    }
    named.push_back(reply->status().campaigns(0));
  }
  return named;
}

std::optional<CampaignStatus> OneCampaignStatus(Runner& r, const std::string& ref, int* code) {
  const auto reply = r.CampaignStatus(ref, code);
  if (!reply) return std::nullopt;
  if (reply->status().campaigns_size() != 1) {
    *code = r.Fail(kExitFailed, r.inv().command + ": the coordinator's status of " + ref +
                                    " carries " +
                                    std::to_string(reply->status().campaigns_size()) +
                                    " campaigns");
    return std::nullopt;
  }
  return reply->status().campaigns(0);
}

std::optional<std::vector<Model>> CampaignModels(Runner& r, const std::string& campaign,
                                                 int* code) {
  ClientRequest request;
  request.mutable_models()->set_campaign(campaign);
  const auto reply = r.Call(request, &ClientReply::has_models, "models", code);
  if (!reply) return std::nullopt;
  return std::vector<Model>(reply->models().models().begin(), reply->models().models().end());
}

std::optional<std::vector<PipelineSpec>> CampaignPipelines(Runner& r, const std::string& campaign,
                                                           int* code) {
  ClientRequest request;
  request.mutable_pipelines()->set_campaign(campaign);
  const auto reply = r.Call(request, &ClientReply::has_pipelines, "pipelines", code);
  if (!reply) return std::nullopt;
  return std::vector<PipelineSpec>(reply->pipelines().pipelines().begin(),
                                   reply->pipelines().pipelines().end());
}

std::optional<std::vector<Measurement>> CampaignMeasurements(Runner& r,
                                                             const std::string& campaign,
                                                             int* code) {
  std::vector<Measurement> measurements;
  *code = ForEachMeasurement(r, campaign, [&](const StoredMeasurementRecord& record) {
    measurements.push_back(record.measurement());
    return Status::Ok();
  });
  if (*code != kExitOk) return std::nullopt;
  return measurements;
}

StatusOr<int> ParsePositiveInt(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v <= 0 || v > 1000000) {
    return Status::Error("flag " + flag + ": expected a positive integer, got '" + text + "'");
  }
  return static_cast<int>(v);
}

StatusOr<double> ParsePositiveDuration(const std::string& flag, const std::string& text,
                                       const std::string& example) {
  const std::optional<double> seconds = DurationSeconds(text);
  if (!seconds || !(*seconds > 0)) {
    return Status::Error(flag + " '" + text + "' is not a duration (a number, then ms, s, m or h: " +
                         example + ")");
  }
  return *seconds;
}

}  // namespace schedfarm
