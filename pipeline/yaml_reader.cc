#include "pipeline/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "common/text.h"
#include "common/utf8.h"

namespace schedfarm {
namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string NearMissHint(const std::string& got, const std::vector<std::string>& known,
                         const std::string& note) {
  const std::string* best = nullptr;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const std::string& k : known) {
    const size_t d = EditDistance(got, k);
    if (d < best_distance) {
      best = &k;
      best_distance = d;
    }
  }
  if (best != nullptr && best_distance <= std::max<size_t>(1, best->size() / 3)) {
    return "did you mean '" + *best + "'?";
  }
  return note + Join(known, ", ");
}

Status YamlReader::ErrorAt(const YAML::Mark& mark, const std::string& message) const {
  if (mark.line < 0) return Status::Error(filename_ + ": " + message);
  return Status::Error(filename_ + ":" + std::to_string(mark.line + 1) + ":" +
                       std::to_string(mark.column + 1) + ": " + message);
}

Status YamlReader::ErrorAt(const YAML::Node& node, const std::string& message) const {
  return ErrorAt(node.Mark(), message);
}

StatusOr<YAML::Node> YamlReader::Load(const std::string& text, const std::string& expected) const {
  // Names and values end up in protobuf messages, whose strings must be UTF-8.
  const size_t invalid = FirstInvalidUtf8(text);
  if (invalid != text.size()) {
    YAML::Mark mark;
    mark.line = static_cast<int>(std::count(text.begin(), text.begin() + invalid, '\n'));
    mark.column = static_cast<int>(invalid - (text.rfind('\n', invalid) + 1));
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(text[invalid]));
    return ErrorAt(mark, std::string("not UTF-8 text (byte ") + byte + "); the file must be UTF-8");
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return ErrorAt(e.mark, "YAML syntax error: " + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) {
    return Status::Error(filename_ + ":1:1: empty document; " + expected);
  }
  return root;
}

const char* YamlReader::KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

StatusOr<YamlFields> YamlReader::Map(const YAML::Node& node, const std::string& what,
                                     const std::vector<std::string>& allowed,
                                     const std::string& known_note) const {
  if (!node.IsMap()) return ErrorAt(node, what + " must be a mapping, is " + KindName(node));
  YamlFields f;
  f.node = node;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node k = it->first;  // a copy: the iterator's pair is a temporary
    if (!k.IsScalar()) return ErrorAt(k, what + ": keys must be scalars");
    const std::string key = k.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return ErrorAt(
          k, what + ": unknown key '" + key + "' (" + NearMissHint(key, allowed, known_note) + ")");
    }
    if (f.has(key)) {
      return ErrorAt(k, what + ": duplicate key '" + key + "' (first at line " +
                            std::to_string(f.key(key).Mark().line + 1) + ")");
    }
    f.entries[key] = {k, it->second};
    f.order.push_back(key);
  }
  return f;
}

Status YamlReader::Require(const YamlFields& f, const std::string& key,
                           const std::string& what) const {
  if (f.has(key)) return Status::Ok();
  return ErrorAt(f.node, what + ": missing field '" + key + "'");
}

Status YamlReader::List(const YAML::Node& n, const std::string& what) const {
  if (n.IsSequence()) return Status::Ok();
  return ErrorAt(n, what + " must be a list, is " + KindName(n));
}

StatusOr<std::string> YamlReader::String(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) return ErrorAt(n, what + " must be a string, is " + KindName(n));
  // yaml-cpp turns the escapes \_ and \N into Latin-1 bytes, which are not UTF-8.
  if (!IsValidUtf8(n.Scalar())) {
    return ErrorAt(n, what + " is not UTF-8 text once read (write the characters of the "
                             "escapes \\_ and \\N as themselves)");
  }
  return n.Scalar();
}

StatusOr<int64_t> YamlReader::Int(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) return ErrorAt(n, what + " must be an integer, is " + KindName(n));
  const std::string& s = n.Scalar();
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(s[0]))) {
    return ErrorAt(n, what + " must be an integer, got '" + s + "'");
  }
  if (errno == ERANGE) return ErrorAt(n, what + " is out of range: " + s);
  return static_cast<int64_t>(v);
}

StatusOr<uint64_t> YamlReader::Uint(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) return ErrorAt(n, what + " must be an integer, is " + KindName(n));
  const std::string& s = n.Scalar();
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || !std::isdigit(static_cast<unsigned char>(s[0]))) {
    return ErrorAt(n, what + " must be a non-negative integer, got '" + s + "'");
  }
  if (errno == ERANGE) return ErrorAt(n, what + " is out of range: " + s);
  return static_cast<uint64_t>(v);
}

StatusOr<double> YamlReader::Double(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) return ErrorAt(n, what + " must be a number, is " + KindName(n));
  const std::string& s = n.Scalar();
  const std::string l = Lower(s);
  if (l == ".nan") return std::nan("");
  if (l == ".inf" || l == "+.inf") return HUGE_VAL;
  if (l == "-.inf") return -HUGE_VAL;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(s[0])) ||
      !std::isfinite(v)) {
    return ErrorAt(n, what + " must be a number, got '" + s + "'");
  }
  return v;
}

StatusOr<bool> YamlReader::Bool(const YAML::Node& n, const std::string& what) const {
  if (n.IsScalar()) {
    const std::string l = Lower(n.Scalar());
    if (l == "true") return true;
    if (l == "false") return false;
    return ErrorAt(n, what + " must be true or false, got '" + n.Scalar() + "'");
  }
  return ErrorAt(n, what + " must be true or false, is " + KindName(n));
}

}  // namespace schedfarm
