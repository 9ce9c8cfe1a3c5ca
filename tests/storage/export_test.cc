// CSV and JSON-lines export of a campaign's measurements: read back with an RFC 4180
// reader and protobuf's JSON parser, every column checked, the schedule round-tripped;
// the header and row writers alone give the same text.
#include "storage/export.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "test_records.h"

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
  EXPECT_EQ(rows[2][24], f.failed.error());
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

// farmctl writes the rows it reads from the coordinator page by page with the same
// pieces: header and rows written one by one give the export's text exactly.
TEST(StoreExport, RowByRowWritingMatchesTheExport) {
  ExportFixture f;
  for (const ExportFormat format : {ExportFormat::kCsv, ExportFormat::kJsonLines}) {
    std::ostringstream whole, pieces;
    ASSERT_TRUE(ExportMeasurements(*f.store, "c1", format, whole).ok());
    WriteExportHeader(format, pieces);
    ASSERT_TRUE(f.store
                    ->ScanMeasurements("c1", 0,
                                       [&](const StoredMeasurement& stored) {
                                         EXPECT_TRUE(WriteExportRow(stored, format, pieces).ok());
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
