// The main of a runtime contender's program, which the worker's sandbox child runs on
// the benchmark cpus (farm-torch-baseline, farm-onnxruntime-baseline): PROGRAM JOB
// REFERENCE RESULT, where JOB holds a SandboxJob, REFERENCE the reference outputs
// (timing/run_phase.h), and the Measurement is written to RESULT; the folder of JOB is
// the program's own for other files. Exit 0 once RESULT is written (whatever the
// measurement's status), 2 when the arguments or files are unusable, with the reason on
// standard error. Header-only, so that each program links only its runtime.
#pragma once

#include <filesystem>
#include <functional>
#include <iostream>
#include <string>

#include "common/files.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// Measures `job` against `reference` (the file's bytes); `folder` may hold files of its own.
using MeasureContender = std::function<Measurement(
    const SandboxJob& job, const std::string& reference, const std::string& folder)>;

inline int ContenderMain(int argc, char** argv, const std::string& program,
                         const MeasureContender& measure) {
  if (argc != 4) {
    std::cerr << "usage: " << program << " JOB REFERENCE RESULT\n";
    return 2;
  }
  StatusOr<std::string> job_bytes = ReadFileBytes(argv[1]);
  SandboxJob job;
  if (!job_bytes.ok() || !job.ParseFromString(*job_bytes)) {
    std::cerr << program << ": job file '" << argv[1] << "' is not a SandboxJob"
              << (job_bytes.ok() ? "" : ": " + job_bytes.status().message()) << "\n";
    return 2;
  }
  StatusOr<std::string> reference = ReadFileBytes(argv[2]);
  if (!reference.ok()) {
    std::cerr << program << ": " << reference.status().message() << "\n";
    return 2;
  }
  const std::string folder = std::filesystem::path(argv[1]).parent_path().string();
  const Measurement measurement = measure(job, *reference, folder.empty() ? "." : folder);
  const Status written = WriteFileAtomically(argv[3], measurement.SerializeAsString());
  if (!written.ok()) {
    std::cerr << program << ": " << written.message() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace schedfarm
