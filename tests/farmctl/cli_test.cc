// farmctl's command line run in-process: usage errors (exit 2, naming the flag or
// argument, with the usage), invalid input files (exit 3 with file:line:column, also
// for `local`, before it starts anything), an unreachable coordinator (exit 4),
// refusals (exit 1), watch's end states (0 and 5), --json, export pages, compare,
// keygen and check (the resolved strategy settings of a campaign file, every example
// campaign); the coordinator is a stand-in ROUTER answering with hand-made replies.
#include "farmctl/cli.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/files.h"
#include "control_peer.h"
#include "farmctl/compare.h"
#include "farmctl/render.h"
#include "protocol/security.h"
#include "sample_campaigns.h"
#include "search/registry.h"
#include "storage/export.h"
#include "dataset/dataset.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/synthetic_dataset.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;
using testing_support::CompareSamples;
using testing_support::ControlPeer;
using testing_support::GreedySample;
using testing_support::RandomSample;
using testing_support::SampleCampaign;

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult Farmctl(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunFarmctl(args, {out, err, false});
  return {code, out.str(), err.str()};
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// An endpoint on loopback where nothing listens.
std::string ClosedEndpoint() {
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::router);
  socket.set(zmq::sockopt::linger, 0);
  socket.bind("tcp://127.0.0.1:*");
  return socket.get(zmq::sockopt::last_endpoint);
}

// Writes `text` to `path` and returns the path.
std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

void ExpectUsageError(const std::vector<std::string>& args, const std::string& names) {
  const CliResult r = Farmctl(args);
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_TRUE(Contains(r.err, names)) << "'" << names << "' not in: " << r.err;
  EXPECT_TRUE(Contains(r.err, "usage: farmctl")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(FarmctlCliTest, HelpListsCommandsAndExitCodes) {
  const CliResult r = Farmctl({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* part :
       {"submit FILE", "check FILE", "watch [CAMPAIGN]", "keygen PATH", "compare CAMPAIGN...",
        "local FILE...", "exit codes:", "4  no reply from the coordinator", "5  watch ended"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part;
  }
  EXPECT_EQ(Farmctl({"status", "-h"}).code, kExitOk);
}

TEST(FarmctlCliTest, UsageErrorsNameTheFlagOrArgument) {
  ExpectUsageError({}, "missing COMMAND");
  ExpectUsageError({"launch"}, "unknown command 'launch'");
  ExpectUsageError({"status", "--bogus"}, "unknown flag '--bogus'");
  ExpectUsageError({"status", "--once"}, "flag --once does not apply to 'status'");
  ExpectUsageError({"best"}, "'best' needs CAMPAIGN");
  ExpectUsageError({"submit"}, "'submit' needs FILE");
  ExpectUsageError({"workers", "extra"}, "unexpected argument 'extra'");
  ExpectUsageError({"pause", "c1", "c2"}, "unexpected argument 'c2'");
  ExpectUsageError({"status", "--coordinator"}, "flag --coordinator needs a value");
  ExpectUsageError({"status", "--json=yes"}, "flag --json takes no value");
  ExpectUsageError({"status", "--json", "--json"}, "flag --json given twice");
  ExpectUsageError({"export", "c1", "--json"}, "use --format jsonl");
  ExpectUsageError({"keygen", "k", "--json"}, "flag --json does not apply to 'keygen'");
  ExpectUsageError({"status", "--curve-key", "k"}, "--curve-key needs --server-key");
  ExpectUsageError({"status", "--retry-s", "soon"}, "flag --retry-s");
  ExpectUsageError({"status", "--retry-s=-1"}, "flag --retry-s");
  ExpectUsageError({"best", "c1", "-k", "0"}, "flag -k");
  ExpectUsageError({"export", "c1", "--format", "xml"}, "flag --format");
  ExpectUsageError({"status", "--coordinator", "nowhere"}, "--coordinator");
  ExpectUsageError({"cancel", ""}, "CAMPAIGN of 'cancel' is empty");
  ExpectUsageError({"workers", "--clear"}, "flag --clear needs a value");
  ExpectUsageError({"status", "--clear", "w1"}, "flag --clear does not apply to 'status'");
  ExpectUsageError({"workers", "--clear", ""}, "--clear needs a worker id");
}

TEST(FarmctlCliTest, BadCampaignFileExitsThreeWithLineAndColumn) {
  ScratchDir dir;
  const std::string path = WriteFile(dir.Sub("bad.yaml"),
                                     "name: bad\n"
                                     "pipelines:\n"
                                     "  - zoo: {block: vgg_blok}\n"
                                     "budget: {benchmarks: 10}\n");
  // Checked before any connection: the coordinator's absence does not matter.
  const CliResult r = Farmctl({"submit", path, "--coordinator", ClosedEndpoint()});
  EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
  EXPECT_TRUE(Contains(r.err, path + ":3:")) << r.err;
  EXPECT_TRUE(Contains(r.err, "vgg_blok")) << r.err;
  EXPECT_FALSE(Contains(r.err, "usage:")) << r.err;
  const CliResult missing = Farmctl({"submit", dir.Sub("missing.yaml")});
  EXPECT_EQ(missing.code, kExitInvalidInput) << missing.err;
}

// The line of `text` whose first word is `first` ("" when none): a row of a table.
std::string LineOf(const std::string& text, const std::string& first) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string word;
    if (words >> word && word == first) return line;
  }
  return "";
}

// The second word of that line: the value of a settings row, the source of a pipeline.
std::string ValueOf(const std::string& text, const std::string& first) {
  std::istringstream words(LineOf(text, first));
  std::string name, value;
  words >> name >> value;
  return value;
}

// A greedy campaign that sets one setting of its own and leaves the others at their
// defaults; `strategy_line` replaces its strategy.
std::string GreedyCampaign(
    const std::string& strategy_line = "strategy: {name: greedy, settings: {options: 50}}\n") {
  return "name: g\n"
         "pipelines:\n"
         "  - zoo: {block: vgg_block, spatial_scale: 0.5}\n"
         "  - random: {seeds: [3, 4], max_ops: 5}\n" +
         strategy_line +
         "budget: {benchmarks: 30, wall_time: 5m}\n"
         "baselines: [li2018]\n";
}

TEST(FarmctlCliTest, CheckPrintsTheCampaignASearchStartsFrom) {
  ScratchDir dir;
  const std::string path = WriteFile(
      dir.Sub("seeded.yaml"),
      GreedyCampaign("strategy: {name: greedy, settings: {model_from: dataset-1}}\n"));
  const CliResult r = Farmctl({"check", path, "--coordinator", ClosedEndpoint()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ValueOf(r.out, "model_from"), "dataset-1") << r.out;
}

TEST(FarmctlCliTest, CheckPrintsTheResolvedStrategyPipelinesBudgetAndBaselines) {
  ScratchDir dir;
  const std::string path = WriteFile(dir.Sub("greedy.yaml"), GreedyCampaign());
  // Offline: nothing listens at the coordinator's endpoint.
  const CliResult r = Farmctl({"check", path, "--coordinator", ClosedEndpoint()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, path + ": campaign g is valid")) << r.out;
  EXPECT_TRUE(Contains(r.out, "strategy greedy: one decision per stage")) << r.out;
  // The file's own setting, the registry's default of the other one, and the settings
  // every model strategy has at their defaults.
  EXPECT_EQ(ValueOf(r.out, "options"), "50") << r.out;
  EXPECT_EQ(ValueOf(r.out, "noise"), "0.1") << r.out;
  EXPECT_EQ(ValueOf(r.out, "seed"), "0") << r.out;
  EXPECT_EQ(ValueOf(r.out, "epsilon"), "0.05") << r.out;
  EXPECT_EQ(ValueOf(r.out, "batch"), "16") << r.out;
  EXPECT_EQ(ValueOf(r.out, "retrain_every"), "32") << r.out;
  EXPECT_EQ(ValueOf(r.out, "model"), "gcn") << r.out;
  EXPECT_EQ(ValueOf(r.out, "acquisition"), "exploit") << r.out;
  const std::string model = LineOf(r.out, "model");
  EXPECT_TRUE(Contains(model, PartialMeaningName(FindModelKind("gcn")->partial))) << model;
  EXPECT_TRUE(Contains(model, "spread: the ensemble's stddev")) << model;
  EXPECT_EQ(LineOf(r.out, "model_from"), "") << "shown only when set";
  // The pipelines as submit builds them: the zoo block, then one per random seed.
  EXPECT_TRUE(Contains(r.out, "pipelines: 3\n")) << r.out;
  EXPECT_EQ(ValueOf(r.out, "vgg_block"), "zoo:vgg_block") << r.out;
  EXPECT_TRUE(Contains(r.out, " random:3 ")) << r.out;
  EXPECT_TRUE(Contains(r.out, " random:4 ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "budget: 30 benchmarks, wall time 5m00s\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "baselines: li2018\n")) << r.out;
}

TEST(FarmctlCliTest, CheckPrintsTheAcquisitionWithItsSettings) {
  ScratchDir dir;
  const std::string lcb = WriteFile(
      dir.Sub("lcb.yaml"),
      GreedyCampaign("strategy: {name: model-guided, settings: {acquisition: lcb, kappa: 2.5}}\n"));
  CliResult r = Farmctl({"check", lcb});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ValueOf(r.out, "acquisition"), "lcb") << r.out;
  EXPECT_EQ(ValueOf(r.out, "kappa"), "2.5") << r.out;
  EXPECT_EQ(ValueOf(r.out, "sample_size"), "256") << r.out;
  // The default kappa when the file sets none; no kappa for another acquisition.
  const std::string bare = WriteFile(
      dir.Sub("bare.yaml"), GreedyCampaign("strategy: {name: uncertainty, settings: "
                                           "{acquisition: lcb, model: gbt}}\n"));
  r = Farmctl({"check", bare});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ValueOf(r.out, "kappa"), "1") << r.out;
  const std::string ei = WriteFile(
      dir.Sub("ei.yaml"),
      GreedyCampaign("strategy: {name: model-guided, settings: {acquisition: ei}}\n"));
  r = Farmctl({"check", ei});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ValueOf(r.out, "acquisition"), "ei") << r.out;
  EXPECT_EQ(LineOf(r.out, "kappa"), "") << r.out;
}

TEST(FarmctlCliTest, CheckOfRandomPrintsItsSeedAndNoModelSettings) {
  ScratchDir dir;
  const std::string path = WriteFile(
      dir.Sub("random.yaml"), GreedyCampaign("strategy: {name: random, settings: {seed: 9}}\n"));
  const CliResult r = Farmctl({"check", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ValueOf(r.out, "seed"), "9") << r.out;
  EXPECT_EQ(ValueOf(r.out, "retrain_every"), "default") << r.out;
  EXPECT_EQ(LineOf(r.out, "model"), "") << r.out;
  EXPECT_EQ(LineOf(r.out, "epsilon"), "") << r.out;
}

// A replay campaign: farm-learner proposes even random picks, from the dataset, so the
// model strategies' settings apply; the dataset and its split are named.
TEST(FarmctlCliTest, CheckOfAReplayCampaignNamesTheDatasetAndTheSplit) {
  ScratchDir dir;
  ASSERT_TRUE(WriteDataset(dir.Sub("d.sfds"), testing_support::SyntheticDataset(10, 2)).ok());
  const std::string path = WriteFile(
      dir.Sub("replay.yaml"),
      "name: r\nreplay: {dataset: d.sfds}\nbudget: {benchmarks: 5}\n"
      "strategy: {name: random, settings: {model: gbt, batch: 4, retrain_growth: 0.5}}\n");
  const CliResult r = Farmctl({"check", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "uniform random picks of the dataset's schedules, proposed by "
                              "farm-learner"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "replay of dataset " + dir.Sub("d.sfds") + " (id " +
                                  ReadDataset(dir.Sub("d.sfds")).value().id +
                                  "): 8 pipelines searched, 2 held out for scoring"))
      << r.out;
  EXPECT_EQ(ValueOf(r.out, "model"), "gbt") << r.out;
  EXPECT_EQ(ValueOf(r.out, "batch"), "4") << r.out;
  EXPECT_EQ(ValueOf(r.out, "retrain_growth"), "0.5") << r.out;
  EXPECT_TRUE(Contains(r.out, "pipelines: 8")) << r.out;
}

TEST(FarmctlCliTest, CheckJsonIsTheResolvedConfig) {
  ScratchDir dir;
  const std::string path = WriteFile(dir.Sub("greedy.yaml"), GreedyCampaign());
  const CliResult r = Farmctl({"check", path, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  CampaignConfig config;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &config).ok()) << r.out;
  EXPECT_EQ(config.name(), "g");
  EXPECT_EQ(config.strategy().name(), "greedy");
  EXPECT_EQ(config.strategy().batch(), 16);
  EXPECT_EQ(config.strategy().model(), "gcn");
  std::map<std::string, double> settings;
  for (const StrategySetting& setting : config.strategy().settings()) {
    settings[setting.name()] = setting.value();
  }
  EXPECT_EQ(settings, (std::map<std::string, double>{{"noise", 0.1}, {"options", 50}}));
  EXPECT_EQ(config.budget().benchmarks(), 30);
}

TEST(FarmctlCliTest, CheckOfABadSettingExitsThreeWithLineAndColumn) {
  ScratchDir dir;
  const std::string path = WriteFile(
      dir.Sub("bad.yaml"), GreedyCampaign("strategy: {name: greedy, settings: {noise: 2}}\n"));
  const CliResult r = Farmctl({"check", path});
  EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
  EXPECT_TRUE(Contains(r.err, path + ":5:44: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "strategy.settings.noise")) << r.err;
  EXPECT_FALSE(Contains(r.err, "usage:")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  // A setting of another strategy is an unknown key of this one.
  const std::string other = WriteFile(
      dir.Sub("other.yaml"), GreedyCampaign("strategy: {name: greedy, settings: {width: 4}}\n"));
  const CliResult unknown = Farmctl({"check", other, "--json"});
  EXPECT_EQ(unknown.code, kExitInvalidInput) << unknown.err;
  EXPECT_TRUE(Contains(unknown.err, other + ":5:37: ")) << unknown.err;
  EXPECT_TRUE(Contains(unknown.err, "width")) << unknown.err;
  EXPECT_TRUE(unknown.out.empty()) << unknown.out;

  EXPECT_EQ(Farmctl({"check", dir.Sub("missing.yaml")}).code, kExitInvalidInput);
}

TEST(FarmctlCliTest, CheckUsageErrorsExitTwo) {
  ExpectUsageError({"check"}, "'check' needs FILE");
  ExpectUsageError({"check", "a.yaml", "b.yaml"}, "unexpected argument 'b.yaml'");
  ExpectUsageError({"check", "a.yaml", "--once"}, "flag --once does not apply to 'check'");
  ExpectUsageError({"check", ""}, "FILE of 'check' is empty");
}

TEST(FarmctlCliTest, EveryExampleCampaignPassesCheck) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator("configs/campaigns")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    const CliResult r = Farmctl({"check", path});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_TRUE(Contains(r.out, path + ": campaign ")) << r.out;
    EXPECT_TRUE(Contains(r.out, "\nstrategy ")) << r.out;
    EXPECT_TRUE(Contains(r.out, "\nbudget: ")) << r.out;
  }
  EXPECT_GE(files, 9);
}

TEST(FarmctlCliTest, UnreachableCoordinatorExitsFourNamingEndpoint) {
  const std::string endpoint = ClosedEndpoint();
  const CliResult r = Farmctl({"--coordinator", endpoint, "--retry-s", "1", "status"});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  EXPECT_TRUE(Contains(r.err, "no reply from the coordinator at " + endpoint)) << r.err;
  EXPECT_TRUE(Contains(r.err, "--retry-s")) << r.err;
}

TEST(FarmctlCliTest, EnvironmentNamesTheCoordinator) {
  const std::string endpoint = ClosedEndpoint();
  setenv("SCHEDFARM_COORDINATOR", endpoint.c_str(), 1);
  const CliResult r = Farmctl({"workers", "--retry-s", "0.5"});
  unsetenv("SCHEDFARM_COORDINATOR");
  EXPECT_EQ(r.code, kExitUnreachable);
  EXPECT_TRUE(Contains(r.err, endpoint)) << r.err;
}

TEST(FarmctlCliTest, BadKeyFilesExitThree) {
  ScratchDir dir;
  const CliResult r = Farmctl({"status", "--curve-key", dir.Sub("absent"), "--server-key",
                               dir.Sub("absent.pub"), "--retry-s", "1"});
  EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
  EXPECT_TRUE(Contains(r.err, "--curve-key: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, dir.Sub("absent.key"))) << r.err;
}

TEST(FarmctlCliTest, KeygenWritesAPairOnceWithPrivateSecret) {
  ScratchDir dir;
  const std::string base = dir.Sub("client");
  const CliResult r = Farmctl({"keygen", base});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  struct stat info;
  ASSERT_EQ(stat((base + ".key").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  StatusOr<CurveKeyPair> keys = ReadKeyPair(base);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_TRUE(Contains(r.out, keys->public_key)) << r.out;
  EXPECT_FALSE(Contains(r.out, keys->secret_key));

  const CliResult again = Farmctl({"keygen", base});
  EXPECT_EQ(again.code, kExitFailed);
  EXPECT_TRUE(Contains(again.err, "already exists")) << again.err;
  StatusOr<CurveKeyPair> same = ReadKeyPair(base);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->secret_key, keys->secret_key);
}

ClientReply CampaignReply(const std::string& id, CampaignState state) {
  ClientReply reply;
  Campaign* c = reply.mutable_campaign();
  c->set_id(id);
  c->set_name("quickstart");
  c->set_state(state);
  c->set_budget(40);
  return reply;
}

TEST(FarmctlCliTest, RefusalExitsOneWithTheCoordinatorsError) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    reply.set_code(CLIENT_NOT_FOUND);
    reply.set_error("no campaign 'c-9'");
    return ControlPeer::Reply(request, reply);
  });
  const CliResult r = Farmctl({"pause", "c-9", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_TRUE(Contains(r.err, "pause: no campaign 'c-9' (CLIENT_NOT_FOUND)")) << r.err;
  ASSERT_EQ(peer.seen().size(), 1u);
  EXPECT_EQ(peer.seen()[0].request.pause().campaign(), "c-9");

  const CliResult json = Farmctl({"cancel", "c-9", "--json", "--coordinator", peer.endpoint()});
  EXPECT_EQ(json.code, kExitFailed);
  ClientReply parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok()) << json.out;
  EXPECT_EQ(parsed.code(), CLIENT_NOT_FOUND);
}

TEST(FarmctlCliTest, ModelListAsksForTheKindAndListsEveryVersion) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    for (const char* version : {"c-1-gbt-2", "c-1-gbt-1"}) {
      Model* model = reply.mutable_models()->add_models();
      model->set_kind("gbt");
      model->set_version(version);
    }
    return ControlPeer::Reply(request, reply);
  });
  const CliResult listed =
      Farmctl({"model", "list", "c-1", "--kind", "gbt", "--coordinator", peer.endpoint()});
  EXPECT_EQ(listed.code, kExitOk) << listed.err;
  EXPECT_TRUE(Contains(listed.out, "c-1-gbt-2")) << listed.out;
  EXPECT_TRUE(Contains(listed.out, "c-1-gbt-1")) << listed.out;
  ASSERT_EQ(peer.seen().size(), 1u);
  EXPECT_EQ(peer.seen()[0].request.models().campaign(), "c-1");
  EXPECT_EQ(peer.seen()[0].request.models().kind(), "gbt");
  const CliResult unknown = Farmctl({"model", "drop", "c-1", "--coordinator", peer.endpoint()});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_TRUE(Contains(unknown.err, "unknown action 'drop' (known: eval, list, export)"))
      << unknown.err;
  const CliResult eval_kind =
      Farmctl({"model", "eval", "c-1", "--kind", "gbt", "--coordinator", peer.endpoint()});
  EXPECT_EQ(eval_kind.code, kExitUsage);
  EXPECT_TRUE(Contains(eval_kind.err, "--kind is for model list")) << eval_kind.err;
  EXPECT_EQ(peer.seen().size(), 1u) << "refused before asking the coordinator";
  const CliResult no_output =
      Farmctl({"model", "export", "c-1", "--kind", "gcn", "--coordinator", peer.endpoint()});
  EXPECT_EQ(no_output.code, kExitUsage);
  EXPECT_TRUE(Contains(no_output.err, "--kind and --output are required")) << no_output.err;
  const CliResult list_output =
      Farmctl({"model", "list", "c-1", "--output", "x.pt", "--coordinator", peer.endpoint()});
  EXPECT_EQ(list_output.code, kExitUsage);
  EXPECT_TRUE(Contains(list_output.err, "model list: --output is for model export"))
      << list_output.err;
  EXPECT_EQ(peer.seen().size(), 1u) << "refused before asking the coordinator";
}

TEST(FarmctlCliTest, CampaignActionsSendTheirKindAndPrintTheCampaign) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    const CampaignState state = request.has_pause()    ? CAMPAIGN_PAUSED
                                : request.has_resume() ? CAMPAIGN_RUNNING
                                                       : CAMPAIGN_CANCELLED;
    return ControlPeer::Reply(request, CampaignReply("c-1", state));
  });
  EXPECT_TRUE(Contains(Farmctl({"pause", "c-1", "--coordinator", peer.endpoint()}).out,
                       "campaign c-1 (quickstart): paused"));
  EXPECT_TRUE(Contains(Farmctl({"resume", "c-1", "--coordinator", peer.endpoint()}).out,
                       "campaign c-1 (quickstart): running"));
  const CliResult cancel = Farmctl({"cancel", "c-1", "--coordinator", peer.endpoint(), "--json"});
  EXPECT_EQ(cancel.code, kExitOk);
  EXPECT_TRUE(Contains(cancel.out, "\"state\":\"CAMPAIGN_CANCELLED\"")) << cancel.out;
  EXPECT_EQ(std::count(cancel.out.begin(), cancel.out.end(), '\n'), 1);
  const auto seen = peer.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen[0].request.has_pause());
  EXPECT_TRUE(seen[1].request.has_resume());
  EXPECT_TRUE(seen[2].request.has_cancel());
}

TEST(FarmctlCliTest, SubmitSendsTheBuiltCampaign) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    reply.mutable_submitted()->set_id("c-42");
    reply.mutable_submitted()->set_name("quickstart");
    reply.mutable_submitted()->set_state(CAMPAIGN_RUNNING);
    reply.mutable_submitted()->set_budget(40);
    return ControlPeer::Reply(request, reply);
  });
  const CliResult r =
      Farmctl({"submit", "configs/campaigns/quickstart.yaml", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "submitted campaign c-42 (quickstart): running")) << r.out;
  const auto seen = peer.seen();
  ASSERT_EQ(seen.size(), 1u);
  const SubmitCampaign& sent = seen[0].request.submit();
  EXPECT_EQ(sent.file_name(), "configs/campaigns/quickstart.yaml");
  EXPECT_TRUE(Contains(sent.yaml_source(), "name: quickstart"));
  EXPECT_EQ(sent.pipelines_size(), 3);
}

StatusReply OneCampaign(CampaignState state) {
  StatusReply status;
  Campaign* c = status.add_campaigns()->mutable_campaign();
  c->set_id("c-5");
  c->set_name("quickstart");
  c->set_state(state);
  c->set_budget(40);
  c->mutable_counters()->set_finished(state == CAMPAIGN_DONE ? 40 : 7);
  return status;
}

// A peer whose status replies report the campaign in `state`.
ControlPeer::Handler StatusIn(CampaignState state) {
  return [state](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    *reply.mutable_status() = OneCampaign(state);
    return ControlPeer::Reply(request, reply);
  };
}

TEST(FarmctlCliTest, WatchEndsWithTheCampaign) {
  ControlPeer done(StatusIn(CAMPAIGN_DONE));
  const CliResult ok = Farmctl({"watch", "c-5", "--coordinator", done.endpoint()});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_TRUE(Contains(ok.out, "40/40 benchmarks (100%)")) << ok.out;
  EXPECT_EQ(done.seen()[0].request.status().campaign(), "c-5");

  ControlPeer cancelled(StatusIn(CAMPAIGN_CANCELLED));
  EXPECT_EQ(Farmctl({"watch", "--coordinator", cancelled.endpoint()}).code,
            kExitCampaignUnsuccessful);
  ControlPeer failed(StatusIn(CAMPAIGN_FAILED));
  EXPECT_EQ(Farmctl({"watch", "--coordinator", failed.endpoint()}).code, kExitCampaignUnsuccessful);
}

TEST(FarmctlCliTest, WatchRefreshesUntilTheEndAndFollowsTheNewestCampaign) {
  // Running for two refreshes, then done; without CAMPAIGN the newest is followed by id.
  ControlPeer peer([](const ClientRequest& request, int n) -> std::optional<Envelope> {
    ClientReply reply;
    *reply.mutable_status() = OneCampaign(n < 2 ? CAMPAIGN_RUNNING : CAMPAIGN_DONE);
    return ControlPeer::Reply(request, reply);
  });
  const CliResult r = Farmctl({"watch", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  const auto seen = peer.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].request.status().campaign(), "");
  EXPECT_EQ(seen[1].request.status().campaign(), "c-5");
  // Off a terminal, a line per change: the start, then the end's progress and state;
  // nothing for the refresh that changed nothing.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
  EXPECT_TRUE(Contains(r.out, "campaign c-5 running, 7/40 benchmarks")) << r.out;
  EXPECT_TRUE(Contains(r.out, ": 40/40 benchmarks (100%)")) << r.out;
  EXPECT_TRUE(Contains(r.out, ": running -> done\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "\x1b[")) << "no ANSI codes off a terminal";

  std::ostringstream out, err;
  ControlPeer once(StatusIn(CAMPAIGN_RUNNING));
  EXPECT_EQ(RunFarmctl({"watch", "--once", "--coordinator", once.endpoint()}, {out, err, true}),
            kExitOk);
  EXPECT_EQ(out.str().rfind("\x1b[H\x1b[2J", 0), 0u) << "a terminal is redrawn in place";
  EXPECT_EQ(once.seen().size(), 1u);
}

TEST(FarmctlCliTest, StatusJsonIsTheReply) {
  ControlPeer peer(StatusIn(CAMPAIGN_RUNNING));
  const CliResult r = Farmctl({"status", "--json", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ClientReply parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok()) << r.out;
  ASSERT_EQ(parsed.status().campaigns_size(), 1);
  EXPECT_EQ(parsed.status().campaigns(0).campaign().counters().finished(), 7);
  EXPECT_EQ(parsed.request_id(), peer.seen()[0].request.request_id());
  EXPECT_TRUE(peer.seen()[0].request.has_status()) << "a status request of every campaign";
}

TEST(FarmctlCliTest, ExportReadsEveryPage) {
  // The campaign's status, then three pages of 2, 1 and 0 rows (seqs 3, 8, 11), then done.
  ControlPeer peer([](const ClientRequest& request, int n) -> std::optional<Envelope> {
    static const std::vector<std::vector<uint64_t>> kPages = {{3, 8}, {11}, {}};
    ClientReply reply;
    if (request.has_status()) {
      Campaign* campaign = reply.mutable_status()->add_campaigns()->mutable_campaign();
      campaign->set_id("c-5");
      campaign->set_name("nightly");
      return ControlPeer::Reply(request, reply);
    }
    ExportReply* page = reply.mutable_export_page();
    for (uint64_t seq : kPages[n - 1]) {
      StoredMeasurementRecord* row = page->add_rows();
      row->set_seq(seq);
      row->mutable_measurement()->mutable_candidate()->set_campaign("c-5");
      row->mutable_measurement()->set_status(OK);
    }
    page->set_next_seq(n == 1 ? 9 : 12);
    page->set_done(n == 3);
    return ControlPeer::Reply(request, reply);
  });
  ScratchDir dir;
  const std::string output = dir.Sub("rows.csv");
  const CliResult r =
      Farmctl({"export", "nightly", "--output", output, "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "exported 3 measurements to " + output)) << r.out;
  std::ifstream in(output);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("seq,campaign,", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("3,c-5,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("8,c-5,", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("11,c-5,", 0), 0u) << lines[3];
  EXPECT_FALSE(fs::exists(output + ".partial"));
  const auto seen = peer.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].request.status().campaign(), "nightly");
  EXPECT_EQ(seen[1].request.export_measurements().from_seq(), 0u);
  EXPECT_EQ(seen[2].request.export_measurements().from_seq(), 9u);
  EXPECT_EQ(seen[3].request.export_measurements().from_seq(), 12u);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].request.export_measurements().campaign(), "c-5") << "the id the name named";
  }
}

// dataset pack: the campaign's record, its pipelines and every measurement from the
// coordinator, written as one dataset file that `dataset show` describes.
TEST(FarmctlCliTest, DatasetPackWritesTheCampaignAsADataset) {
  const Dataset synthetic = testing_support::SyntheticDataset(2, 3);
  ControlPeer peer([&](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    if (request.has_status()) {
      Campaign* c = reply.mutable_status()->add_campaigns()->mutable_campaign();
      c->set_id("data-1");
      c->set_name("data");
      c->set_yaml_source("name: data\n");
    } else if (request.has_pipelines()) {
      *reply.mutable_pipelines()->mutable_pipelines() = synthetic.pipelines();
    } else {
      ExportReply* page = reply.mutable_export_page();
      for (int i = 0; i < synthetic.measurements_size(); ++i) {
        StoredMeasurementRecord* row = page->add_rows();
        row->set_seq(i + 1);
        *row->mutable_measurement() = synthetic.measurements(i);
      }
      page->set_next_seq(synthetic.measurements_size() + 1);
      page->set_done(true);
    }
    return ControlPeer::Reply(request, reply);
  });
  ScratchDir dir;
  const std::string output = dir.Sub("data.sfds");
  const CliResult r = Farmctl(
      {"dataset", "pack", "data", "--output", output, "--coordinator", peer.endpoint()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "campaign data (data-1): 7 measurements")) << r.out;
  EXPECT_TRUE(Contains(r.out, "2 pipelines, 6 distinct schedules (1 measured more than once)"))
      << r.out;
  StatusOr<LoadedDataset> loaded = ReadDataset(output);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->data.parts(0).yaml_source(), "name: data\n");
  EXPECT_EQ(loaded->data.measurements_size(), 7);

  // Packing the same campaign into it again is refused, and nothing is written.
  const CliResult again = Farmctl({"dataset", "pack", "data", "--into", output, "--output",
                                   dir.Sub("twice.sfds"), "--coordinator", peer.endpoint()});
  EXPECT_EQ(again.code, kExitFailed) << again.err;
  EXPECT_TRUE(Contains(again.err, "campaign data-1 (data) is in the dataset already")) << again.err;
  EXPECT_FALSE(fs::exists(dir.Sub("twice.sfds")));

  const CliResult shown = Farmctl({"dataset", "show", output});
  EXPECT_EQ(shown.code, kExitOk) << shown.err;
  EXPECT_EQ(shown.out, r.out);

  // The one schedule measured twice, its second run 10% slower: MAPE 10%.
  const CliResult noise = Farmctl({"dataset", "noise", output});
  EXPECT_EQ(noise.code, kExitOk) << noise.err;
  EXPECT_TRUE(Contains(noise.out, "noise floor (all)")) << noise.out;
  EXPECT_TRUE(Contains(noise.out, " 10.0 ")) << noise.out;
}

TEST(FarmctlCliTest, DatasetErrors) {
  ExpectUsageError({"dataset", "frob", "x"}, "dataset: unknown action 'frob' (known: pack, show, noise)");
  ExpectUsageError({"dataset", "pack", "c-1"}, "dataset pack needs --output FILE");
  ExpectUsageError({"dataset", "show"}, "'dataset' needs TARGET");
  ScratchDir dir;
  const CliResult missing = Farmctl({"dataset", "show", dir.Sub("none.sfds")});
  EXPECT_EQ(missing.code, kExitInvalidInput);
  EXPECT_TRUE(Contains(missing.err, "none.sfds': cannot open")) << missing.err;
  const CliResult not_dataset =
      Farmctl({"dataset", "show", WriteFile(dir.Sub("x.sfds"), "name: x\n")});
  EXPECT_EQ(not_dataset.code, kExitInvalidInput);
  EXPECT_TRUE(Contains(not_dataset.err, "not a schedfarm dataset")) << not_dataset.err;
}

// The rows' GFLOP/s come from the FLOPs of the status's pipelines: 2e6 FLOPs in 1 ms on
// a host with a 4 GFLOP/s peak at 1 thread is 2 GFLOP/s, half of it.
TEST(FarmctlCliTest, ExportToStandardOutputAsJsonLines) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    if (request.has_status()) {
      PipelineProgress* p = reply.mutable_status()->add_campaigns()->add_pipelines();
      p->set_pipeline_id("p-5");
      p->set_flops(2e6);
      p->set_bytes(4000);
      return ControlPeer::Reply(request, reply);
    }
    StoredMeasurementRecord* row = reply.mutable_export_page()->add_rows();
    row->set_seq(1);
    Measurement* m = row->mutable_measurement();
    m->set_lease_id("lease-1");
    m->mutable_candidate()->set_pipeline_id("p-5");
    m->set_status(OK);
    m->mutable_stats()->set_median_seconds(1e-3);
    (*m->mutable_host()->mutable_peak_gflops())[1] = 4;
    (*m->mutable_host()->mutable_bandwidth_gbps())[1] = 2;
    reply.mutable_export_page()->set_done(true);
    return ControlPeer::Reply(request, reply);
  });
  const CliResult r =
      Farmctl({"export", "c-5", "--format", "jsonl", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("{\"seq\":1,", 0), 0u) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"lease_id\":\"lease-1\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"gflops\":2,\"peak_gflops\":4,\"peak_share\":0.5,")) << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "\"bytes\":4000,\"gbps\":0.004,\"bandwidth_gbps\":2,"
                       "\"bandwidth_share\":0.002,"))
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
}

TEST(FarmctlCliTest, FailedExportLeavesNoFile) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    reply.set_code(CLIENT_NOT_FOUND);
    reply.set_error("no campaign 'c-9'");
    return ControlPeer::Reply(request, reply);
  });
  ScratchDir dir;
  const std::string output = dir.Sub("rows.csv");
  const CliResult r =
      Farmctl({"export", "c-9", "--output", output, "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_FALSE(fs::exists(output));
  EXPECT_FALSE(fs::exists(output + ".partial"));
  // To standard output: nothing at all (no CSV header) before the error.
  const CliResult to_stdout = Farmctl({"export", "c-9", "--coordinator", peer.endpoint()});
  EXPECT_EQ(to_stdout.code, kExitFailed);
  EXPECT_EQ(to_stdout.out, "");
  EXPECT_TRUE(Contains(to_stdout.err, "no campaign 'c-9'")) << to_stdout.err;
}

TEST(FarmctlCliTest, ReplyWithoutTheExpectedBodyIsAnError) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    return ControlPeer::Reply(request, ClientReply());
  });
  const CliResult r = Farmctl({"workers", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_TRUE(Contains(r.err, "carries no workers")) << r.err;
}

TEST(FarmctlCliTest, BestSendsItsOptions) {
  ControlPeer peer([](const ClientRequest& request, int) -> std::optional<Envelope> {
    ClientReply reply;
    reply.mutable_best();
    return ControlPeer::Reply(request, reply);
  });
  const CliResult r =
      Farmctl({"best", "c-5", "--pipeline", "abc", "-k", "3", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "no measured schedule yet")) << r.out;
  const auto seen = peer.seen();
  ASSERT_EQ(seen.size(), 1u);
  const BestRequest& sent = seen[0].request.best();
  EXPECT_EQ(sent.campaign(), "c-5");
  EXPECT_EQ(sent.pipeline_id(), "abc");
  EXPECT_EQ(sent.k(), 3);
}

// A coordinator that knows the campaigns of sample_campaigns.h, c-r and c-g: their
// status, and their measurements in export pages of at most 3 rows (seqs from 1).
ControlPeer::Handler SampleCoordinator() {
  return [](const ClientRequest& request, int) -> std::optional<Envelope> {
    static const std::map<std::string, SampleCampaign> kCampaigns = {{"c-r", RandomSample()},
                                                                     {"c-g", GreedySample()}};
    const std::string& id = request.has_status() ? request.status().campaign()
                                                 : request.export_measurements().campaign();
    ClientReply reply;
    const auto found = kCampaigns.find(id);
    if (found == kCampaigns.end()) {
      reply.set_code(CLIENT_NOT_FOUND);
      reply.set_error("no campaign '" + id + "'");
    } else if (request.has_status()) {
      *reply.mutable_status()->add_campaigns() = found->second.status;
    } else {
      const std::vector<Measurement>& measurements = found->second.measurements;
      ExportReply* page = reply.mutable_export_page();
      uint64_t seq = std::max<uint64_t>(request.export_measurements().from_seq(), 1);
      for (; seq <= measurements.size() && page->rows_size() < 3; ++seq) {
        StoredMeasurementRecord* row = page->add_rows();
        row->set_seq(seq);
        *row->mutable_measurement() = measurements[seq - 1];
      }
      page->set_next_seq(seq);
      page->set_done(seq > measurements.size());
    }
    return ControlPeer::Reply(request, reply);
  };
}

TEST(FarmctlCliTest, CompareReadsEachCampaignsStatusThenItsMeasurements) {
  ControlPeer peer(SampleCoordinator());
  const CliResult r = Farmctl({"compare", "c-r", "c-g", "--coordinator", peer.endpoint()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, RenderComparison(CompareSamples()));
  EXPECT_TRUE(Contains(LineOf(r.out, "vgg_block"), "100 us   50 us  200 us")) << r.out;
  EXPECT_TRUE(Contains(LineOf(r.out, "greedy"), "4.37x (4 pipelines)")) << r.out;
  // Both statuses first, then the pages: 11 measurements of c-r in 4, 8 of c-g in 3.
  const auto seen = peer.seen();
  ASSERT_EQ(seen.size(), 9u);
  EXPECT_EQ(seen[0].request.status().campaign(), "c-r");
  EXPECT_EQ(seen[1].request.status().campaign(), "c-g");
  for (size_t i = 2; i < 9; ++i) {
    EXPECT_EQ(seen[i].request.export_measurements().campaign(), i < 6 ? "c-r" : "c-g");
  }
  EXPECT_EQ(seen[3].request.export_measurements().from_seq(), 4u);
}

TEST(FarmctlCliTest, CompareOfAnUnknownCampaignExitsOneWithItsError) {
  ControlPeer peer(SampleCoordinator());
  const CliResult r = Farmctl({"compare", "c-r", "c-x", "--coordinator", peer.endpoint()});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_TRUE(Contains(r.err, "compare: no campaign 'c-x' (CLIENT_NOT_FOUND)")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(peer.seen().size(), 2u) << "no measurements read before every campaign is known";
}

TEST(FarmctlCliTest, CompareJsonRoundTrips) {
  ControlPeer peer(SampleCoordinator());
  const CliResult r =
      Farmctl({"compare", "c-r", "c-g", "--json", "--coordinator", peer.endpoint()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok()) << r.out;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      parsed, ComparisonToJson(CompareSamples())))
      << r.out;
}

TEST(FarmctlCliTest, CompareUsageErrorsExitTwo) {
  ExpectUsageError({"compare"}, "'compare' needs CAMPAIGN");
  ExpectUsageError({"compare", "c-1", "c-2", "c-1"}, "CAMPAIGN c-1 of 'compare' given twice");
  ExpectUsageError({"compare", "c-1", ""}, "CAMPAIGN of 'compare' is empty");
  ExpectUsageError({"compare", "c-1", "--once"}, "flag --once does not apply to 'compare'");
}

TEST(FarmctlCliTest, LocalChecksEveryFileBeforeStartingAnything) {
  ScratchDir dir;
  const std::string good = WriteFile(dir.Sub("good.yaml"),
                                     "name: good\n"
                                     "pipelines:\n"
                                     "  - zoo: {block: vgg_block, spatial_scale: 0.25}\n"
                                     "budget: {benchmarks: 3}\n");
  const std::string bad = WriteFile(dir.Sub("bad.yaml"), "name: bad\nbudget: {benchmarks: 3}\n");
  const CliResult r = Farmctl({"local", good, bad, "--dir", dir.Sub("farm")});
  EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
  EXPECT_TRUE(Contains(r.err, bad)) << r.err;
  EXPECT_FALSE(Contains(r.err, good)) << r.err;
  EXPECT_FALSE(Contains(r.err, "usage:")) << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing started: " << r.out;
  EXPECT_FALSE(fs::exists(dir.Sub("farm")));

  ExpectUsageError({"local"}, "'local' needs FILE");
  ExpectUsageError({"local", good, ""}, "FILE of 'local' is empty");
  ExpectUsageError({"local", good, bad, "--json"}, "flag --json does not apply to 'local'");
  ExpectUsageError({"local", good, bad, "--workers", "0"}, "flag --workers");
}

TEST(FarmctlCliTest, TuneRefusesBadArgumentsAndModelsBeforeStartingAnything) {
  ExpectUsageError({"tune"}, "'tune' needs MODEL");
  ExpectUsageError({"tune", "m.onnx", "--time", "soon"}, "--time 'soon' is not a duration");
  ExpectUsageError({"tune", "m.onnx", "--budget", "0"}, "flag --budget");
  ExpectUsageError({"tune", "m.onnx", "--threads", "two"}, "flag --threads");
  ExpectUsageError({"tune", "m.onnx", "--baselines", "li2018,tvm"},
                   "--baselines: unknown baseline 'tvm'");
  ExpectUsageError({"tune", "m.onnx", "--layout", "nhwc"},
                   "--layout 'nhwc' is not a layout (nchw or channels_last)");

  // An ONNX model with an operator the importer does not support: the node is named,
  // and no farm starts.
  ScratchDir dir;
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("g");
  onnx::ValueInfoProto& x = *graph.add_input();
  x.set_name("x");
  x.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  x.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  onnx::NodeProto& node = *graph.add_node();
  node.set_op_type("NonZero");
  node.set_name("mystery");
  node.add_input("x");
  node.add_output("y");
  graph.add_output()->set_name("y");
  graph.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  const std::string path = WriteFile(dir.Sub("odd.onnx"), model.SerializeAsString());
  const CliResult r = Farmctl({"tune", path, "--budget", "10", "--dir", dir.Sub("farm")});
  EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
  EXPECT_TRUE(Contains(r.err, "node 'mystery' (op NonZero): unsupported operator")) << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing started: " << r.out;
  EXPECT_FALSE(fs::exists(dir.Sub("farm/store")));
  // The campaign it would have run is kept for a look.
  const std::string yaml = ReadFileBytes(dir.Sub("farm/tune.yaml")).value();
  EXPECT_TRUE(Contains(yaml, "network: {onnx: {path: '" + path + "'}}")) << yaml;
  EXPECT_TRUE(Contains(yaml, "benchmarks: 10")) << yaml;
  EXPECT_TRUE(Contains(yaml, "layout: channels_last")) << yaml;
  EXPECT_TRUE(Contains(yaml, "libtorch")) << yaml;

  // A model that does not exist, or a block the zoo lacks: the error names MODEL as
  // typed, not a place in the tune.yaml the user never wrote, and nothing is written.
  const CliResult missing = Farmctl({"tune", "missing.onnx", "--dir", dir.Sub("missing")});
  EXPECT_EQ(missing.code, kExitInvalidInput) << missing.err;
  EXPECT_TRUE(Contains(missing.err, "farmctl tune: MODEL 'missing.onnx': no such file"))
      << missing.err;
  EXPECT_FALSE(Contains(missing.err, "tune.yaml")) << missing.err;
  EXPECT_FALSE(fs::exists(dir.Sub("missing/tune.yaml")));
  const CliResult block = Farmctl({"tune", "resnet18_basik", "--dir", dir.Sub("block")});
  EXPECT_EQ(block.code, kExitInvalidInput) << block.err;
  EXPECT_TRUE(Contains(block.err, "MODEL 'resnet18_basik' is neither an .onnx or .yaml file nor "
                                  "a zoo block (did you mean 'resnet18_basic'?)"))
      << block.err;
}

}  // namespace
}  // namespace schedfarm
