#include "scheduler/autoschedule/canonical_loop_nest.h"

#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "scheduler/autoschedule/schedule_reading.h"

namespace Halide {
namespace Internal {
// Exported by libHalide and declared in Halide's PrintLoopNest.h, which Halide.h leaves
// out: the loop nest of the pipeline over `outputs`, as Pipeline::print_loop_nest
// prints it.
std::string print_loop_nest(const std::vector<Function>& outputs);
}  // namespace Internal
}  // namespace Halide

namespace schedfarm {
namespace {

using Halide::Internal::Function;

}  // namespace

StatusOr<std::string> CanonicalLoopNest(const PipelineGraph& graph,
                                        const LoweredPipeline& lowered) {
  const std::string where = "pipeline '" + graph.spec().name() + "'";
  try {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineReading reading, ReadPipelineSchedule(graph, lowered));
    // Per Func name as printed: Halide loop variable -> the space's loop name.
    std::map<std::string, std::map<std::string, std::string>> names;
    for (const auto& [func, s] : reading.stage_of_func) {
      const StageReading& r = reading.stages[s];
      for (int d = 0; d < 2; ++d) {
        for (const auto& [var, ref] : r.defs[d].loops) {
          const auto levels = r.defs[d].num_levels.find(ref.dim());
          names[func][var] =
              RefName(ref, levels == r.defs[d].num_levels.end() ? 1 : levels->second);
        }
      }
    }
    std::vector<Function> outputs;
    for (const Halide::Func& f : lowered.outputs) outputs.push_back(f.function());
    const std::string text = Halide::Internal::print_loop_nest(outputs);
    // Each loop belongs to the Func of the nearest enclosing "produce" line.
    std::istringstream in(text);
    std::ostringstream out;
    std::vector<std::pair<size_t, std::string>> producers;  // (indent, func)
    std::string line;
    while (std::getline(in, line)) {
      const size_t indent = line.find_first_not_of(' ');
      if (indent == std::string::npos) {
        out << line << "\n";
        continue;
      }
      while (!producers.empty() && producers.back().first >= indent) producers.pop_back();
      const std::string body = line.substr(indent);
      const size_t space_pos = body.find(' ');
      const std::string head = body.substr(0, space_pos);
      if (head == "produce") {
        producers.emplace_back(indent, body.substr(8, body.size() - 9));
        out << line << "\n";
        continue;
      }
      static const std::set<std::string> kLoops = {"for",    "parallel",  "vectorized", "unrolled",
                                                   "extern", "gpu_block", "gpu_thread", "gpu_lane"};
      if (!kLoops.count(head) || space_pos == std::string::npos || producers.empty()) {
        out << line << "\n";
        continue;
      }
      const size_t name_end = body.find_first_of(" :<", space_pos + 1);
      const std::string var = body.substr(space_pos + 1, name_end - space_pos - 1);
      auto func = names.find(producers.back().second);
      std::string renamed = var;
      if (func != names.end()) {
        auto it = func->second.find(var);
        if (it != func->second.end()) renamed = it->second;
      }
      out << line.substr(0, indent) << head << " " << renamed
          << (name_end == std::string::npos ? "" : body.substr(name_end)) << "\n";
    }
    return out.str();
  } catch (const Halide::Error& e) {
    return Status::Error(where + ": Halide error while printing the loop nest: " + e.what());
  } catch (const std::exception& e) {
    return Status::Error(where + ": error while printing the loop nest: " + e.what());
  }
}

}  // namespace schedfarm
