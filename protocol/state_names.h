// Campaign and worker states as people read them: "running", "busy". farmctl prints
// them and the coordinator's metrics use them as label values.
#pragma once

#include <string>

#include "schedfarm.pb.h"

namespace schedfarm {

// A campaign state without its enum prefix, in lower case: "running", "paused",
// "done"...; "state N" for a value the enum does not name.
std::string CampaignStateText(CampaignState state);
// A worker state the same way: "busy", "idle", "draining", "dead".
std::string WorkerStateText(WorkerState state);

}  // namespace schedfarm
