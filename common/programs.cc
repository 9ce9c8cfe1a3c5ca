#include "common/programs.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace schedfarm {

namespace fs = std::filesystem;

std::string ThisProgram() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? "" : self.string();
}

std::string ThisProgramFolder() {
  const std::string self = ThisProgram();
  return self.empty() ? "" : fs::path(self).parent_path().string();
}

std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code error;
    if (access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, error)) {
      return candidate.string();
    }
  }
  return "";
}

}  // namespace schedfarm
