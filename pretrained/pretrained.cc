#include "pretrained/pretrained.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>

#include "common/text.h"
#include "dataset/compressed_file.h"
#include "dataset/dataset.h"
#include "scheduler/target.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

constexpr CompressedFileKind kPretrainedFile = {"SFPM", kPretrainedFormatVersion,
                                                "pretrained model"};
constexpr char kNamedPrefix[] = "pretrained:";

// HostDistance's weights: another CPU model counts as a factor of 2 in cores, caches
// or peak; an ISA flag one host has and the other lacks, a tenth of that.
constexpr double kOtherCpuModelDistance = 1.0;
constexpr double kIsaFlagDistance = 0.1;

// A host in full, as the identity rule of a model without a host description compares
// it.
std::string HostDescription(const HostFingerprint& host) {
  return host.cpu_model() + ", " + std::to_string(host.cores()) + " cores, Halide target " +
         host.halide_target();
}

// A host as compatibility sees it: CPU model, cores and vector ISA ("AMD EPYC, 2 cores,
// avx512"), with its Halide target when `with_target`.
std::string HostSummary(const HostFingerprint& host, bool with_target = false) {
  std::string summary = host.cpu_model() + ", " + std::to_string(host.cores()) + " cores, " +
                        VectorIsaName(VectorBytesOfHalideTarget(host.halide_target()));
  if (with_target) summary += ", Halide target " + host.halide_target();
  return summary;
}

// The host kinds of `model`, each summarized, for the list of what the models cover.
std::string HostsSummary(const PretrainedModel& model) {
  std::vector<std::string> hosts;
  for (const HostFingerprint& host : PretrainedHosts(model)) hosts.push_back(HostSummary(host));
  return Join(hosts, "; ");
}

// A host's ISA flags, sorted, for comparing two hosts' flags.
std::set<std::string> IsaFlags(const HostFingerprint& host) {
  return std::set<std::string>(host.isa_flags().begin(), host.isa_flags().end());
}

// The flags in `a` and not in `b`, sorted.
std::vector<std::string> FlagsNotIn(const std::set<std::string>& a,
                                    const std::set<std::string>& b) {
  std::vector<std::string> missing;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(missing));
  return missing;
}

// The ISA flags (as /proc/cpuinfo names them) of the vector instructions Halide uses at
// `vector_bytes`, which a model's features of that width were measured with.
std::vector<std::string> VectorIsaFlags(int vector_bytes) {
  if (vector_bytes >= 64) return {"avx512f"};
  if (vector_bytes >= 32) return {"avx2", "fma"};
  return {};
}

// |log2(a / b)|: how many factors of 2 apart two sizes are; 0 when either is unknown.
double Log2Ratio(double a, double b) { return a > 0 && b > 0 ? std::abs(std::log2(a / b)) : 0; }

// A host of a model that serves a worker, and how far it is from the worker's.
struct HostFit {
  HostFingerprint host;
  double distance = 0;
};

// Why a model without a host description does not serve `worker`: it serves its exact
// host kind only. Empty, with *fit its host, when `worker` is of that kind.
std::string OlderModelMisfit(const PretrainedModel& model, const HostFingerprint& worker,
                             HostFit* fit) {
  const std::string difference = HostKindDifference(model.host(), worker);
  if (difference.empty()) {
    *fit = {model.host(), 0};
    return "";
  }
  return "carries no host description: it was written before models took the host as input, "
         "and serves only the exact host kind it was trained on (" +
         HostDescription(model.host()) + "), not the campaign's worker (" +
         HostDescription(worker) + "): " + difference;
}

// Why none of `hosts` is compatible with `worker`; empty, with *fit the nearest of
// those that are, when one is.
std::string NearestHostMisfit(const google::protobuf::RepeatedPtrField<HostFingerprint>& hosts,
                              const HostFingerprint& worker, HostFit* fit) {
  std::vector<std::string> reasons;
  std::optional<HostFit> nearest;
  for (const HostFingerprint& host : hosts) {
    if (std::string reason = HostIncompatibility(host, worker); !reason.empty()) {
      reasons.push_back(std::move(reason));
      continue;
    }
    const double distance = HostDistance(host, worker);
    if (!nearest || distance < nearest->distance) nearest = HostFit{host, distance};
  }
  if (!nearest) return "does not fit the campaign's worker: " + Join(reasons, "; ");
  *fit = *nearest;
  return "";
}

// Why `model` cannot serve a campaign of `kind` under the schema on `worker` (the words
// after its name: "is a gbt model, and ..."); empty, with *fit its host nearest
// `worker`, when it can.
std::string Misfit(const PretrainedModel& model, const std::string& kind, int schema_version,
                   const HostFingerprint& worker, HostFit* fit) {
  if (model.model().kind() != kind) {
    return "is a " + model.model().kind() + " model, and the campaign scores with " + kind;
  }
  if (model.model().feature_schema_version() != schema_version) {
    return "was trained on feature schema " +
           std::to_string(model.model().feature_schema_version()) +
           ", and this learner featurizes with schema " + std::to_string(schema_version);
  }
  if (model.hosts().empty()) return OlderModelMisfit(model, worker, fit);
  return NearestHostMisfit(model.hosts(), worker, fit);
}

// Misfit as an error naming the model.
Status CheckFits(const PretrainedModel& model, const std::string& kind, int schema_version,
                 const HostFingerprint& worker, HostFit* fit) {
  const std::string misfit = Misfit(model, kind, schema_version, worker, fit);
  if (misfit.empty()) return Status::Ok();
  return Status::Error("pretrained model '" + model.name() + "' " + misfit);
}

// *why_none of "pretrained" when no model of `kind` in `dir` fits `worker`: the
// campaign starts cold; `covered` names each model of the kind with its hosts and why
// it does not fit.
std::string ColdStartReason(const std::string& dir, const std::string& kind,
                            const HostFingerprint& worker,
                            const std::vector<std::string>& covered) {
  std::string what;
  if (covered.empty()) {
    const std::vector<std::string> names = PretrainedNames(dir);
    what = "there is no " + kind + " model in " + dir + " (" +
           (names.empty() ? "it holds none" : "there are: " + Join(names, ", ")) + ")";
  } else {
    what = "the " + kind + " models in " + dir + " cover " + Join(covered, "; ");
  }
  return "no pretrained " + kind + " model fits this worker (" + HostSummary(worker) +
         "), so the campaign starts cold: " + what +
         "; a model trained on this host kind's datasets would be " + PretrainedName(kind, worker);
}

// "pretrained": of the models of `kind` in `dir` that fit `worker`, the one with the
// host nearest it (ties to the first name), with *fit that host.
StatusOr<std::optional<PretrainedModel>> NearestPretrained(const std::string& dir,
                                                           const std::string& kind,
                                                           int schema_version,
                                                           const HostFingerprint& worker,
                                                           HostFit* fit, std::string* why_none) {
  std::optional<PretrainedModel> nearest;
  std::vector<std::string> covered;
  for (const std::string& name : PretrainedNames(dir)) {
    SCHEDFARM_ASSIGN_OR_RETURN(PretrainedModel model, ReadPretrained(PretrainedPath(dir, name)));
    if (model.model().kind() != kind) continue;
    HostFit model_fit;
    const std::string misfit = Misfit(model, kind, schema_version, worker, &model_fit);
    if (!misfit.empty()) {
      covered.push_back(name + " (" + HostsSummary(model) + "), which " + misfit);
    } else if (!nearest || model_fit.distance < fit->distance) {
      nearest = std::move(model);
      *fit = std::move(model_fit);
    }
  }
  if (!nearest) *why_none = ColdStartReason(dir, kind, worker, covered);
  return nearest;
}

// DescribePretrained's lines of the host kinds the model was trained on.
std::string HostLines(const PretrainedModel& model) {
  if (model.hosts().empty()) {
    return "host: " + HostDescription(model.host()) +
           " (no host description: it serves this exact host kind only)\n";
  }
  std::string lines;
  for (const HostFingerprint& host : model.hosts()) {
    lines += "host: " + HostDescription(host) + "\n";
  }
  return lines;
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

std::string PretrainedName(const std::string& kind,
                           const google::protobuf::RepeatedPtrField<HostFingerprint>& hosts) {
  std::set<std::string> slugs;
  for (const HostFingerprint& host : hosts) slugs.insert(HostKindSlug(host));
  if (slugs.empty()) slugs.insert(HostKindSlug(HostFingerprint()));
  return kind + "-" + Join(std::vector<std::string>(slugs.begin(), slugs.end()), "+");
}

std::vector<HostFingerprint> PretrainedHosts(const PretrainedModel& model) {
  if (model.hosts().empty()) return {model.host()};
  return std::vector<HostFingerprint>(model.hosts().begin(), model.hosts().end());
}

std::string HostIncompatibility(const HostFingerprint& trained, const HostFingerprint& worker) {
  const int trained_bytes = VectorBytesOfHalideTarget(trained.halide_target());
  const int worker_bytes = VectorBytesOfHalideTarget(worker.halide_target());
  if (trained_bytes != worker_bytes) {
    return "the host trained on (" + HostSummary(trained) + ") has " +
           std::to_string(trained_bytes) + "-byte vectors and the worker (" + HostSummary(worker) +
           ") " + std::to_string(worker_bytes) + "-byte vectors";
  }
  const std::set<std::string> trained_flags = IsaFlags(trained), worker_flags = IsaFlags(worker);
  std::vector<std::string> lacked;
  for (const std::string& flag : VectorIsaFlags(trained_bytes)) {
    if (trained_flags.count(flag) && !worker_flags.count(flag)) lacked.push_back(flag);
  }
  if (lacked.empty()) return "";
  return "the worker (" + HostSummary(worker) + ") lacks " + Join(lacked, ", ") +
         ", which the host trained on (" + HostSummary(trained) + ") has for its " +
         std::to_string(trained_bytes) + "-byte vectors";
}

double HostDistance(const HostFingerprint& a, const HostFingerprint& b) {
  double distance = a.cpu_model() == b.cpu_model() ? 0 : kOtherCpuModelDistance;
  distance += Log2Ratio(a.cores(), b.cores());
  distance += Log2Ratio(a.l2_bytes(), b.l2_bytes());
  distance += Log2Ratio(a.l3_bytes(), b.l3_bytes());
  distance += Log2Ratio(TargetOf(a, a.cores()).peak_gflops, TargetOf(b, b.cores()).peak_gflops);
  const std::set<std::string> a_flags = IsaFlags(a), b_flags = IsaFlags(b);
  const size_t differing =
      FlagsNotIn(a_flags, b_flags).size() + FlagsNotIn(b_flags, a_flags).size();
  return distance + kIsaFlagDistance * static_cast<double>(differing);
}

std::string HostDifferenceNote(const HostFingerprint& trained, const HostFingerprint& worker) {
  if (HostKindDifference(trained, worker).empty()) return "";
  const bool targets_differ = trained.halide_target() != worker.halide_target();
  const std::set<std::string> trained_flags = IsaFlags(trained), worker_flags = IsaFlags(worker);
  std::vector<std::string> worker_parts = {HostSummary(worker, targets_differ)};
  for (const std::string& flag : FlagsNotIn(worker_flags, trained_flags)) {
    worker_parts.push_back("+" + flag);
  }
  for (const std::string& flag : FlagsNotIn(trained_flags, worker_flags)) {
    worker_parts.push_back("-" + flag);
  }
  return "trained on " + HostSummary(trained, targets_differ) +
         "; this worker: " + Join(worker_parts, ", ");
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
  HostFit fit;
  return CheckFits(model, kind, schema_version, host, &fit);
}

StatusOr<PretrainedModel> ResolvePretrained(const std::string& dir, const std::string& model_from,
                                            const std::string& kind, int schema_version,
                                            const HostFingerprint& host, bool* found,
                                            std::string* why_none, std::string* host_note) {
  *found = false;
  HostFit fit;
  PretrainedModel model;
  const std::string named = PretrainedNameOf(model_from);
  if (!named.empty()) {
    SCHEDFARM_RETURN_IF_ERROR(CheckPretrainedExists(dir, named));
    SCHEDFARM_ASSIGN_OR_RETURN(model, ReadPretrained(PretrainedPath(dir, named)));
    SCHEDFARM_RETURN_IF_ERROR(CheckFits(model, kind, schema_version, host, &fit));
  } else {
    SCHEDFARM_ASSIGN_OR_RETURN(std::optional<PretrainedModel> nearest,
                               NearestPretrained(dir, kind, schema_version, host, &fit, why_none));
    if (!nearest) return PretrainedModel();
    model = std::move(*nearest);
  }
  *found = true;
  if (host_note != nullptr) *host_note = HostDifferenceNote(fit.host, host);
  return model;
}

std::string DescribePretrained(const PretrainedModel& model) {
  const Model& m = model.model();
  std::ostringstream out;
  out << "pretrained model " << model.name() << ": kind " << m.kind() << ", version " << m.version()
      << ", feature schema " << m.feature_schema_version() << "\n"
      << HostLines(model);
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
