// The main of the <target>_fuzz_replay executables: the fuzz harnesses built without
// libFuzzer (gcc, no sanitizers), so that CI runs them on the seed corpus and on
// malformed variants of it.
//   <target>_fuzz_replay [--mutations N] [--seed S] [--dict FILE] FILE|DIR...
// Feeds every file (folders recursively, in name order) to LLVMFuzzerTestOneInput,
// then N inputs made from them by a deterministic generator seeded with S: byte flips,
// random bytes, insertions and deletions, duplicated ranges, truncations, splices of
// two files and, with --dict (libFuzzer's dictionary format), inserted keywords.
// If the harness crashes, the input is saved to the temp folder and its path printed.
// Exit codes: 0 all inputs ran, 2 bad arguments or unreadable files; a crash aborts.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/elapsed.h"
#include "common/files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// The input being run, for the crash handler.
const std::string* g_current_input = nullptr;
std::string g_current_name;
std::string g_crash_path;

void SaveInputOnCrash(int signal_number) {
  const char prefix[] = "\nfuzz replay: crashed on ";
  (void)!write(2, prefix, sizeof(prefix) - 1);
  (void)!write(2, g_current_name.data(), g_current_name.size());
  if (g_current_input != nullptr) {
    const int fd = open(g_crash_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, g_current_input->data(), g_current_input->size());
      close(fd);
      const char saved[] = "; input saved to ";
      (void)!write(2, saved, sizeof(saved) - 1);
      (void)!write(2, g_crash_path.data(), g_crash_path.size());
    }
  }
  (void)!write(2, "\n", 1);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void Run(const std::string& input, const std::string& name) {
  g_current_input = &input;
  g_current_name = name;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  g_current_input = nullptr;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads a libFuzzer dictionary: one `"value"` or `name="value"` per line, with \\, \"
// and \xNN escapes; # starts a comment line.
bool ReadDictionary(const std::string& path, std::vector<std::string>* words) {
  const schedfarm::StatusOr<std::string> text = schedfarm::ReadFileBytes(path);
  if (!text.ok()) return false;
  std::istringstream lines(*text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t open_quote = line.find('"');
    const size_t close_quote = line.rfind('"');
    if (open_quote == std::string::npos || close_quote <= open_quote) {
      std::cerr << path << ":" << number << ": expected \"value\" or name=\"value\"\n";
      return false;
    }
    std::string word;
    for (size_t i = open_quote + 1; i < close_quote; ++i) {
      if (line[i] == '\\' && i + 1 < close_quote) {
        ++i;
        if (line[i] == 'x' && i + 2 < close_quote && HexDigit(line[i + 1]) >= 0 &&
            HexDigit(line[i + 2]) >= 0) {
          word += static_cast<char>(HexDigit(line[i + 1]) * 16 + HexDigit(line[i + 2]));
          i += 2;
          continue;
        }
      }
      word += line[i];
    }
    words->push_back(word);
  }
  return true;
}

// Makes a malformed variant of corpus[base] with one to four edits.
std::string Mutate(const std::vector<std::string>& corpus, size_t base,
                   const std::vector<std::string>& words, std::mt19937_64& rng) {
  std::string s = corpus[base];
  auto below = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int edits = 1 + static_cast<int>(below(4));
  for (int e = 0; e < edits; ++e) {
    switch (below(words.empty() ? 7 : 8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1 << below(8));
        break;
      case 1:  // set a byte to a random or an interesting value
        if (!s.empty()) {
          const char interesting[] = {0, 1, '\x7f', '\x80', '\xff', ':', '-', '\n', '[', '{'};
          s[below(s.size())] = below(2) ? static_cast<char>(rng())
                                        : interesting[below(sizeof(interesting))];
        }
        break;
      case 2: {  // insert random bytes
        const std::string bytes(1 + below(8), static_cast<char>(rng()));
        s.insert(below(s.size() + 1), bytes);
        break;
      }
      case 3:  // delete a range
        if (!s.empty()) {
          const size_t at = below(s.size());
          s.erase(at, 1 + below(std::min<size_t>(s.size() - at, 64)));
        }
        break;
      case 4:  // duplicate a range
        if (!s.empty()) {
          const size_t at = below(s.size());
          const std::string range = s.substr(at, 1 + below(std::min<size_t>(s.size() - at, 64)));
          s.insert(below(s.size() + 1), range);
        }
        break;
      case 5:  // truncate
        s.resize(below(s.size() + 1));
        break;
      case 6: {  // splice: this input's head with another's tail
        const std::string& other = corpus[below(corpus.size())];
        s = s.substr(0, below(s.size() + 1)) + other.substr(below(other.size() + 1));
        break;
      }
      case 7:  // insert a dictionary word
        s.insert(below(s.size() + 1), words[below(words.size())]);
        break;
    }
  }
  return s;
}

int Usage(const std::string& error) {
  std::cerr << "fuzz replay: " << error
            << "\nusage: fuzz_replay [--mutations N] [--seed S] [--dict FILE] FILE|DIR...\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  long long mutations = 0;
  unsigned long long seed = 1;
  std::vector<std::string> words;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    char* end = nullptr;
    if (arg == "--mutations" && has_value) {
      mutations = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || mutations < 0) return Usage("--mutations needs a count >= 0");
    } else if (arg == "--seed" && has_value) {
      seed = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0') return Usage("--seed needs a number");
    } else if (arg == "--dict" && has_value) {
      if (!ReadDictionary(argv[++i], &words)) return Usage(std::string("cannot read the dictionary ") + argv[i]);
    } else if (arg.rfind("--", 0) == 0) {
      return Usage("unknown option " + arg);
    } else if (fs::is_directory(arg)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(arg)) {
        if (entry.is_regular_file()) found.push_back(entry.path());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      return Usage("no such file or folder: " + arg);
    }
  }
  if (files.empty()) return Usage("no input files");

  g_crash_path = (fs::temp_directory_path() /
                  ("fuzz-replay-crash-" + std::to_string(getpid()) + ".bin")).string();
  for (int signal_number : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) {
    std::signal(signal_number, SaveInputOnCrash);
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> corpus;
  for (const fs::path& path : files) {
    schedfarm::StatusOr<std::string> input = schedfarm::ReadFileBytes(path.string());
    if (!input.ok()) return Usage(input.status().message());
    Run(*input, path.string());
    corpus.push_back(std::move(*input));
  }
  std::mt19937_64 rng(seed);
  for (long long m = 0; m < mutations; ++m) {
    const size_t base = static_cast<size_t>(rng() % corpus.size());
    const std::string input = Mutate(corpus, base, words, rng);
    Run(input, "mutation " + std::to_string(m) + " (seed " + std::to_string(seed) + ") of " +
                   files[base].string());
  }
  const double seconds = schedfarm::SecondsSince(start);
  std::printf("fuzz replay: %zu files and %lld mutations (seed %llu) ran in %.1f s\n", files.size(),
              mutations, seed, seconds);
  return 0;
}
