// Fuzz target: ONNX import (pipeline/onnx/onnx_import.h). ImportOnnxModel parses the
// bytes as an onnx.ModelProto, folds its static shape computations and converts it to
// a PipelineSpec that PipelineGraph::Build validates. A refused model must say why; an
// accepted one must build into a graph again and survive the protobuf encoding it
// travels in (a lease).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_property.h"
#include "pipeline/graph.h"
#include "pipeline/onnx/onnx_import.h"

namespace {

constexpr size_t kMaxInputBytes = 256 << 10;
using schedfarm::fuzz::Require;
using schedfarm::fuzz::RequireProtobufRoundTrip;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedfarm;
  if (size > kMaxInputBytes) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  StatusOr<PipelineSpec> spec = ImportOnnxModel(bytes, "fuzz.onnx");
  if (!spec.ok()) {
    Require(!spec.status().message().empty(), "a refused model says what is wrong");
    return 0;
  }
  Require(PipelineGraph::Build(*spec).ok(), "an imported pipeline builds");
  RequireProtobufRoundTrip(*spec,
                           "an imported pipeline reads back from its protobuf encoding");
  return 0;
}
