#include "protocol/state_names.h"

#include <cctype>

namespace schedfarm {
namespace {

// "CAMPAIGN_RUNNING" -> "running"; "state N" when the enum has no name for `value`.
std::string Text(const std::string& name, int value) {
  if (name.empty()) return "state " + std::to_string(value);
  std::string text = name.substr(name.find('_') + 1);
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::string CampaignStateText(CampaignState state) {
  return Text(CampaignState_Name(state), state);
}

std::string WorkerStateText(WorkerState state) { return Text(WorkerState_Name(state), state); }

}  // namespace schedfarm
