// Recorded datasets: the file round-trips, its provenance is kept, and every bad file
// (missing, not a dataset, another format version, truncated, corrupt, another host,
// times scaled for a test) is refused with an error naming the file and what is wrong.
#include "dataset/dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "common/files.h"
#include "learner/features.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "scheduler/schedule_space.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/synthetic_dataset.h"

namespace schedfarm {
namespace {

using testing_support::SyntheticDataset;

TEST(Dataset, RoundTripsWithItsProvenance) {
  ScratchDir dir;
  const Dataset dataset = SyntheticDataset(3, 4);
  ASSERT_EQ(dataset.pipelines_size(), 3);
  ASSERT_EQ(dataset.measurements_size(), 13);  // 3 x 4, one schedule twice
  const std::string path = dir.Sub("d.sfds");
  ASSERT_TRUE(WriteDataset(path, dataset).ok());
  StatusOr<LoadedDataset> loaded = ReadDataset(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->data.SerializeAsString(), dataset.SerializeAsString());
  EXPECT_EQ(loaded->id, DatasetId(ReadFileBytes(path).value()));
  EXPECT_EQ(loaded->id.size(), 32u);
  EXPECT_EQ(loaded->data.host().cpu_model(), "Test CPU 9000");
  EXPECT_TRUE(loaded->data.host().worker_id().empty());
  ASSERT_EQ(loaded->data.parts_size(), 1);
  EXPECT_EQ(loaded->data.parts(0).yaml_source(), "name: synthetic\n");
  EXPECT_EQ(loaded->data.parts(0).measurements(), 13);
  EXPECT_EQ(loaded->data.parts(0).first_unix_ms(), 1700000000000);
  EXPECT_EQ(loaded->data.parts(0).last_unix_ms(), 1700000000012);

  const std::string text = DescribeDataset(*loaded);
  EXPECT_NE(text.find("3 pipelines, 12 distinct schedules (1 measured more than once), 13 "
                      "measurements: OK 13"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("campaign synthetic (synthetic-00000000): 13 measurements"),
            std::string::npos)
      << text;
  EXPECT_EQ(MeasurementsByKey(loaded->data).size(), 12u);
}

TEST(Dataset, CompressesWell) {
  ScratchDir dir;
  const Dataset dataset = SyntheticDataset(4, 10);
  ASSERT_TRUE(WriteDataset(dir.Sub("d.sfds"), dataset).ok());
  const auto bytes = std::filesystem::file_size(dir.Sub("d.sfds"));
  EXPECT_LT(bytes * 3, dataset.ByteSizeLong()) << bytes << " of " << dataset.ByteSizeLong();
}

class BadDataset : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteDataset(path_, SyntheticDataset(2, 3)).ok());
    bytes_ = ReadFileBytes(path_).value();
  }
  std::string ErrorOf(const std::string& bytes) {
    EXPECT_TRUE(WriteFileAtomically(path_, bytes).ok());
    StatusOr<LoadedDataset> loaded = ReadDataset(path_);
    EXPECT_FALSE(loaded.ok());
    const std::string message = loaded.ok() ? "" : loaded.status().message();
    EXPECT_NE(message.find(path_), std::string::npos) << message;
    return message;
  }
  ScratchDir dir_;
  const std::string path_ = dir_.Sub("bad.sfds");
  std::string bytes_;
};

TEST_F(BadDataset, MissingFile) {
  StatusOr<LoadedDataset> loaded = ReadDataset(dir_.Sub("none.sfds"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("none.sfds': cannot open"), std::string::npos)
      << loaded.status().message();
}

TEST_F(BadDataset, NotADataset) {
  EXPECT_NE(ErrorOf("name: a campaign\n").find("not a schedfarm dataset"), std::string::npos);
}

TEST_F(BadDataset, AnotherFormatVersion) {
  std::string other = bytes_;
  other[4] = 7;
  EXPECT_NE(ErrorOf(other).find("format version 7, this build reads version 1"), std::string::npos);
}

TEST_F(BadDataset, Truncated) {
  EXPECT_NE(ErrorOf(bytes_.substr(0, bytes_.size() - 10)).find("truncated or corrupt"),
            std::string::npos);
  EXPECT_NE(ErrorOf(bytes_.substr(0, 6)).find("not a schedfarm dataset"), std::string::npos);
}

TEST_F(BadDataset, CorruptByte) {
  std::string flipped = bytes_;
  flipped[bytes_.size() / 2] ^= 0x5a;
  EXPECT_NE(ErrorOf(flipped).find("corrupt"), std::string::npos);
}

TEST(DatasetParts, RefuseAnotherKindOfHostNamingTheLease) {
  Dataset dataset = SyntheticDataset(1, 2);
  Campaign second;
  second.set_id("second-1");
  second.set_name("second");
  Measurement elsewhere = dataset.measurements(0);
  elsewhere.mutable_host()->set_cpu_model("Other CPU");
  elsewhere.set_lease_id("lease-other");
  const std::vector<PipelineSpec> specs(dataset.pipelines().begin(), dataset.pipelines().end());
  const Status added = AddDatasetPart(second, specs, {elsewhere}, 1, &dataset);
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.message().find("lease lease-other"), std::string::npos) << added.message();
  EXPECT_NE(added.message().find("cpu_model 'Other CPU' against 'Test CPU 9000'"),
            std::string::npos)
      << added.message();

  // A file edited to mix hosts is refused when read.
  ScratchDir dir;
  Dataset mixed = SyntheticDataset(1, 2);
  *mixed.add_measurements() = elsewhere;
  const Status written = WriteDataset(dir.Sub("m.sfds"), mixed);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("another kind of host"), std::string::npos) << written.message();
}

// A worker that scaled its times for a test (farm-worker --test-time-scale) says so in
// its fingerprint: its times never enter a dataset.
TEST(DatasetParts, RefuseTimesScaledForATest) {
  Dataset dataset = SyntheticDataset(1, 2);
  Campaign second;
  second.set_id("second-1");
  Measurement scaled = dataset.measurements(0);
  scaled.mutable_host()->set_test_time_scale(0.5);
  scaled.mutable_host()->set_worker_id("liar");
  scaled.set_lease_id("lease-scaled");
  const std::vector<PipelineSpec> specs(dataset.pipelines().begin(), dataset.pipelines().end());
  const Status added = AddDatasetPart(second, specs, {scaled}, 1, &dataset);
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.message().find("lease lease-scaled was measured on worker liar, which "
                                 "multiplied its times by 0.5 for a test"),
            std::string::npos)
      << added.message();
}

TEST(DatasetParts, RefuseACampaignTwiceAndSkipCoordinatorMadeResults) {
  Dataset dataset = SyntheticDataset(1, 2);
  Campaign campaign;
  campaign.set_id("synthetic-00000000");
  const Status again = AddDatasetPart(campaign, {}, {}, 1, &dataset);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find("is in the dataset already"), std::string::npos);

  Campaign other;
  other.set_id("other-1");
  Measurement lost;  // a lost worker's lease, recorded by the coordinator without a host
  lost.set_status(WORKER_LOST);
  *lost.mutable_candidate() = dataset.measurements(0).candidate();
  const int before = dataset.measurements_size();
  ASSERT_TRUE(AddDatasetPart(other, {}, {lost, dataset.measurements(1)}, 1, &dataset).ok());
  EXPECT_EQ(dataset.measurements_size(), before + 1);
  EXPECT_EQ(dataset.parts(1).measurements(), 1);
}

// A file's source keeps its folder and name, never the packing machine's path.
TEST(DatasetParts, KeepPipelineSourcesPortable) {
  EXPECT_EQ(PortableSource("task 3 of onnx:/home/someone/nets/resnet18/model.onnx"),
            "task 3 of onnx:resnet18/model.onnx");
  EXPECT_EQ(PortableSource("yaml:/srv/pipelines/conv.yaml"), "yaml:pipelines/conv.yaml");
  EXPECT_EQ(PortableSource("onnx:model.onnx"), "onnx:model.onnx");
  EXPECT_EQ(PortableSource("random:19"), "random:19");
  EXPECT_EQ(PortableSource("zoo:vgg_block"), "zoo:vgg_block");

  Dataset dataset = SyntheticDataset(1, 2);
  Campaign other;
  other.set_id("other-1");
  RandomPipelineOptions options;
  options.max_ops = 4;
  PipelineSpec spec = RandomPipeline(42, options).value();
  spec.set_source("task 0 of onnx:/var/tmp/export/net/model.onnx");
  ASSERT_TRUE(AddDatasetPart(other, {spec}, {}, 1, &dataset).ok());
  EXPECT_EQ(dataset.pipelines(dataset.pipelines_size() - 1).source(),
            "task 0 of onnx:net/model.onnx");
}

// The learner featurizes every OK measurement of the repository's datasets, including
// schedules of spaces before a rule was added (ScheduleSpace::CheckMeasured): a replay
// of them trains on all of them. No pipeline source holds a path of a machine.
TEST(RepositoryDatasets, EveryMeasuredScheduleIsFeaturized) {
  const std::filesystem::path dir = std::filesystem::path(SCHEDFARM_SOURCE_DIR) / "data/datasets";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".sfds") continue;
    ++files;
    StatusOr<LoadedDataset> dataset = ReadDataset(entry.path().string());
    ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
    for (const PipelineSpec& spec : dataset->data.pipelines()) {
      EXPECT_EQ(spec.source(), PortableSource(spec.source()))
          << entry.path().filename() << ": a path of the machine that packed it";
    }
    std::map<std::string, std::unique_ptr<PipelineGraph>> graphs;
    std::map<std::string, std::unique_ptr<ScheduleSpace>> spaces;
    for (size_t p = 0; p < dataset->pipeline_ids.size(); ++p) {
      StatusOr<PipelineGraph> graph = PipelineGraph::Build(dataset->data.pipelines(p));
      ASSERT_TRUE(graph.ok()) << graph.status().ToString();
      const std::string& id = dataset->pipeline_ids[p];
      graphs[id] = std::make_unique<PipelineGraph>(std::move(*graph));
      spaces[id] = std::make_unique<ScheduleSpace>(*graphs[id]);
    }
    int featurized = 0;
    PipelineFeatures features;
    for (const Measurement& m : dataset->data.measurements()) {
      if (m.status() != OK || !m.candidate().has_schedule()) continue;
      const Featurizer featurizer(*spaces.at(m.candidate().pipeline_id()));
      const Status status = featurizer.Featurize(m.candidate().schedule(), &features);
      EXPECT_TRUE(status.ok()) << entry.path() << ": " << status.ToString();
      ++featurized;
    }
    std::printf("%s: %d OK measurements featurized\n", entry.path().filename().c_str(), featurized);
    EXPECT_GT(featurized, 0);
  }
  EXPECT_GT(files, 0) << "no dataset in " << dir;
}

}  // namespace
}  // namespace schedfarm
