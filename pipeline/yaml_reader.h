// Checked reading of the project's YAML files (pipelines, campaigns): YamlReader turns
// nodes into values or errors that say `file:line:column: what is wrong`; mappings
// refuse unknown keys (with a "did you mean" hint for near misses) and duplicates.
// Format readers derive from it and add their own fields.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace schedfarm {

// A YAML mapping whose keys were checked by YamlReader::Map.
struct YamlFields {
  YAML::Node node;
  std::map<std::string, std::pair<YAML::Node, YAML::Node>> entries;  // key -> (key, value)
  std::vector<std::string> order;                                    // keys as written

  bool has(const std::string& key) const { return entries.count(key) > 0; }
  const YAML::Node& key(const std::string& k) const { return entries.at(k).first; }
  const YAML::Node& value(const std::string& k) const { return entries.at(k).second; }
};

// "did you mean 'x'?" when `got` is a near miss of one of `known`, else `note` followed
// by the known names.
std::string NearMissHint(const std::string& got, const std::vector<std::string>& known,
                         const std::string& note);

// `what` arguments name the value being read in errors ("stage 'conv1' strides",
// "pipelines[2].zoo.batch").
class YamlReader {
 public:
  explicit YamlReader(std::string filename) : filename_(std::move(filename)) {}

  const std::string& filename() const { return filename_; }
  Status ErrorAt(const YAML::Mark& mark, const std::string& message) const;
  Status ErrorAt(const YAML::Node& node, const std::string& message) const;
  // The document in `text`; a syntax error says where, an empty document is an error
  // followed by `expected` (what the document should hold).
  StatusOr<YAML::Node> Load(const std::string& text, const std::string& expected) const;
  // "a scalar", "a list", "a mapping" or "nothing".
  static const char* KindName(const YAML::Node& node);

  // The mapping's keys, each one of `allowed` and none twice; an unknown key's error
  // ends with NearMissHint(key, allowed, known_note).
  StatusOr<YamlFields> Map(const YAML::Node& node, const std::string& what,
                           const std::vector<std::string>& allowed,
                           const std::string& known_note = "known keys: ") const;
  Status Require(const YamlFields& fields, const std::string& key, const std::string& what) const;
  Status List(const YAML::Node& node, const std::string& what) const;
  StatusOr<std::string> String(const YAML::Node& node, const std::string& what) const;
  StatusOr<int64_t> Int(const YAML::Node& node, const std::string& what) const;
  StatusOr<uint64_t> Uint(const YAML::Node& node, const std::string& what) const;
  // A number; YAML's .nan, .inf and -.inf included.
  StatusOr<double> Double(const YAML::Node& node, const std::string& what) const;
  StatusOr<bool> Bool(const YAML::Node& node, const std::string& what) const;

 private:
  std::string filename_;
};

}  // namespace schedfarm
