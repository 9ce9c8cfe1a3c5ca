#include "dataset/dataset.h"

#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/sha256.h"
#include "dataset/compressed_file.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"

namespace schedfarm {
namespace {

constexpr CompressedFileKind kDatasetFile = {"SFDS", kDatasetFormatVersion, "dataset"};

std::string ListOf(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : " ") + item;
  return out;
}

}  // namespace

std::string DatasetId(const std::string& file_bytes) {
  return Sha256Hex(file_bytes).substr(0, 32);
}

std::string PortableSource(const std::string& source) {
  for (const char* kind : {"onnx:", "yaml:"}) {
    const size_t at = source.find(kind);
    if (at == std::string::npos) continue;
    const size_t path = at + std::strlen(kind);
    const std::filesystem::path file(source.substr(path));
    const std::filesystem::path folder = file.parent_path().filename();
    return source.substr(0, path) +
           (folder.empty() ? file.filename() : folder / file.filename()).string();
  }
  return source;
}

std::string DatasetKey(const std::string& pipeline_id, const std::string& schedule_hash) {
  return pipeline_id + '\0' + schedule_hash;
}

std::string HostKindDifference(const HostFingerprint& a, const HostFingerprint& b) {
  auto differ = [](const std::string& what, const std::string& x, const std::string& y) {
    return what + " '" + x + "' against '" + y + "'";
  };
  if (a.cpu_model() != b.cpu_model()) return differ("cpu_model", a.cpu_model(), b.cpu_model());
  if (a.cores() != b.cores()) {
    return differ("cores", std::to_string(a.cores()), std::to_string(b.cores()));
  }
  if (a.halide_target() != b.halide_target()) {
    return differ("halide_target", a.halide_target(), b.halide_target());
  }
  const std::string a_isa = ListOf(a.isa_flags()), b_isa = ListOf(b.isa_flags());
  if (a_isa != b_isa) return differ("isa_flags", a_isa, b_isa);
  return "";
}

Status CheckDataset(const Dataset& dataset, std::vector<std::string>* pipeline_ids) {
  std::set<std::string> pipelines;
  for (int i = 0; i < dataset.pipelines_size(); ++i) {
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(dataset.pipelines(i));
    if (!graph.ok()) return graph.status().WithContext("pipeline " + std::to_string(i));
    const std::string id = PipelineId(*graph);
    if (!pipelines.insert(id).second) {
      return Status::Error("pipeline " + std::to_string(i) + " (" + id + ") appears twice");
    }
    if (pipeline_ids != nullptr) pipeline_ids->push_back(id);
  }
  for (int i = 0; i < dataset.measurements_size(); ++i) {
    const Measurement& m = dataset.measurements(i);
    const std::string where = "measurement " + std::to_string(i) + " (lease " + m.lease_id() + ")";
    if (!pipelines.count(m.candidate().pipeline_id())) {
      return Status::Error(where + ": pipeline " + m.candidate().pipeline_id() +
                           " is not in the dataset");
    }
    if (m.candidate().schedule_hash().empty()) return Status::Error(where + ": no schedule hash");
    const std::string difference = HostKindDifference(m.host(), dataset.host());
    if (!difference.empty()) {
      return Status::Error(where + " was taken on another kind of host than the dataset's: " +
                           difference);
    }
  }
  return Status::Ok();
}

Status WriteDataset(const std::string& path, const Dataset& dataset) {
  SCHEDFARM_RETURN_IF_ERROR(CheckDataset(dataset).WithContext("dataset '" + path + "'"));
  std::string message;
  if (!dataset.SerializeToString(&message)) {
    return Status::Error("dataset '" + path + "': cannot serialize (over 2 GiB?)");
  }
  return WriteCompressedFile(path, kDatasetFile, message);
}

StatusOr<LoadedDataset> ReadDataset(const std::string& path) {
  const std::string what = "dataset '" + path + "'";
  std::string bytes;
  SCHEDFARM_ASSIGN_OR_RETURN(std::string message, ReadCompressedFile(path, kDatasetFile, &bytes));
  LoadedDataset loaded;
  loaded.path = path;
  loaded.id = DatasetId(bytes);
  if (!loaded.data.ParseFromString(message)) {
    return Status::Error(what + ": corrupt: its content does not parse as a Dataset");
  }
  SCHEDFARM_RETURN_IF_ERROR(CheckDataset(loaded.data, &loaded.pipeline_ids).WithContext(what));
  return loaded;
}

Status AddDatasetPart(const Campaign& campaign, const std::vector<PipelineSpec>& pipelines,
                      const std::vector<Measurement>& measurements, int64_t packed_unix_ms,
                      Dataset* dataset) {
  const std::string what = "campaign " + campaign.id() + " (" + campaign.name() + ")";
  for (const DatasetPart& part : dataset->parts()) {
    if (part.campaign_id() == campaign.id()) {
      return Status::Error(what + " is in the dataset already");
    }
  }
  std::set<std::string> known;  // pipeline ids (content ids: equal ids, equal pipelines)
  for (const PipelineSpec& spec : dataset->pipelines()) {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(spec));
    known.insert(PipelineId(graph));
  }
  for (const PipelineSpec& spec : pipelines) {
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
    if (!graph.ok()) return graph.status().WithContext(what + ", pipeline '" + spec.name() + "'");
    if (!known.insert(PipelineId(*graph)).second) continue;
    PipelineSpec* kept = dataset->add_pipelines();
    *kept = spec;
    kept->set_source(PortableSource(spec.source()));
  }
  DatasetPart part;
  part.set_campaign_id(campaign.id());
  part.set_campaign_name(campaign.name());
  part.set_yaml_source(campaign.yaml_source());
  part.set_packed_unix_ms(packed_unix_ms);
  bool have_host = dataset->has_host();
  for (const Measurement& m : measurements) {
    if (m.host().cpu_model().empty()) continue;  // made by the coordinator, not measured
    if (!have_host) {
      *dataset->mutable_host() = m.host();
      dataset->mutable_host()->clear_worker_id();
      have_host = true;
    }
    if (m.host().test_time_scale() > 0) {
      std::ostringstream scale;
      scale << m.host().test_time_scale();
      return Status::Error(what + ": lease " + m.lease_id() + " was measured on worker " +
                           m.host().worker_id() + ", which multiplied its times by " +
                           scale.str() + " for a test (farm-worker --test-time-scale): they "
                           "are not real times");
    }
    const std::string difference = HostKindDifference(m.host(), dataset->host());
    if (!difference.empty()) {
      return Status::Error(what + ": lease " + m.lease_id() + " was measured on worker " +
                           m.host().worker_id() +
                           ", another kind of host than the dataset's: " + difference);
    }
    if (!known.count(m.candidate().pipeline_id())) {
      return Status::Error(what + ": lease " + m.lease_id() + " measured pipeline " +
                           m.candidate().pipeline_id() + ", which the campaign does not hold");
    }
    const int64_t finished = m.finished_unix_ms();
    if (part.measurements() == 0 || finished < part.first_unix_ms()) {
      part.set_first_unix_ms(finished);
    }
    part.set_last_unix_ms(std::max(part.last_unix_ms(), finished));
    part.set_measurements(part.measurements() + 1);
    *dataset->add_measurements() = m;
  }
  *dataset->add_parts() = std::move(part);
  return Status::Ok();
}

std::string DescribeDataset(const LoadedDataset& dataset) {
  const Dataset& d = dataset.data;
  const auto date = [](int64_t unix_ms) {
    const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", std::gmtime(&seconds));
    return std::string(text);
  };
  std::ostringstream out;
  out << "dataset " << dataset.path << " (id " << dataset.id << ")\n"
      << "host: " << d.host().cpu_model() << ", " << d.host().cores() << " cores, Halide target "
      << d.host().halide_target() << "\n";
  for (const DatasetPart& part : d.parts()) {
    out << "campaign " << part.campaign_name() << " (" << part.campaign_id()
        << "): " << part.measurements() << " measurements from " << date(part.first_unix_ms())
        << " to " << date(part.last_unix_ms()) << "\n";
  }
  const std::map<std::string, std::vector<int>> by_key = MeasurementsByKey(d);
  size_t repeated = 0;
  for (const auto& [key, indexes] : by_key) repeated += indexes.size() > 1 ? 1 : 0;
  std::map<std::string, int> by_status;
  for (const Measurement& m : d.measurements()) ++by_status[MeasurementStatus_Name(m.status())];
  out << d.pipelines_size() << " pipelines, " << by_key.size() << " distinct schedules ("
      << repeated << " measured more than once), " << d.measurements_size() << " measurements:";
  for (const auto& [status, count] : by_status) out << " " << status << " " << count;
  out << "\n";
  return out.str();
}

std::map<std::string, std::vector<int>> MeasurementsByKey(const Dataset& dataset) {
  std::map<std::string, std::vector<int>> index;
  for (int i = 0; i < dataset.measurements_size(); ++i) {
    const Candidate& c = dataset.measurements(i).candidate();
    index[DatasetKey(c.pipeline_id(), c.schedule_hash())].push_back(i);
  }
  return index;
}

std::map<std::string, const Measurement*> FirstOkMeasurements(const Dataset& dataset) {
  std::map<std::string, const Measurement*> first;
  for (const Measurement& m : dataset.measurements()) {
    const Candidate& c = m.candidate();
    if (m.status() != OK || !(m.stats().median_seconds() > 0) || c.schedule().stages_size() == 0) {
      continue;
    }
    first.emplace(DatasetKey(c.pipeline_id(), c.schedule_hash()), &m);
  }
  return first;
}

}  // namespace schedfarm
