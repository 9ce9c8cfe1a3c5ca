// farm-onnxruntime-baseline JOB REFERENCE RESULT: the ONNX Runtime baseline of one
// sandbox job (worker/onnxruntime/onnxruntime_baseline.h), as
// worker/contender_program.h describes.
#include "worker/contender_program.h"
#include "worker/onnxruntime/onnxruntime_baseline.h"

int main(int argc, char** argv) {
  return schedfarm::ContenderMain(argc, argv, "farm-onnxruntime-baseline",
                                  schedfarm::MeasureWithOnnxRuntime);
}
