#include "evaluation/split.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "common/files.h"
#include "common/sha256.h"

namespace schedfarm {
namespace {

constexpr char kSplitHeader[] = "schedfarm.split.v1";

bool HasWhitespace(const std::string& s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

Status CheckFraction(double fraction) {
  if (!(fraction > 0 && fraction < 1)) {
    return Status::Error("held-out fraction " + std::to_string(fraction) +
                         " must be strictly between 0 and 1");
  }
  return Status::Ok();
}

}  // namespace

bool PipelineSplit::IsHeldOut(const std::string& pipeline_id) const {
  return std::binary_search(held_out.begin(), held_out.end(), pipeline_id);
}

bool PipelineSplit::IsTrain(const std::string& pipeline_id) const {
  return std::binary_search(train.begin(), train.end(), pipeline_id);
}

StatusOr<PipelineSplit> SplitByPipeline(const std::vector<std::string>& pipeline_ids, uint64_t seed,
                                        double held_out_fraction) {
  SCHEDFARM_RETURN_IF_ERROR(CheckFraction(held_out_fraction).WithContext("split"));
  std::set<std::string> distinct;
  for (size_t i = 0; i < pipeline_ids.size(); ++i) {
    const std::string& id = pipeline_ids[i];
    if (id.empty() || HasWhitespace(id)) {
      return Status::Error("split: pipeline id " + std::to_string(i) + " ('" + id +
                           "') is empty or contains whitespace");
    }
    distinct.insert(id);
  }
  const size_t n = distinct.size();
  if (n < 2) {
    return Status::Error("split: " + std::to_string(n) +
                         " distinct pipeline(s); a split by pipeline needs at least 2");
  }
  std::vector<std::pair<std::string, std::string>> keyed;  // (hash, id)
  keyed.reserve(n);
  for (const std::string& id : distinct) {
    keyed.emplace_back(Sha256Hex(std::string(kSplitHeader) + " " + std::to_string(seed) + " " + id),
                       id);
  }
  std::sort(keyed.begin(), keyed.end());
  long held = std::lround(held_out_fraction * static_cast<double>(n));
  held = std::clamp<long>(held, 1, static_cast<long>(n) - 1);

  PipelineSplit split;
  split.seed = seed;
  split.held_out_fraction = held_out_fraction;
  for (size_t i = 0; i < n; ++i) {
    (static_cast<long>(i) < held ? split.held_out : split.train).push_back(keyed[i].second);
  }
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.held_out.begin(), split.held_out.end());
  return split;
}

std::string FormatSplit(const PipelineSplit& split) {
  std::string out = std::string(kSplitHeader) + "\n";
  out += "seed " + std::to_string(split.seed) + "\n";
  char fraction[64];
  std::snprintf(fraction, sizeof(fraction), "%.17g", split.held_out_fraction);
  out += "held_out_fraction " + std::string(fraction) + "\n";
  for (const std::string& id : split.train) out += "train " + id + "\n";
  for (const std::string& id : split.held_out) out += "held_out " + id + "\n";
  return out;
}

StatusOr<PipelineSplit> ParseSplit(const std::string& text) {
  PipelineSplit split;
  bool header = false;
  bool have_seed = false;
  bool have_fraction = false;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    auto error = [&](const std::string& what) {
      return Status::Error("split file line " + std::to_string(line_number) + ": " + what);
    };
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string key;
    std::string value;
    std::string extra;
    fields >> key >> value;
    if (!header) {
      if (line != kSplitHeader) {
        return error("expected the header '" + std::string(kSplitHeader) + "', got '" + line + "'");
      }
      header = true;
      continue;
    }
    if (value.empty() || (fields >> extra)) {
      return error("expected '<key> <value>', got '" + line + "'");
    }
    if (key == "seed") {
      if (have_seed) return error("seed given twice");
      errno = 0;
      char* end = nullptr;
      const unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
      if (errno != 0 || *end != '\0' || value[0] == '-') {
        return error("seed '" + value + "' is not an unsigned 64-bit decimal");
      }
      split.seed = seed;
      have_seed = true;
    } else if (key == "held_out_fraction") {
      if (have_fraction) return error("held_out_fraction given twice");
      char* end = nullptr;
      split.held_out_fraction = std::strtod(value.c_str(), &end);
      if (*end != '\0') return error("held_out_fraction '" + value + "' is not a number");
      Status fraction_ok = CheckFraction(split.held_out_fraction);
      if (!fraction_ok.ok()) return error(fraction_ok.message());
      have_fraction = true;
    } else if (key == "train" || key == "held_out") {
      if (!seen.insert(value).second) return error("pipeline '" + value + "' listed twice");
      (key == "train" ? split.train : split.held_out).push_back(value);
    } else {
      return error("unknown key '" + key + "'");
    }
  }
  if (!header) return Status::Error("split file: empty (no '" + std::string(kSplitHeader) + "')");
  if (!have_seed) return Status::Error("split file: no 'seed' line");
  if (!have_fraction) return Status::Error("split file: no 'held_out_fraction' line");
  if (split.train.empty() || split.held_out.empty()) {
    return Status::Error("split file: needs at least one 'train' and one 'held_out' pipeline");
  }
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.held_out.begin(), split.held_out.end());
  return split;
}

Status WriteSplitFile(const std::string& path, const PipelineSplit& split) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::Error("split file '" + path + "': cannot open for writing");
  out << FormatSplit(split);
  out.close();
  if (!out) return Status::Error("split file '" + path + "': write failed");
  return Status::Ok();
}

StatusOr<PipelineSplit> ReadSplitFile(const std::string& path) {
  StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status().WithContext("split file");
  auto split = ParseSplit(*text);
  if (!split.ok()) return split.status().WithContext("'" + path + "'");
  return split;
}

}  // namespace schedfarm
