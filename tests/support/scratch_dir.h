// A scratch directory of a test: a fresh directory under the system's temporary
// directory, removed with everything in it on destruction.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace schedfarm {

// A fresh directory under the system's temporary directory, removed on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("schedfarm_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }
  std::string Sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace schedfarm
