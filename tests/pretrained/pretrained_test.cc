// The pretrained models' file and resolution: a model written is read back whole; a
// file that is corrupt, truncated, of another kind or version is refused naming the
// file; a model of another kind, feature schema or host kind is refused naming both
// sides; `pretrained` finds the model of its kind for the host kind or says what there
// is; a name that does not exist lists those that do.
#include "pretrained/pretrained.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/files.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

HostFingerprint Host(const std::string& cpu) {
  HostFingerprint host;
  host.set_cpu_model(cpu);
  host.set_cores(2);
  host.set_halide_target("x86-64-linux-avx512");
  host.add_isa_flags("avx512f");
  return host;
}

PretrainedModel Model_(const std::string& kind, const HostFingerprint& host, int schema = 7) {
  PretrainedModel model;
  model.set_name(PretrainedName(kind, host));
  *model.mutable_host() = host;
  model.mutable_model()->set_kind(kind);
  model.mutable_model()->set_version(model.name() + "-1");
  model.mutable_model()->set_feature_schema_version(schema);
  model.mutable_model()->set_weights(std::string(1000, 'w'));
  (*model.mutable_model()->mutable_metrics())["pairwise_accuracy"] = 0.75;
  PretrainedDataset* dataset = model.add_datasets();
  dataset->set_id("abc");
  dataset->set_file("dataset-x.sfds");
  dataset->set_measurements(12);
  return model;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PretrainedTest, NamesAreKindAndHostKind) {
  EXPECT_EQ(PretrainedName("gbt", Host("AMD EPYC")), "gbt-amd-epyc");
  EXPECT_EQ(PretrainedName("sage", Host("Intel(R) Xeon(R) Processor")),
            "sage-intel-r-xeon-r-processor");
  EXPECT_TRUE(IsPretrainedSource("pretrained"));
  EXPECT_TRUE(IsPretrainedSource("pretrained:gbt-amd-epyc"));
  EXPECT_FALSE(IsPretrainedSource("dataset-1"));
  EXPECT_EQ(PretrainedNameOf("pretrained:gbt-amd-epyc"), "gbt-amd-epyc");
  EXPECT_EQ(PretrainedNameOf("pretrained"), "");
}

TEST(PretrainedTest, AWrittenModelReadsBackWhole) {
  ScratchDir dir;
  const PretrainedModel model = Model_("gbt", Host("AMD EPYC"));
  const std::string path = PretrainedPath(dir.path(), model.name());
  ASSERT_TRUE(WritePretrained(path, model).ok());
  StatusOr<PretrainedModel> read = ReadPretrained(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->SerializeAsString(), model.SerializeAsString());
  EXPECT_EQ(PretrainedNames(dir.path()), std::vector<std::string>{"gbt-amd-epyc"});
  const std::string shown = DescribePretrained(*read);
  EXPECT_TRUE(Contains(shown, "kind gbt")) << shown;
  EXPECT_TRUE(Contains(shown, "dataset-x.sfds")) << shown;
  EXPECT_TRUE(Contains(shown, "pairwise_accuracy 0.75")) << shown;
}

TEST(PretrainedTest, ABrokenFileIsRefusedNamingIt) {
  ScratchDir dir;
  const std::string path = PretrainedPath(dir.path(), "gbt-amd-epyc");
  ASSERT_TRUE(WritePretrained(path, Model_("gbt", Host("AMD EPYC"))).ok());
  StatusOr<std::string> bytes = ReadFileBytes(path);
  ASSERT_TRUE(bytes.ok());
  struct Case {
    std::string what;
    std::string bytes;
    std::string message;
  };
  std::string flipped = *bytes;
  flipped[flipped.size() / 2] ^= 0x5a;
  std::string other_version = *bytes;
  other_version[4] = 9;
  const Case cases[] = {
      {"truncated", bytes->substr(0, bytes->size() - 7), "truncated or corrupt"},
      {"a flipped byte", flipped, "corrupt"},
      {"another version", other_version, "format version 9"},
      {"a dataset", "SFDS" + bytes->substr(4), "not a schedfarm pretrained model"},
      {"empty", "", "not a schedfarm pretrained model"},
  };
  for (const Case& c : cases) {
    const std::string broken = dir.Sub("broken.sfpm");
    ASSERT_TRUE(WriteFileAtomically(broken, c.bytes).ok());
    StatusOr<PretrainedModel> read = ReadPretrained(broken);
    ASSERT_FALSE(read.ok()) << c.what;
    EXPECT_TRUE(Contains(read.status().message(), broken))
        << c.what << ": " << read.status().message();
    EXPECT_TRUE(Contains(read.status().message(), c.message))
        << c.what << ": " << read.status().message();
  }
  StatusOr<PretrainedModel> missing = ReadPretrained(dir.Sub("none.sfpm"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), dir.Sub("none.sfpm")));
}

TEST(PretrainedTest, AModelOfAnotherKindSchemaOrHostIsRefusedNamingBoth) {
  const PretrainedModel model = Model_("gbt", Host("AMD EPYC"), 7);
  EXPECT_TRUE(CheckPretrainedFits(model, "gbt", 7, Host("AMD EPYC")).ok());
  const Status kind = CheckPretrainedFits(model, "sage", 7, Host("AMD EPYC"));
  EXPECT_TRUE(Contains(kind.message(), "a gbt model")) << kind.message();
  EXPECT_TRUE(Contains(kind.message(), "scores with sage")) << kind.message();
  const Status schema = CheckPretrainedFits(model, "gbt", 8, Host("AMD EPYC"));
  EXPECT_TRUE(Contains(schema.message(), "feature schema 7")) << schema.message();
  EXPECT_TRUE(Contains(schema.message(), "schema 8")) << schema.message();
  const Status host = CheckPretrainedFits(model, "gbt", 7, Host("Intel Xeon"));
  EXPECT_TRUE(Contains(host.message(), "AMD EPYC")) << host.message();
  EXPECT_TRUE(Contains(host.message(), "Intel Xeon")) << host.message();
  HostFingerprint fewer_cores = Host("AMD EPYC");
  fewer_cores.set_cores(64);
  const Status cores = CheckPretrainedFits(model, "gbt", 7, fewer_cores);
  EXPECT_TRUE(Contains(cores.message(), "cores '2' against '64'")) << cores.message();
}

TEST(PretrainedTest, ResolutionFindsTheModelOfTheHostKindOrSaysWhatThereIs) {
  ScratchDir dir;
  const PretrainedModel amd = Model_("gbt", Host("AMD EPYC"));
  ASSERT_TRUE(WritePretrained(PretrainedPath(dir.path(), amd.name()), amd).ok());
  bool found = false;
  std::string why;
  StatusOr<PretrainedModel> model =
      ResolvePretrained(dir.path(), "pretrained", "gbt", 7, Host("AMD EPYC"), &found, &why);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_TRUE(found);
  EXPECT_EQ(model->name(), "gbt-amd-epyc");
  // Another host kind, another kind: none, saying what there is.
  model = ResolvePretrained(dir.path(), "pretrained", "gbt", 7, Host("Intel Xeon"), &found, &why);
  ASSERT_TRUE(model.ok());
  EXPECT_FALSE(found);
  EXPECT_TRUE(Contains(why, "gbt-intel-xeon")) << why;
  EXPECT_TRUE(Contains(why, "there are: gbt-amd-epyc")) << why;
  model = ResolvePretrained(dir.path(), "pretrained", "sage", 7, Host("AMD EPYC"), &found, &why);
  EXPECT_FALSE(found);
  // The right name with the wrong schema: none, and why.
  model = ResolvePretrained(dir.path(), "pretrained", "gbt", 8, Host("AMD EPYC"), &found, &why);
  EXPECT_FALSE(found);
  EXPECT_TRUE(Contains(why, "feature schema 7")) << why;
  // Named: it must exist and fit.
  model = ResolvePretrained(dir.path(), "pretrained:gbt-amd-epyc", "gbt", 7, Host("Intel Xeon"),
                            &found, &why);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(Contains(model.status().message(), "Intel Xeon")) << model.status().message();
  model =
      ResolvePretrained(dir.path(), "pretrained:nope", "gbt", 7, Host("AMD EPYC"), &found, &why);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(Contains(model.status().message(), "no pretrained model 'nope'"));
  EXPECT_TRUE(Contains(model.status().message(), "there are: gbt-amd-epyc"));
  const Status none = CheckPretrainedExists(dir.Sub("empty"), "x");
  EXPECT_TRUE(Contains(none.message(), "it holds none")) << none.message();
}

}  // namespace
}  // namespace schedfarm
