// farm-torch-baseline JOB REFERENCE RESULT: the libtorch baseline of one sandbox job
// (worker/torch/torch_baseline.h), as worker/contender_program.h describes.
#include "worker/contender_program.h"
#include "worker/torch/torch_baseline.h"

int main(int argc, char** argv) {
  return schedfarm::ContenderMain(
      argc, argv, "farm-torch-baseline",
      [](const schedfarm::SandboxJob& job, const std::string& reference, const std::string&) {
        return schedfarm::MeasureWithTorch(job, reference);
      });
}
