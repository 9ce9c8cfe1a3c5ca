// CSV and JSON-lines export of a campaign's measurements: read back with an RFC 4180
// reader and protobuf's JSON parser, every column checked, the schedule round-tripped;
// the header and row writers alone give the same text; GFLOP/s and the share of the
// host's peak where they are known, and only there.
#include "storage/export.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "pipeline/graph.h"
#include "storage/throughput.h"
#include "test_records.h"
#include "tests/pipeline/test_pipelines.h"

namespace schedfarm {
namespace {

// Rows of RFC 4180 CSV (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> ReadCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        rows.back().back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        rows.back().back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else {
      rows.back().back() += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

class ExportFixture {
 public:
  ExportFixture() {
    auto opened = Store::Open(dir_.Sub("db"));
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    store = std::move(*opened);
    ok = MakeMeasurement(MakeCandidate("c1", "p1", 1), OK, 0.00125);
    failed = MakeMeasurement(MakeCandidate("c1", "p2", 2), CRASH, 0);
    failed.mutable_stats()->set_cv(std::nan(""));
    Store::Batch batch;
    batch.AddMeasurement(ok);
    batch.AddMeasurement(MakeMeasurement(MakeCandidate("c2", "p1", 3), OK, 0.5));
    batch.AddMeasurement(failed);
    EXPECT_TRUE(store->Commit(batch).ok());
  }

  ScratchDir dir_;
  std::unique_ptr<Store> store;
  Measurement ok, failed;
};

ScheduleSpec ParseSchedule(const std::string& json) {
  ScheduleSpec schedule;
  auto status = google::protobuf::util::JsonStringToMessage(json, &schedule);
  EXPECT_TRUE(status.ok()) << status.ToString() << ": " << json;
  return schedule;
}

// The index of `name` in kExportColumns.
size_t Column(const std::string& name) {
  for (size_t i = 0; i < std::size(kExportColumns); ++i) {
    if (kExportColumns[i] == name) return i;
  }
  ADD_FAILURE() << "no column " << name;
  return 0;
}

TEST(StoreExport, CsvExportHasOneRowPerMeasurement) {
  ExportFixture f;
  std::ostringstream out;
  ASSERT_TRUE(ExportMeasurements(*f.store, "c1", ExportFormat::kCsv, out).ok());
  const auto rows = ReadCsv(out.str());
  ASSERT_EQ(rows.size(), 3u) << out.str();
  const std::vector<std::string> header(std::begin(kExportColumns), std::end(kExportColumns));
  EXPECT_EQ(rows[0], header);
  for (const auto& row : rows) ASSERT_EQ(row.size(), header.size()) << out.str();
  const std::vector<std::string> first = {"1",
                                          "c1",
                                          "lease-sched1",
                                          "p1",
                                          "sched1",
                                          "0",
                                          "random",
                                          "",
                                          "0",
                                          "0",
                                          "",
                                          "0",
                                          "0",
                                          "OK",
                                          "0.75",
                                          "0.00124375",
                                          "0.00125",
                                          "0.00125125",
                                          "3.75e-06",
                                          "0.003",
                                          "10",
                                          "",  // flops: the store holds no pipeline p1
                                          "",
                                          "",
                                          "",
                                          "",  // bytes: likewise
                                          "",
                                          "",
                                          "",
                                          "w-1",
                                          "Intel(R) Xeon(R) Gold 6230",
                                          "1700000000000",
                                          ""};
  EXPECT_EQ(std::vector<std::string>(rows[1].begin(), rows[1].end() - 1), first);
  EXPECT_EQ(ParseSchedule(rows[1].back()).SerializeAsString(),
            f.ok.candidate().schedule().SerializeAsString());
  // The failed one: seq 3 (the other campaign's took 2), its error text intact, the
  // non-finite cv empty.
  EXPECT_EQ(rows[2][0], "3");
  EXPECT_EQ(rows[2][13], "CRASH");
  EXPECT_EQ(rows[2][19], "");
  EXPECT_EQ(rows[2][Column("error")], f.failed.error());
}

TEST(StoreExport, JsonLinesExportHasOneObjectPerMeasurement) {
  ExportFixture f;
  std::ostringstream out;
  ASSERT_TRUE(ExportMeasurements(*f.store, "c1", ExportFormat::kJsonLines, out).ok());
  std::istringstream lines(out.str());
  std::vector<google::protobuf::Struct> objects;
  for (std::string line; std::getline(lines, line);) {
    google::protobuf::Struct object;
    auto status = google::protobuf::util::JsonStringToMessage(line, &object);
    ASSERT_TRUE(status.ok()) << status.ToString() << ": " << line;
    objects.push_back(object);
  }
  ASSERT_EQ(objects.size(), 2u) << out.str();
  for (const auto& object : objects) {
    EXPECT_EQ(object.fields_size(), static_cast<int>(std::size(kExportColumns)));
  }
  const auto& a = objects[0].fields();
  EXPECT_EQ(a.at("seq").number_value(), 1);
  EXPECT_EQ(a.at("pipeline_id").string_value(), "p1");
  EXPECT_EQ(a.at("schedule_hash").string_value(), "sched1");
  EXPECT_EQ(a.at("status").string_value(), "OK");
  EXPECT_EQ(a.at("median_seconds").number_value(), 0.00125);
  EXPECT_EQ(a.at("samples").number_value(), 10);
  EXPECT_EQ(a.at("cpu_model").string_value(), "Intel(R) Xeon(R) Gold 6230");
  std::string schedule_json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(a.at("schedule"), &schedule_json).ok());
  EXPECT_EQ(ParseSchedule(schedule_json).SerializeAsString(),
            f.ok.candidate().schedule().SerializeAsString());
  const auto& b = objects[1].fields();
  EXPECT_EQ(b.at("seq").number_value(), 3);
  EXPECT_EQ(b.at("status").string_value(), "CRASH");
  EXPECT_EQ(b.at("error").string_value(), f.failed.error());
  EXPECT_EQ(b.at("cv").kind_case(), google::protobuf::Value::kNullValue);
}

TEST(StoreExport, ExportOfAnUnknownCampaignIsEmpty) {
  ExportFixture f;
  std::ostringstream csv, jsonl;
  ASSERT_TRUE(ExportMeasurements(*f.store, "c3", ExportFormat::kCsv, csv).ok());
  ASSERT_TRUE(ExportMeasurements(*f.store, "c3", ExportFormat::kJsonLines, jsonl).ok());
  EXPECT_EQ(ReadCsv(csv.str()).size(), 1u);  // the header
  EXPECT_EQ(jsonl.str(), "");
}

// Each OK row carries its pipeline's FLOPs, GFLOP/s at its median and their share of its
// host's peak at the thread count it ran with; a figure that is unknown is empty.
TEST(StoreExport, RowsCarryGflopsAndTheShareOfTheHostsPeak) {
  ScratchDir dir;
  auto opened = Store::Open(dir.Sub("db"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const PipelineSpec spec = SmallConvPipeline();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  ASSERT_TRUE(graph.ok());
  const double flops = graph->total_cost().flops;
  ASSERT_GT(flops, 0);
  // One host with a peak at 1 and 4 threads (a bandwidth at 4), measured at 4, 2 and 1 (the
  // default) threads; a host without a peak; a failure; a pipeline the store does not hold.
  const auto with_peak = [](Measurement m, int threads) {
    (*m.mutable_host()->mutable_peak_gflops())[1] = 50;
    (*m.mutable_host()->mutable_peak_gflops())[4] = 180;
    (*m.mutable_host()->mutable_bandwidth_gbps())[4] = 30;
    m.mutable_host()->set_peak_isa("avx512");
    m.mutable_settings()->set_threads(threads);
    return m;
  };
  const double median = 2e-5;
  Store::Batch batch;
  batch.PutPipeline("p1", spec);
  batch.AddMeasurement(with_peak(MakeMeasurement(MakeCandidate("c1", "p1", 1), OK, median), 4));
  batch.AddMeasurement(with_peak(MakeMeasurement(MakeCandidate("c1", "p1", 2), OK, median), 2));
  batch.AddMeasurement(with_peak(MakeMeasurement(MakeCandidate("c1", "p1", 3), OK, median), 0));
  batch.AddMeasurement(MakeMeasurement(MakeCandidate("c1", "p1", 4), OK, median));
  batch.AddMeasurement(with_peak(MakeMeasurement(MakeCandidate("c1", "p1", 5), CRASH, 0), 4));
  batch.AddMeasurement(with_peak(MakeMeasurement(MakeCandidate("c1", "p9", 6), OK, median), 4));
  ASSERT_TRUE((*opened)->Commit(batch).ok());

  std::ostringstream csv;
  ASSERT_TRUE(ExportMeasurements(**opened, "c1", ExportFormat::kCsv, csv).ok());
  const auto rows = ReadCsv(csv.str());
  ASSERT_EQ(rows.size(), 7u) << csv.str();
  const size_t f = Column("flops"), g = Column("gflops"), p = Column("peak_gflops"),
               share = Column("peak_share"), b = Column("bytes"), gbps = Column("gbps"),
               bandwidth_share = Column("bandwidth_share");
  const double gflops = flops / median / 1e9;
  const double bytes = graph->compulsory_bytes(), rate = bytes / median / 1e9;
  // At 4 threads: the 4-thread peak.
  EXPECT_DOUBLE_EQ(std::stod(rows[1][f]), flops);
  EXPECT_NEAR(std::stod(rows[1][g]), gflops, 1e-12 * gflops);
  EXPECT_EQ(rows[1][p], "180");
  EXPECT_NEAR(std::stod(rows[1][share]), gflops / 180, 1e-12);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][b]), bytes);
  EXPECT_NEAR(std::stod(rows[1][gbps]), rate, 1e-12 * rate);
  EXPECT_NEAR(std::stod(rows[1][bandwidth_share]), rate / 30, 1e-12);
  // At 2 threads: no peak there, so GFLOP/s and no share.
  EXPECT_NEAR(std::stod(rows[2][g]), gflops, 1e-12 * gflops);
  EXPECT_EQ(rows[2][p], "");
  EXPECT_EQ(rows[2][share], "");
  EXPECT_NEAR(std::stod(rows[2][gbps]), rate, 1e-12 * rate);
  EXPECT_EQ(rows[2][bandwidth_share], "");
  // Threads unset: the default 1, and its peak.
  EXPECT_EQ(rows[3][p], "50");
  EXPECT_NEAR(std::stod(rows[3][share]), gflops / 50, 1e-12);
  // A host without a peak.
  EXPECT_NEAR(std::stod(rows[4][g]), gflops, 1e-12 * gflops);
  EXPECT_EQ(rows[4][share], "");
  // A failure has its pipeline's FLOPs and nothing measured.
  EXPECT_DOUBLE_EQ(std::stod(rows[5][f]), flops);
  EXPECT_EQ(rows[5][g], "");
  EXPECT_EQ(rows[5][share], "");
  // A pipeline the store does not hold: no FLOPs, so nothing.
  EXPECT_EQ(rows[6][f], "");
  EXPECT_EQ(rows[6][g], "");
  EXPECT_EQ(rows[6][share], "");
  EXPECT_EQ(rows[6][b], "");
  EXPECT_EQ(rows[6][gbps], "");

  // JSON lines: numbers, and null where unknown.
  std::ostringstream jsonl;
  ASSERT_TRUE(ExportMeasurements(**opened, "c1", ExportFormat::kJsonLines, jsonl).ok());
  std::istringstream lines(jsonl.str());
  std::vector<google::protobuf::Struct> objects;
  for (std::string line; std::getline(lines, line);) {
    google::protobuf::Struct object;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &object).ok()) << line;
    objects.push_back(object);
  }
  ASSERT_EQ(objects.size(), 6u);
  EXPECT_NEAR(objects[0].fields().at("peak_share").number_value(), gflops / 180, 1e-12);
  EXPECT_EQ(objects[0].fields().at("peak_gflops").number_value(), 180);
  EXPECT_EQ(objects[1].fields().at("peak_share").kind_case(), google::protobuf::Value::kNullValue);
  EXPECT_NEAR(objects[1].fields().at("gflops").number_value(), gflops, 1e-12 * gflops);
  EXPECT_EQ(objects[5].fields().at("gflops").kind_case(), google::protobuf::Value::kNullValue);
}

// Only a positive peak measured at the thread count counts; a share needs positive
// FLOPs, runtime and peak.
TEST(StoreExport, ThroughputNeedsAMeasuredPeakAtTheThreadCount) {
  HostFingerprint host;
  (*host.mutable_peak_gflops())[1] = 42;
  (*host.mutable_peak_gflops())[2] = 0;
  (*host.mutable_peak_gflops())[3] = std::nan("");
  EXPECT_EQ(PeakGflops(host, 1), 42);
  EXPECT_FALSE(PeakGflops(host, 2));
  EXPECT_FALSE(PeakGflops(host, 3));
  EXPECT_FALSE(PeakGflops(host, 8));
  EXPECT_FALSE(PeakGflops(HostFingerprint(), 1));
  MeasurementSettings settings;
  EXPECT_EQ(MeasuredThreads(settings), 1);
  settings.set_threads(6);
  EXPECT_EQ(MeasuredThreads(settings), 6);
  const Throughput t = ThroughputOf({4e9, 0}, 0.5, 16, std::nullopt);
  ASSERT_TRUE(t.gflops && t.peak_share);
  EXPECT_DOUBLE_EQ(*t.gflops, 8);
  EXPECT_DOUBLE_EQ(*t.peak_share, 0.5);
  EXPECT_FALSE(t.gbps) << "no bytes";
  EXPECT_FALSE(ThroughputOf({4e9, 0}, 0.5, std::nullopt, 16).peak_share);
  EXPECT_FALSE(ThroughputOf({4e9, 0}, 0.5, 0, 16).peak_share);
  EXPECT_FALSE(ThroughputOf({0, 0}, 0.5, 16, 16).gflops);
  EXPECT_FALSE(ThroughputOf({4e9, 0}, 0, 16, 16).gflops);
  EXPECT_FALSE(ThroughputOf({4e9, 0}, std::nan(""), 16, 16).peak_share);
}

// The bandwidth roofline as the peak's: a positive bandwidth measured at the thread
// count, and GB/s from the pipeline's bytes, independent of its FLOPs.
TEST(StoreExport, GigabytesPerSecondNeedAMeasuredBandwidthAtTheThreadCount) {
  HostFingerprint host;
  (*host.mutable_bandwidth_gbps())[2] = 40;
  (*host.mutable_bandwidth_gbps())[1] = -1;
  EXPECT_EQ(BandwidthGbps(host, 2), 40);
  EXPECT_FALSE(BandwidthGbps(host, 1));
  EXPECT_FALSE(BandwidthGbps(host, 4));
  const Throughput t = ThroughputOf({0, 1e7}, 1e-3, 16, 40);
  EXPECT_FALSE(t.gflops) << "no FLOPs";
  ASSERT_TRUE(t.gbps && t.bandwidth_share && t.bandwidth_gbps);
  EXPECT_DOUBLE_EQ(*t.gbps, 10);
  EXPECT_DOUBLE_EQ(*t.bandwidth_gbps, 40);
  EXPECT_DOUBLE_EQ(*t.bandwidth_share, 0.25);
  EXPECT_FALSE(ThroughputOf({0, 1e7}, 1e-3, 16, std::nullopt).bandwidth_share);
  Measurement m;
  *m.mutable_host() = host;
  m.mutable_settings()->set_threads(2);
  m.set_status(OK);
  m.mutable_stats()->set_median_seconds(1e-3);
  ASSERT_TRUE(MeasurementThroughput(m, {0, 2e7}).bandwidth_share);
  EXPECT_DOUBLE_EQ(*MeasurementThroughput(m, {0, 2e7}).bandwidth_share, 0.5);
  m.set_status(CRASH);
  EXPECT_FALSE(MeasurementThroughput(m, {0, 2e7}).gbps) << "a failed run has no throughput";
}

// farmctl writes the rows it reads from the coordinator page by page with the same
// pieces: header and rows written one by one give the export's text exactly.
TEST(StoreExport, RowByRowWritingMatchesTheExport) {
  ExportFixture f;
  for (const ExportFormat format : {ExportFormat::kCsv, ExportFormat::kJsonLines}) {
    std::ostringstream whole, pieces;
    ASSERT_TRUE(ExportMeasurements(*f.store, "c1", format, whole).ok());
    WriteExportHeader(format, pieces);
    ASSERT_TRUE(f.store
                    ->ScanMeasurements(
                        "c1", 0,
                        [&](const StoredMeasurement& stored) {
                          EXPECT_TRUE(WriteExportRow(stored, PipelineWork{}, format, pieces).ok());
                          return true;
                        })
                    .ok());
    EXPECT_EQ(pieces.str(), whole.str());
    EXPECT_FALSE(whole.str().empty());
  }
  std::ostringstream header;
  WriteExportHeader(ExportFormat::kJsonLines, header);
  EXPECT_EQ(header.str(), "");
}

}  // namespace
}  // namespace schedfarm
