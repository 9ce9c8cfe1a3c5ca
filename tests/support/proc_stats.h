// CPU time of processes and threads and the machine's load, from /proc, for the
// benchmarks and tests that drive a process and look at where its CPU went.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace schedfarm {

// Calls fn(thread id, name, CPU seconds) for each thread of `pid` (/proc/PID/task).
template <typename Fn>
void ForEachThread(pid_t pid, const Fn& fn) {
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream in(task_dir + "/" + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    std::vector<std::string> f;
    for (std::string v; fields >> v;) f.push_back(v);
    if (f.size() < 13) continue;  // f[0] is field 3 (state): utime is field 14, stime 15
    fn(std::string(entry->d_name), line.substr(open + 1, close - open - 1),
       (std::stod(f[11]) + std::stod(f[12])) / tick);
  }
  closedir(dir);
}

// CPU seconds per thread of `pid` ("main" for the thread whose id is the pid's, else
// its name; threads of the same name are summed).
inline std::map<std::string, double> ThreadCpuSeconds(pid_t pid) {
  std::map<std::string, double> seconds;
  ForEachThread(pid, [&](const std::string& tid, const std::string& name, double used) {
    seconds[tid == std::to_string(pid) ? "main" : name] += used;
  });
  return seconds;
}

// CPU seconds per thread of `pid`, by thread id.
inline std::map<std::string, double> ThreadCpuSecondsById(pid_t pid) {
  std::map<std::string, double> seconds;
  ForEachThread(pid, [&](const std::string& tid, const std::string&, double used) {
    seconds[tid] = used;
  });
  return seconds;
}

inline double Total(const std::map<std::string, double>& seconds) {
  double total = 0;
  for (const auto& [name, s] : seconds) total += s;
  return total;
}

// Busy CPU seconds of the whole machine (all cores), from /proc/stat.
inline double MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  std::vector<double> v;
  for (double x; v.size() < 8 && in >> x;) v.push_back(x);
  if (v.size() < 8) return 0;
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// How many threads of `pid` are running or ready to run (state R in /proc/PID/task).
inline int RunnableThreads(pid_t pid) {
  int runnable = 0;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream in(task_dir + "/" + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') {
      ++runnable;
    }
  }
  closedir(dir);
  return runnable;
}

// CPU seconds of the whole process `pid`, threads that have ended included
// (/proc/PID/stat); 0 once it is gone.
inline double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string v; f.size() < 13 && fields >> v;) f.push_back(v);
  if (f.size() < 13) return 0;  // f[0] is field 3 (state): utime is field 14, stime 15
  return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace schedfarm
