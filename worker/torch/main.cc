// farm-torch-baseline JOB REFERENCE RESULT: the libtorch baseline of one sandbox job
// (worker/torch/torch_baseline.h). JOB holds a SandboxJob, REFERENCE the reference
// outputs (timing/run_phase.h), and the Measurement is written to RESULT. Exit 0 once
// RESULT is written (whatever the measurement's status), 2 when the arguments or files
// are unusable, with the reason on standard error.
#include <iostream>
#include <string>

#include "common/files.h"
#include "worker/torch/torch_baseline.h"

int main(int argc, char** argv) {
  using namespace schedfarm;
  if (argc != 4) {
    std::cerr << "usage: farm-torch-baseline JOB REFERENCE RESULT\n";
    return 2;
  }
  StatusOr<std::string> job_bytes = ReadFileBytes(argv[1]);
  SandboxJob job;
  if (!job_bytes.ok() || !job.ParseFromString(*job_bytes)) {
    std::cerr << "farm-torch-baseline: job file '" << argv[1] << "' is not a SandboxJob"
              << (job_bytes.ok() ? "" : ": " + job_bytes.status().message()) << "\n";
    return 2;
  }
  StatusOr<std::string> reference = ReadFileBytes(argv[2]);
  if (!reference.ok()) {
    std::cerr << "farm-torch-baseline: " << reference.status().message() << "\n";
    return 2;
  }
  const Measurement measurement = MeasureWithTorch(job, *reference);
  const Status written = WriteFileAtomically(argv[3], measurement.SerializeAsString());
  if (!written.ok()) {
    std::cerr << "farm-torch-baseline: " << written.message() << "\n";
    return 2;
  }
  return 0;
}
