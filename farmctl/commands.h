// Internal to farmctl/: the handlers of the commands, one file per group, each taking
// the Runner of its invocation (runner.h) and returning the exit code; cli.cc's
// dispatch table names them.
#pragma once

namespace schedfarm {

class Runner;

// Campaigns (campaign_commands.cc): submit, check, status, watch, best, pause, resume,
// cancel, compare, rounds, report.
int RunSubmit(Runner& r);
int RunCheck(Runner& r);
int RunStatus(Runner& r);
int RunWatch(Runner& r);
int RunBest(Runner& r);
int RunCampaignAction(Runner& r);
int RunCompare(Runner& r);
int RunRounds(Runner& r);
int RunReport(Runner& r);

// Results and data (data_commands.cc): export, backup, dataset, curves.
int RunExport(Runner& r);
int RunBackup(Runner& r);
int RunDataset(Runner& r);
int RunCurves(Runner& r);

// Stored models (model_commands.cc): model list, eval and export.
int RunModel(Runner& r);

// The farm itself (farm_commands.cc): workers, keygen, local, tune.
int RunWorkers(Runner& r);
int RunKeygen(Runner& r);
int RunLocal(Runner& r);
int RunTuneCommand(Runner& r);

}  // namespace schedfarm
