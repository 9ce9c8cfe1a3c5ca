// `farmctl report`: one campaign as a self-contained HTML page (no scripts, fonts or
// other files: the charts are inline SVG), for reading results as pictures. Sections:
// the campaign and its pipelines' best runtimes, with their GFLOP/s and share of the
// measuring hosts' fp32 peak, against each baseline (a network campaign's distinct tasks
// also as the task table of farmctl/task_table.h); per pipeline
// the best runtime so far against its benchmarks, each baseline a flat line; the
// distribution of measured runtimes relative to their pipeline's best; failures by
// class over time; each worker's throughput; the learner's held-out model metrics
// across versions. Every chart is a <figure class="chart" id=...> with the number of
// points it draws in data-points. A pure function, so tests render hand-made campaigns.
#pragma once

#include <string>
#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

struct ReportInput {
  CampaignStatus status;
  std::vector<Measurement> measurements;  // the campaign's, in seq order
  std::vector<Model> models;              // the campaign's, any order
  std::string generated;                  // when and from where, for the footer
};

std::string RenderCampaignReport(const ReportInput& input);

}  // namespace schedfarm
