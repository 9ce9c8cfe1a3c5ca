#include "storage/export.h"

#include <google/protobuf/util/json_util.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "pipeline/graph.h"
#include "storage/throughput.h"

namespace schedfarm {

namespace {

// One exported value: a string, or a number already formatted ("" when not finite).
struct Cell {
  std::string text;
  bool is_string;
};

Cell Str(std::string s) { return Cell{std::move(s), true}; }

Cell Num(double v) {
  if (!std::isfinite(v)) return Cell{"", false};
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return Cell{ec == std::errc() ? std::string(buf, end) : "", false};
}

Cell Int(int64_t v) { return Cell{std::to_string(v), false}; }

// An unknown figure is empty, as a non-finite one.
Cell Num(std::optional<double> v) { return v ? Num(*v) : Cell{"", false}; }

std::string CsvField(const Cell& cell) {
  if (cell.text.find_first_of(",\"\r\n") == std::string::npos) return cell.text;
  std::string out = "\"";
  for (char c : cell.text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A positive figure, or an empty cell.
Cell Known(double v) { return v > 0 ? Num(v) : Cell{"", false}; }

StatusOr<std::vector<Cell>> Row(const StoredMeasurement& stored, const PipelineWork& work) {
  const Measurement& m = stored.measurement;
  const Throughput throughput = MeasurementThroughput(m, work);
  const Candidate& c = m.candidate();
  const SampleStats& s = m.stats();
  std::string schedule;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  auto status = google::protobuf::util::MessageToJsonString(c.schedule(), &schedule, options);
  if (!status.ok()) {
    return Status::Error("measurement " + std::to_string(stored.seq) +
                         ": cannot write its schedule as JSON: " + status.ToString());
  }
  return std::vector<Cell>{Int(static_cast<int64_t>(stored.seq)),
                           Str(c.campaign()),
                           Str(m.lease_id()),
                           Str(c.pipeline_id()),
                           Str(c.schedule_hash()),
                           Int(c.repeat()),
                           Str(c.origin()),
                           Str(c.model_version()),
                           Num(c.prediction().mean_seconds()),
                           Num(c.acquisition_score()),
                           Str(c.acquisition()),
                           Int(c.sampled_stages()),
                           Num(c.search_seconds()),
                           Str(MeasurementStatus_Name(m.status())),
                           Num(m.compile_seconds()),
                           Num(s.min_seconds()),
                           Num(s.median_seconds()),
                           Num(s.mean_seconds()),
                           Num(s.stddev_seconds()),
                           Num(s.cv()),
                           Int(m.samples_seconds_size()),
                           Known(work.flops),
                           Num(throughput.gflops),
                           Num(throughput.peak_gflops),
                           Num(throughput.peak_share),
                           Known(work.bytes),
                           Num(throughput.gbps),
                           Num(throughput.bandwidth_gbps),
                           Num(throughput.bandwidth_share),
                           Str(m.host().worker_id()),
                           Str(m.host().cpu_model()),
                           Int(m.finished_unix_ms()),
                           Str(m.error()),
                           Cell{schedule, false}};
}

// The work of a pipeline of the store (none when the store does not hold it).
StatusOr<PipelineWork> StoredPipelineWork(const Store& store, const std::string& pipeline_id) {
  SCHEDFARM_ASSIGN_OR_RETURN(const std::optional<PipelineSpec> spec,
                             store.GetPipeline(pipeline_id));
  if (!spec) return PipelineWork{};
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  if (!graph.ok()) return graph.status().WithContext("pipeline " + pipeline_id + " of the store");
  return PipelineWork{graph->total_cost().flops, graph->compulsory_bytes()};
}

}  // namespace

void WriteExportHeader(ExportFormat format, std::ostream& out) {
  if (format != ExportFormat::kCsv) return;
  for (size_t i = 0; i < std::size(kExportColumns); ++i) out << (i ? "," : "") << kExportColumns[i];
  out << "\n";
}

Status WriteExportRow(const StoredMeasurement& stored, const PipelineWork& work,
                      ExportFormat format, std::ostream& out) {
  SCHEDFARM_ASSIGN_OR_RETURN(const std::vector<Cell> row, Row(stored, work));
  for (size_t i = 0; i < std::size(kExportColumns); ++i) {
    const Cell& cell = row[i];
    if (format == ExportFormat::kCsv) {
      out << (i ? "," : "") << CsvField(cell);
    } else {
      out << (i ? "," : "{") << JsonString(kExportColumns[i]) << ":"
          << (cell.is_string      ? JsonString(cell.text)
              : cell.text.empty() ? "null"
                                  : cell.text);
    }
  }
  out << (format == ExportFormat::kCsv ? "\n" : "}\n");
  return Status::Ok();
}

Status ExportMeasurements(const Store& store, const std::string& campaign, ExportFormat format,
                          std::ostream& out) {
  WriteExportHeader(format, out);
  std::map<std::string, PipelineWork> works;  // by pipeline id, read from the store once each
  Status row_status;
  Status scan = store.ScanMeasurements(campaign, 0, [&](const StoredMeasurement& stored) {
    const std::string& pipeline_id = stored.measurement.candidate().pipeline_id();
    auto known = works.find(pipeline_id);
    if (known == works.end()) {
      StatusOr<PipelineWork> counted = StoredPipelineWork(store, pipeline_id);
      if (!counted.ok()) {
        row_status = counted.status().WithContext("measurement " + std::to_string(stored.seq));
        return false;
      }
      known = works.emplace(pipeline_id, *counted).first;
    }
    row_status = WriteExportRow(stored, known->second, format, out);
    return row_status.ok() && static_cast<bool>(out);
  });
  SCHEDFARM_RETURN_IF_ERROR(scan);
  SCHEDFARM_RETURN_IF_ERROR(row_status);
  if (!out) return Status::Error("export of campaign '" + campaign + "': write failed");
  return Status::Ok();
}

}  // namespace schedfarm
