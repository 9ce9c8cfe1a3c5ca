// Submits a campaign file of zoo blocks to a real coordinator, as farmctl submit does:
// the YAML with its pipelines built here. For the tests that run a whole farm.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "tests/support/farm_rig.h"

namespace schedfarm {
namespace testing_support {

// The campaign's id, or "" (with a failure recorded) when the file does not parse or
// the coordinator refuses it.
inline std::string SubmitZooCampaign(TestClient& client, const std::string& yaml,
                                     const std::string& file_name = "campaign.yaml") {
  ClientRequest submit;
  submit.mutable_submit()->set_yaml_source(yaml);
  submit.mutable_submit()->set_file_name(file_name);
  StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, file_name);
  EXPECT_TRUE(config.ok()) << config.status().message();
  if (!config.ok()) return "";
  for (const PipelineSource& source : config->pipelines()) {
    *submit.mutable_submit()->add_pipelines() = *BuildZooPipeline(source.zoo());
  }
  std::optional<ClientReply> reply = client.Call(submit);
  EXPECT_TRUE(reply && reply->code() == CLIENT_OK) << (reply ? reply->error() : "no reply");
  return reply && reply->code() == CLIENT_OK ? reply->submitted().id() : "";
}

}  // namespace testing_support
}  // namespace schedfarm
