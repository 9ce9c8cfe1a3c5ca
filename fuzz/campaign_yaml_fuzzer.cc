// Fuzz target: campaign files (campaign/campaign_yaml.h). The coordinator parses the
// campaign text a client submits with ParseCampaignYaml(text, name, check_files=false);
// this target does the same. The file is named configs/campaigns/fuzz.yaml, relative
// to the working directory (run from the repository root), so that the seeds' pipeline
// paths (../pipelines/*.yaml) resolve and the pipeline files are read and validated
// too. A refused campaign must say why; an accepted one must survive its canonical JSON
// and the protobuf encoding it travels in (Campaign.config, the control API).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "campaign/campaign_yaml.h"
#include "fuzz/fuzz_property.h"

namespace {

constexpr size_t kMaxInputBytes = 64 << 10;
using schedfarm::fuzz::Require;
using schedfarm::fuzz::RequireProtobufRoundTrip;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedfarm;
  if (size > kMaxInputBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  StatusOr<CampaignConfig> config =
      ParseCampaignYaml(text, "configs/campaigns/fuzz.yaml", /*check_files=*/false);
  if (!config.ok()) {
    Require(!config.status().message().empty(), "a refused campaign says what is wrong");
    return 0;
  }
  (void)LearnerProposes(*config);
  Require(CampaignConfigFromJson(CampaignConfigToJson(*config)).ok(),
          "an accepted campaign reads back from its canonical JSON");
  RequireProtobufRoundTrip(*config,
                           "an accepted campaign reads back from its protobuf encoding");
  return 0;
}
