// Fuzz target: the wire envelope decoder (protocol/wire.h). Every received ZeroMQ
// frame goes through DecodeEnvelope (size, parse, version and body checks); the
// pipelines a frame carries (a lease's, a submitted campaign's) then go through
// PipelineGraph::Build as the worker and the coordinator do. A refused frame must
// say why; an accepted one must survive re-encoding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_property.h"
#include "pipeline/graph.h"
#include "protocol/wire.h"

namespace {

constexpr size_t kMaxInputBytes = 64 << 10;
using schedfarm::fuzz::Require;

void CheckPipeline(const schedfarm::PipelineSpec& spec) {
  schedfarm::StatusOr<schedfarm::PipelineGraph> graph = schedfarm::PipelineGraph::Build(spec);
  if (graph.ok()) (void)graph->total_cost();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedfarm;
  if (size > kMaxInputBytes) return 0;
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  const DecodedFrame decoded = DecodeEnvelope(frame);
  (void)BodyName(decoded.envelope);
  (void)AnswerRefusal(decoded);
  if (!decoded.ok()) {
    Require(!decoded.error.empty(), "a refused frame says what is wrong");
    return 0;
  }
  Require(size == 0 || DecodeEnvelope(frame, size - 1).refusal == Refusal::kOversized,
          "a frame over the limit is refused as oversized");
  const DecodedFrame again = DecodeEnvelope(EncodeEnvelope(decoded.envelope));
  Require(again.ok() && again.envelope.body_case() == decoded.envelope.body_case(),
          "an accepted frame survives re-encoding");
  if (decoded.envelope.has_lease()) CheckPipeline(decoded.envelope.lease().pipeline());
  if (decoded.envelope.has_client_request() && decoded.envelope.client_request().has_submit()) {
    for (const PipelineSpec& spec : decoded.envelope.client_request().submit().pipelines()) {
      CheckPipeline(spec);
    }
  }
  return 0;
}
