// Internal to farmctl/: what every command handler stands on. An invocation (the
// command, its arguments and flags, parsed by cli.cc), the Runner that holds it with
// the connection to the coordinator, checks every reply and prints errors with their
// exit codes, and the helpers several commands share: paging through a campaign's
// measurements, resolving campaign names, parsing numeric flags.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "farmctl/cli.h"
#include "protocol/control_client.h"
#include "schedfarm.pb.h"

namespace schedfarm {

struct Invocation {
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> flags;  // a flag without a value maps to ""

  bool Has(const std::string& flag) const { return flags.count(flag) > 0; }
  std::string Get(const std::string& flag, const std::string& fallback = "") const {
    const auto it = flags.find(flag);
    return it == flags.end() ? fallback : it->second;
  }
};

// Runs one command: the connection to the coordinator, the calls and the error
// reporting with their exit codes.
class Runner {
 public:
  // `usage` is printed after a usage error.
  Runner(Invocation inv, const CliStreams& io, const char* usage)
      : inv_(std::move(inv)), io_(io), usage_(usage) {}

  const Invocation& inv() const { return inv_; }
  std::ostream& out() { return io_.out; }
  const CliStreams& io() const { return io_; }
  bool out_is_tty() const { return io_.out_is_tty; }
  bool json() const { return inv_.Has("--json"); }

  // Prints "farmctl: message" (and the usage after a usage error); returns `code`.
  int Fail(int code, const std::string& message);

  // The coordinator's status of `campaign` (Call of a StatusRequest).
  std::optional<ClientReply> CampaignStatus(const std::string& campaign, int* exit_code);

  // Sends `request` and checks the reply's code and body (`has_body`). Returns the
  // reply, or nothing with `*exit_code` set and the error printed.
  std::optional<ClientReply> Call(const ClientRequest& request,
                                  bool (ClientReply::*has_body)() const, const char* body_name,
                                  int* exit_code);

 private:
  int Connect();

  Invocation inv_;
  const CliStreams& io_;
  const char* usage_;
  std::unique_ptr<FarmClient> client_;
};

// Prints the reply as JSON or as `text`.
int Print(Runner& r, const ClientReply& reply, const std::string& text);

// Hands every measurement of `campaign` to `row` in seq order, reading the
// coordinator's export pages until the last. Returns the exit code, with the error
// printed: the coordinator's, a page that makes no progress, or `row`'s (exit 1).
int ForEachMeasurement(Runner& r, const std::string& campaign,
                       const std::function<Status(const StoredMeasurementRecord&)>& row);

// For each of `refs` (an id or a name), the status of the campaign it names; nothing
// (with *code set and the coordinator's error printed) when one names none.
std::optional<std::vector<CampaignStatus>> CampaignsNamed(Runner& r,
                                                          const std::vector<std::string>& refs,
                                                          int* code);

// The status of the one campaign `ref` (an id or a name) names; nothing, with *code set
// and the error printed, when the coordinator's reply carries another number of them.
std::optional<CampaignStatus> OneCampaignStatus(Runner& r, const std::string& ref, int* code);

// Every stored model of `campaign`, as the coordinator lists them.
std::optional<std::vector<Model>> CampaignModels(Runner& r, const std::string& campaign,
                                                 int* code);

// The pipelines of `campaign`, in the campaign's order.
std::optional<std::vector<PipelineSpec>> CampaignPipelines(Runner& r, const std::string& campaign,
                                                           int* code);

// Every measurement of `campaign`, in seq order (ForEachMeasurement, kept).
std::optional<std::vector<Measurement>> CampaignMeasurements(Runner& r,
                                                             const std::string& campaign,
                                                             int* code);

// A positive integer flag value (at most 1,000,000); the error names the flag.
StatusOr<int> ParsePositiveInt(const std::string& flag, const std::string& text);

// A positive duration flag value (common/duration.h) in seconds; the error names the
// flag and gives `example`.
StatusOr<double> ParsePositiveDuration(const std::string& flag, const std::string& text,
                                       const std::string& example);

}  // namespace schedfarm
