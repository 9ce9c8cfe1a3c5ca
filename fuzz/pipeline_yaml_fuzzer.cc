// Fuzz target: pipeline YAML (pipeline/yaml_io.h). PipelineFromYaml parses the text
// and validates the spec with PipelineGraph::Build, as every reader of pipeline files
// does. A refused pipeline must say why; an accepted one must build into a graph again
// and survive the protobuf encoding it travels in (a lease) and being written back to
// YAML and read again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_property.h"
#include "pipeline/graph.h"
#include "pipeline/yaml_io.h"

namespace {

constexpr size_t kMaxInputBytes = 64 << 10;
using schedfarm::fuzz::Require;
using schedfarm::fuzz::RequireProtobufRoundTrip;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedfarm;
  if (size > kMaxInputBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  StatusOr<PipelineSpec> spec = PipelineFromYaml(text, "fuzz.yaml");
  if (!spec.ok()) {
    Require(!spec.status().message().empty(), "a refused pipeline says what is wrong");
    return 0;
  }
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  Require(graph.ok(), "an accepted pipeline builds");
  (void)graph->total_cost();
  RequireProtobufRoundTrip(*spec,
                           "an accepted pipeline reads back from its protobuf encoding");
  Require(PipelineFromYaml(PipelineToYaml(*spec), "fuzz-written.yaml").ok(),
          "an accepted pipeline reads back from the YAML it writes");
  return 0;
}
