// `farmctl tune MODEL`: a whole network tuned on a local farm (docs/NETWORKS.md). It
// writes a network campaign for MODEL into DIR/tune.yaml (model-guided schedules under
// the GBT, starting from the pretrained GBT of the host kind where there is one;
// Halide's three autoschedulers, libtorch, ONNX Runtime and the reference schedule as
// baselines; the given budget and thread count) and runs it as `farmctl local` does,
// ending with the network's end-to-end table and its assembled schedule as Halide source.
#pragma once

#include <string>
#include <vector>

#include "farmctl/cli.h"

namespace schedfarm {

struct TuneOptions {
  std::string model;           // an ONNX file, a pipeline YAML file, or a zoo block name
  int64_t benchmarks = 0;      // 0: no benchmark limit (then wall_time bounds the run)
  std::string wall_time;       // a duration as campaign files write it; empty: none
  int threads = 2;             // threads of every timed run, baselines included
  // The baselines timed on the whole network, beside its reference schedule.
  std::vector<std::string> baselines = {"li2018", "mullapudi2016", "adams2019", "libtorch",
                                        "onnxruntime"};
  std::string dir = "schedfarm-tune";
  // The layout the network's tasks exchange 4-D tensors in (campaign `layout`).
  std::string layout = "channels_last";
  // How the network is cut into tasks (campaign `fusion`): blocks or none.
  std::string fusion = "blocks";
  // The strategy's model_from: by default the pretrained model of the workers' host
  // kind (pretrained/pretrained.h), where one is shipped; empty: none, a cold start.
  std::string model_from = "pretrained";
};

// The campaign file of `options` (TuneOptions::model resolved to an absolute path).
std::string TuneCampaignYaml(const TuneOptions& options);

// Writes DIR/tune.yaml and runs it on a local farm; returns farmctl's exit code. A
// model that does not exist (named as typed), or that cannot be read or imported (an
// unsupported ONNX operator names its node), is exit 3 before anything starts.
int RunTune(const TuneOptions& options, const CliStreams& streams);

}  // namespace schedfarm
