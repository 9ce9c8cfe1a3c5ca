#include "pretrained/pretrained.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "common/text.h"
#include "dataset/compressed_file.h"
#include "dataset/dataset.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

constexpr CompressedFileKind kPretrainedFile = {"SFPM", kPretrainedFormatVersion,
                                                "pretrained model"};
constexpr char kNamedPrefix[] = "pretrained:";

std::string HostDescription(const HostFingerprint& host) {
  return host.cpu_model() + ", " + std::to_string(host.cores()) + " cores, Halide target " +
         host.halide_target();
}

}  // namespace

bool IsPretrainedSource(const std::string& model_from) {
  return model_from == kPretrainedSource || model_from.rfind(kNamedPrefix, 0) == 0;
}

std::string PretrainedNameOf(const std::string& model_from) {
  if (model_from.rfind(kNamedPrefix, 0) != 0) return "";
  return model_from.substr(sizeof(kNamedPrefix) - 1);
}

std::string DefaultPretrainedDir() {
  const char* dir = std::getenv("SCHEDFARM_PRETRAINED_DIR");
  if (dir != nullptr && *dir != '\0') return dir;
  return SCHEDFARM_DATA_DIR "/models";
}

std::string HostKindSlug(const HostFingerprint& host) {
  std::string slug;
  for (char c : host.cpu_model()) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "unknown-host" : slug;
}

std::string PretrainedName(const std::string& kind, const HostFingerprint& host) {
  return kind + "-" + HostKindSlug(host);
}

Status WritePretrained(const std::string& path, const PretrainedModel& model) {
  std::string message;
  if (!model.SerializeToString(&message)) {
    return Status::Error("pretrained model '" + path + "': cannot serialize");
  }
  return WriteCompressedFile(path, kPretrainedFile, message);
}

StatusOr<PretrainedModel> ReadPretrained(const std::string& path) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string message, ReadCompressedFile(path, kPretrainedFile));
  const std::string what = "pretrained model '" + path + "'";
  PretrainedModel model;
  if (!model.ParseFromString(message)) {
    return Status::Error(what + ": corrupt: its content does not parse as a PretrainedModel");
  }
  if (model.model().kind().empty() || model.model().weights().empty()) {
    return Status::Error(what + ": corrupt: it holds no model kind or no weights");
  }
  return model;
}

std::vector<std::string> PretrainedNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == kPretrainedExtension) names.push_back(it->path().stem());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string PretrainedPath(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / (name + kPretrainedExtension)).string();
}

Status CheckPretrainedExists(const std::string& dir, const std::string& name) {
  const std::vector<std::string> names = PretrainedNames(dir);
  if (std::find(names.begin(), names.end(), name) != names.end()) return Status::Ok();
  return Status::Error("no pretrained model '" + name + "' in " + dir + " (" +
                       (names.empty() ? "it holds none" : "there are: " + Join(names, ", ")) + ")");
}

Status CheckPretrainedFits(const PretrainedModel& model, const std::string& kind,
                           int schema_version, const HostFingerprint& host) {
  const std::string what = "pretrained model '" + model.name() + "'";
  if (model.model().kind() != kind) {
    return Status::Error(what + " is a " + model.model().kind() +
                         " model, and the campaign scores with " + kind);
  }
  if (model.model().feature_schema_version() != schema_version) {
    return Status::Error(what + " was trained on feature schema " +
                         std::to_string(model.model().feature_schema_version()) +
                         ", and this learner featurizes with schema " +
                         std::to_string(schema_version));
  }
  const std::string difference = HostKindDifference(model.host(), host);
  if (!difference.empty()) {
    return Status::Error(what + " was trained on another kind of host (" +
                         HostDescription(model.host()) + ") than the campaign's worker (" +
                         HostDescription(host) + "): " + difference);
  }
  return Status::Ok();
}

StatusOr<PretrainedModel> ResolvePretrained(const std::string& dir, const std::string& model_from,
                                            const std::string& kind, int schema_version,
                                            const HostFingerprint& host, bool* found,
                                            std::string* why_none) {
  *found = false;
  const std::string named = PretrainedNameOf(model_from);
  if (!named.empty()) {
    SCHEDFARM_RETURN_IF_ERROR(CheckPretrainedExists(dir, named));
    SCHEDFARM_ASSIGN_OR_RETURN(PretrainedModel model, ReadPretrained(PretrainedPath(dir, named)));
    SCHEDFARM_RETURN_IF_ERROR(CheckPretrainedFits(model, kind, schema_version, host));
    *found = true;
    return model;
  }
  // "pretrained": the model of the kind for this host kind, by its name.
  const std::string name = PretrainedName(kind, host);
  const std::vector<std::string> names = PretrainedNames(dir);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    *why_none = "no pretrained " + kind + " model for " + HostDescription(host) + " in " + dir +
                " (looked for '" + name + "'; " +
                (names.empty() ? "it holds none" : "there are: " + Join(names, ", ")) + ")";
    return PretrainedModel();
  }
  SCHEDFARM_ASSIGN_OR_RETURN(PretrainedModel model, ReadPretrained(PretrainedPath(dir, name)));
  const Status fits = CheckPretrainedFits(model, kind, schema_version, host);
  if (!fits.ok()) {
    *why_none = fits.message();
    return PretrainedModel();
  }
  *found = true;
  return model;
}

std::string DescribePretrained(const PretrainedModel& model) {
  const Model& m = model.model();
  std::ostringstream out;
  out << "pretrained model " << model.name() << ": kind " << m.kind() << ", version " << m.version()
      << ", feature schema " << m.feature_schema_version() << "\n"
      << "host: " << HostDescription(model.host()) << "\n";
  for (const PretrainedDataset& d : model.datasets()) {
    out << "dataset " << d.file() << " (id " << d.id() << "): " << d.measurements()
        << " measurements\n";
  }
  out << "trained on " << m.training_set_size() << " samples; held out "
      << m.held_out_pipelines_size() << " pipelines, " << m.held_out_size() << " samples\n";
  std::vector<std::pair<std::string, double>> metrics(m.metrics().begin(), m.metrics().end());
  std::sort(metrics.begin(), metrics.end());
  for (const auto& [name, value] : metrics) {
    out << "  " << name << " " << std::setprecision(4) << value << "\n";
  }
  out << "weights: " << m.weights().size() << " bytes\n";
  return out.str();
}

}  // namespace schedfarm
